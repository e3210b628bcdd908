"""The events that shaped some entities, found through ``memory_event_names`` instead of the whole ledger.

An entity's state depends on the events naming it, and, through renames and
merges, on the events of the names it had and of the entities merged into it
(a rename of another entity moves that entity's relations, so it is followed too). :func:`events_shaping` follows renames and merges until no new
name turns up, so replaying just those events rebuilds the entities exactly.
"""

import json
import sqlite3
from collections.abc import Iterable

from .replay import GRAPH_KINDS

RESHAPING_KINDS = ("rename_entity", "merge_entity")


def events_shaping(conn: sqlite3.Connection, project: str, names: Iterable[str], upto: int | None = None) -> tuple[set[int], set[str]]:
    """
    The graph events of ``project`` (up to event ``upto``) that replay needs
    to rebuild the entities ``names`` and the relations touching them.

    :return: ``(event ids, every name followed)``
    """
    names = set(names)
    found: set[int] = set()
    frontier = set(names)
    limit = upto if upto is not None else -1
    while frontier:
        rows = conn.execute(
            "SELECT n.event_id, e.kind FROM memory_event_names n JOIN events e ON e.id = n.event_id "
            "WHERE n.project = ? AND n.name IN (SELECT value FROM json_each(?)) AND (? = -1 OR n.event_id <= ?) "
            "AND e.kind IN (SELECT value FROM json_each(?))",
            [project, json.dumps(sorted(frontier)), limit, limit, json.dumps(GRAPH_KINDS)],
        ).fetchall()
        new_ids = {id for id, _ in rows if id not in found}
        found |= new_ids
        reshaping = [id for id, kind in rows if kind in RESHAPING_KINDS and id in new_ids]
        frontier = set()
        if reshaping:
            more = set()
            for row in conn.execute(
                "SELECT target, json_extract(new, '$.name'), json_extract(new, '$.into') FROM events "
                "WHERE id IN (SELECT value FROM json_each(?)) AND json_valid(new)",
                [json.dumps(reshaping)],
            ):
                more |= {name for name in row if isinstance(name, str)}
            frontier = more - names
            names |= more
    return found, names


def names_touched_since(conn: sqlite3.Connection, after: int) -> dict[str, set[str]]:
    "``{project: entity names}`` named by graph events after event ``after``."
    touched: dict[str, set[str]] = {}
    for project, name in conn.execute(
        "SELECT n.project, n.name FROM memory_event_names n JOIN events e ON e.id = n.event_id "
        "WHERE n.event_id > ? AND e.kind IN (SELECT value FROM json_each(?))",
        [after, json.dumps(GRAPH_KINDS)],
    ):
        touched.setdefault(project, set()).add(name)
    return touched


def governed_touched_since(conn: sqlite3.Connection, after: int) -> dict[str, set[str]]:
    "``{project: targets}`` (``claim:N``, ``fact:N``) changed by events after event ``after``."
    touched: dict[str, set[str]] = {}
    for project, target in conn.execute(
        "SELECT project, target FROM events WHERE id > ? AND (target LIKE 'claim:%' OR target LIKE 'fact:%')", [after]
    ):
        touched.setdefault(project, set()).add(target)
    return touched
