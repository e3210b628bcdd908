"""The official server's search: the whole query as one case-insensitive substring (of a name, type,
observation, or an old name a person renamed or merged away)."""

import json
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
    aliased = names_by_alias(conn, project, needle)
    if len(needle) >= 3:
        phrase = trigram_query(needle)
        # one UNION of ids, so the few hits are looked up by id ("+project": not by scanning the project)
        candidates = entities_where(
            conn,
            "id IN (SELECT rowid FROM entities_trigram WHERE entities_trigram MATCH ?1 UNION "
            "SELECT entity_id FROM observations WHERE id IN "
            "(SELECT rowid FROM observations_trigram WHERE observations_trigram MATCH ?1) UNION "
            "SELECT id FROM entities WHERE project = ?3 AND name IN (SELECT value FROM json_each(?2))) AND +project = ?3",
            [phrase, json.dumps(sorted(aliased)), project],
        )
    else:
        candidates = entities_where(conn, "project = ?", [project])
    entities = [e for e in candidates if contains(e, needle) or e["name"] in aliased]
    return {
        "entities": entities,
        "relations": relations_touching(conn, project, [e["name"] for e in entities]),
    }


# a query at least this long is looked for by a few of its trigrams (trigram_query)
COVER_FROM = 7


def trigram_query(needle: str) -> str:
    """
    The trigram index's query for rows that may contain ``needle``: for a short one the phrase
    of all its trigrams; for a longer one every third trigram and the last, near each other as
    they are in it (``NEAR``, within its length). A row holding the needle holds those, so no
    match is lost, and each candidate is checked exactly after; the index reads each trigram's
    list of rows, and the first trigrams of names a project shares (``svc-0``) have the longest,
    so a third of them costs about half as much.

    :param needle: the lower-cased query, three characters or more
    """
    if len(needle) < COVER_FROM:
        return quoted(needle)
    starts = [*range(0, len(needle) - 3, 3), len(needle) - 3]
    return "NEAR(" + " ".join(quoted(needle[i : i + 3]) for i in starts) + f", {len(needle) - 4})"


def quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def names_by_alias(conn: sqlite3.Connection, project: str, needle: str) -> set[str]:
    "The entities with an alias (an old name a person renamed or merged away) containing ``needle``, lower-cased."
    rows = conn.execute(
        "SELECT e.name FROM memory_aliases a JOIN entities e ON e.id = a.entity_id "
        "WHERE a.project = ? AND instr(lower(a.alias), ?) > 0",
        [project, needle],
    )
    return {name for (name,) in rows}


def contains(entity: dict[str, Any], needle: str) -> bool:
    "Whether ``needle`` (lower-cased) is inside the entity's name, type or an observation."
    texts = [entity["name"], entity["entityType"], *entity["observations"]]
    return any(needle in text.lower() for text in texts)
