"""Bringing a project's tables to the memory its events converge on, through ordinary local events.

The difference between the tables and :func:`~.order.converged_state` is written
with the graph's own operations (deleting what the order removed, creating what
it added, an entity whose type the order settled otherwise made anew), so every
change is a local ledger event like any other and ``verify`` replays the file as
before. Those events are echoes of foreign ones: they are listed in
``memory_sync_derived`` and leave the machine opaque, never as this machine's own.
"""

import sqlite3
from collections.abc import Iterator
from typing import Any

from ..core.ledger import Caller
from ..graph import mutations
from ..history.compare import live
from ..history.replay import Project
from .order import converged_state

CHUNK = 500  # items per call of a graph operation (under its cap of 1,000)


def chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]


def converge(conn: sqlite3.Connection, caller: Caller, project: str) -> int:
    """
    Write the difference between ``project``'s tables and its converged state, inside
    the caller's write transaction.

    :return: how many local events that took
    """
    before = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
    target = converged_state(conn, project)
    current = live(conn, [project], governed=False)[0].project(project)
    write_entities(conn, caller, project, current, target)
    write_relations(conn, caller, project, target)
    cursor = conn.execute("INSERT INTO memory_sync_derived (event_id) SELECT id FROM events WHERE id > ?", [before])
    conn.execute("DELETE FROM memory_sync_pending WHERE project = ?", [project])
    return cursor.rowcount


def write_entities(conn: sqlite3.Connection, caller: Caller, project: str, current: Project, target: Project) -> None:
    "Entities and observations: gone ones deleted, new ones created, the rest given and relieved of observations."
    remade = [name for name, entity in current.entities.items()
              if name not in target.entities or target.entities[name].entity_type != entity.entity_type]
    for names in chunks(remade):
        mutations.delete_entities(conn, caller, project, names)
    fresh = [entity.as_official() for name, entity in target.entities.items()
             if name not in current.entities or name in remade]
    for entities in chunks(fresh):
        mutations.create_entities(conn, caller, project, entities)
    added, removed = [], []
    for name, entity in current.entities.items():
        if name in remade:
            continue
        have, want = entity.contents(), target.entities[name].contents()
        more = [content for content in want if content not in have]
        fewer = [content for content in have if content not in want]
        if more:
            added.append({"entityName": name, "contents": more})
        if fewer:
            removed.append({"entityName": name, "observations": fewer})
    for items in chunks(removed):
        mutations.delete_observations(conn, caller, project, items)
    for items in chunks(added):
        mutations.add_observations(conn, caller, project, items)


def write_relations(conn: sqlite3.Connection, caller: Caller, project: str, target: Project) -> None:
    "Relations, read again after the entities' changes (deleting an entity deletes its relations)."
    have = {tuple(row) for row in conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = ?", [project]
    )}
    gone = [{"from": f, "to": t, "relationType": r} for f, t, r in have if (f, t, r) not in target.relations]
    new = [{"from": f, "to": t, "relationType": r} for f, t, r in target.relations if (f, t, r) not in have]
    for relations in chunks(gone):
        mutations.delete_relations(conn, caller, project, relations)
    for relations in chunks(new):
        mutations.create_relations(conn, caller, project, relations)
