"""``search_nodes``: the official tool's contract, ranked, with natural questions answered when nothing contains the query."""

import sqlite3
from typing import Any

from ..core.name_keys import name_key
from ..graph.reads import open_nodes
from ..graph.substring import names_by_alias, search_nodes as entities_containing
from .excerpts import entity_rows
from .memory_search import DEFAULT_LIMIT
from .name_matches import named_entities
from .ranking import DEFAULT_MIN_COVERAGE, find
from .settings import SearchSettings


def substring_rank(entity: dict[str, Any], needle: str, aliased: set[str], named: set[str]) -> tuple[bool, bool, bool, int]:
    "Where a substring match is: the query is its name (or an old name), in the name (or an old name), then the type, then how many observations."
    return (
        entity["name"] in named,
        needle in entity["name"].lower() or entity["name"] in aliased,
        needle in entity["entityType"].lower(),
        sum(needle in o.lower() for o in entity["observations"]),
    )


def exactly_named(conn: sqlite3.Connection, project: str, query: str) -> set[str]:
    "The names of the entities whose name, or a former name, is the query (by key: separators and case aside)."
    ids = [id for id, match in named_entities(conn, project, query, []).items() if match.level == 3]
    return {name for name, _ in entity_rows(conn, ids).values()} if name_key(query) else set()


def search_nodes(conn: sqlite3.Connection, project: str, query: object, settings: SearchSettings = SearchSettings()) -> dict[str, Any]:
    """
    The official tool's search, ranked: every entity containing the whole query
    (name matches first, then type, then by how many observations match); when
    nothing contains it, the best natural-language matches, or nothing.

    :param conn: an open connection
    :param project: the project scope
    :param query: the search text
    :param settings: whether the semantic arm runs, and its constants
    """
    found = entities_containing(conn, project, query)
    if found["entities"]:
        needle = str(query).lower()
        if needle:
            aliased = names_by_alias(conn, project, needle)
            named = exactly_named(conn, project, str(query))
            found["entities"].sort(key=lambda entity: substring_rank(entity, needle, aliased, named), reverse=True)
        return found
    matches = find(conn, project, str(query), DEFAULT_MIN_COVERAGE, settings).matches
    rows = entity_rows(conn, [c.id for c in matches[:DEFAULT_LIMIT]])
    names = [rows[c.id][0] for c in matches[:DEFAULT_LIMIT]]
    opened = open_nodes(conn, project, names)
    opened["entities"].sort(key=lambda entity: names.index(entity["name"]))
    return opened
