"""The official server's search: the whole query as one case-insensitive substring."""

import sqlite3
from typing import Any

from ..core.validation import check_text
from .reads import entities_where, relations_touching


def search_nodes(conn: sqlite3.Connection, project: str, query: Any) -> dict[str, list[Any]]:
    """
    The official server's search: entities whose name, type or any observation
    contains the whole query, case-insensitively, in creation order, with every
    relation touching them. A trigram index finds the candidates for queries of
    three or more characters; each is then checked exactly.
    """
    needle = check_text(query, "query", max_bytes=4096).lower()
    if len(needle) >= 3:
        phrase = '"' + needle.replace('"', '""') + '"'
        # "+project": look the few hits up by id rather than scan the project
        candidates = entities_where(
            conn,
            "id IN (SELECT rowid FROM entities_trigram WHERE entities_trigram MATCH ? UNION "
            "SELECT entity_id FROM observations WHERE id IN "
            "(SELECT rowid FROM observations_trigram WHERE observations_trigram MATCH ?)) AND +project = ?",
            [phrase, phrase, project],
        )
    else:
        candidates = entities_where(conn, "project = ?", [project])
    entities = [e for e in candidates if contains(e, needle)]
    return {
        "entities": entities,
        "relations": relations_touching(conn, project, [e["name"] for e in entities]),
    }


def contains(entity: dict[str, Any], needle: str) -> bool:
    "Whether ``needle`` (lower-cased) is inside the entity's name, type or an observation."
    texts = [entity["name"], entity["entityType"], *entity["observations"]]
    return any(needle in text.lower() for text in texts)
