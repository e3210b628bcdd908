"""Bringing a project's tables to the memory its events converge on, through ordinary local events.

The difference between the tables and :func:`~.order.converged_state` is written
with the graph's own operations (deleting what the order removed, creating what
it added, an entity whose type the order settled otherwise made anew), so every
change is a local ledger event like any other and ``verify`` replays the file as
before. Those events are echoes of foreign ones: they are listed in
``memory_sync_derived`` and leave the machine opaque, never as this machine's own.

Most syncs bring events newer than everything applied before. Then the tables
already hold the converged state of what came before, and only the names the new
events touch are read, the new events applied to them in order, and the
difference written: an incremental sync costs what it brings, not the project's
size. The tables also hold this machine's own new events, so that holds only
when they come before every new foreign event in the order. Each converge records what it covered (``memory_meta``,
``sync_converged:PROJECT``: the newest time among the events applied, the newest
own event and the newest arrival); new events older than that newest time, a
rename or merge among them, or a name that is an alias, and the whole project is
replayed instead.
"""

import copy
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from ..core.ledger import EVENT_COLUMNS, Caller
from ..core.log_heads import file_machine
from ..graph import mutations
from ..history.compare import live
from ..history.replay import Project
from .events import graph_kinds_sql
from .fact_sync import apply_facts
from .order import TolerantReplay, converged_state, order_key

CHUNK = 500  # items per call of a graph operation (under its cap of 1,000)
COLUMNS = [c for c in EVENT_COLUMNS if c != "id"]


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
    covered = coverage(conn, project)
    fresh = new_events(conn, project, covered)
    names = touched(fresh) if covered is not None else None
    if covered is not None and names is not None and names_are_plain(conn, project, names) \
            and all(e["ts"] > covered["ts"] for e in fresh) and own_first(conn, project, fresh):
        current = live(conn, [project], names=names, governed=False)[0].project(project)
        target = advanced(current, fresh, project)
    else:
        names = None
        current = live(conn, [project], governed=False)[0].project(project)
        target = converged_state(conn, project)
    write_entities(conn, caller, project, current, target)
    write_relations(conn, caller, project, target, names)
    apply_facts(conn, caller, project)
    cursor = conn.execute("INSERT INTO memory_sync_derived (event_id) SELECT id FROM events WHERE id > ?", [before])
    conn.execute("DELETE FROM memory_sync_pending WHERE project = ?", [project])
    record_coverage(conn, project, before, fresh, covered)
    return cursor.rowcount


def coverage(conn: sqlite3.Connection, project: str) -> dict[str, Any] | None:
    "What the last converge of ``project`` covered: ``{ts, own, received}``, or None."
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", [f"sync_converged:{project}"]).fetchone()
    return json.loads(row[0]) if row else None


def new_events(conn: sqlite3.Connection, project: str, covered: dict[str, Any] | None) -> list[dict[str, Any]]:
    "The graph events of ``project`` since the last converge: own ones (not echoes) and foreign ones that arrived since."
    if covered is None:
        return []
    own = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM events WHERE machine = ? AND project = ? AND id > ? AND kind IN ({graph_kinds_sql()}) "
        "AND id NOT IN (SELECT event_id FROM memory_sync_derived)",
        [file_machine(conn), project, covered["own"]],
    ).fetchall()
    foreign = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM memory_sync_events WHERE project = ? AND kind IN ({graph_kinds_sql()}) "
        "AND opaque = 0 AND received_at > ?",
        [project, covered["received"]],
    ).fetchall()
    return [dict(zip(COLUMNS, row)) for row in [*own, *foreign]]


def own_first(conn: sqlite3.Connection, project: str, fresh: list[dict[str, Any]]) -> bool:
    """
    Whether this machine's new events all come before the foreign ones in the total order. The
    tables already hold the own ones' changes: applying foreign events after them is right only
    then (a foreign creation made before an own one of the same name must come first, and set the type).
    """
    own = file_machine(conn)
    foreign = [e["ts"] for e in fresh if e["machine"] != own]
    if not foreign or all(e["machine"] != own for e in fresh):
        return True
    # the own events' times in the order: never earlier than any own event before them
    (latest,) = conn.execute(
        f"SELECT max(ts) FROM events WHERE machine = ? AND project = ? AND kind IN ({graph_kinds_sql()}) "
        "AND id NOT IN (SELECT event_id FROM memory_sync_derived)", [own, project]
    ).fetchone()
    return latest < min(foreign)


def touched(events: list[dict[str, Any]]) -> set[str] | None:
    "The entity names ``events`` touch, or None if one renames or merges (which moves names and relations)."
    names: set[str] = set()
    for event in events:
        if event["kind"] in ("rename_entity", "merge_entity"):
            return None
        if event["kind"] in ("create_relation", "delete_relation"):
            value = json.loads(event["new"] if event["kind"] == "create_relation" else event["old"])
            names |= {value["from"], value["to"]}
        else:
            names.add(event["target"])
    return names


def names_are_plain(conn: sqlite3.Connection, project: str, names: set[str]) -> bool:
    "Whether none of ``names`` is an alias (events naming one apply to the entity it now is)."
    return conn.execute(
        "SELECT 1 FROM memory_aliases WHERE project = ? AND alias IN (SELECT value FROM json_each(?)) LIMIT 1",
        [project, json.dumps(sorted(names), ensure_ascii=False)],
    ).fetchone() is None


def advanced(current: Project, events: list[dict[str, Any]], project: str) -> Project:
    "``current`` (the touched names as the tables hold them) with ``events`` applied in the total order."
    state = TolerantReplay()
    state.projects[project] = copy.deepcopy(current)
    for position, event in enumerate(order_key(events), 1):
        state.apply({**event, "id": position})
    return state.project(project)


def record_coverage(conn: sqlite3.Connection, project: str, before: int, fresh: list[dict[str, Any]],
                    covered: dict[str, Any] | None) -> None:
    "Remember what this converge covered: the newest time among the events applied, the newest own event, the newest arrival."
    newest_ts = conn.execute(
        f"SELECT max(ts) FROM (SELECT max(ts) AS ts FROM events WHERE project = ? AND id <= ? AND kind IN ({graph_kinds_sql()}) "
        "AND id NOT IN (SELECT event_id FROM memory_sync_derived) "
        f"UNION ALL SELECT max(ts) FROM memory_sync_events WHERE project = ? AND opaque = 0 AND kind IN ({graph_kinds_sql()}))",
        [project, before, project],
    ).fetchone()[0] if covered is None else max([covered["ts"], *(e["ts"] for e in fresh)])
    received = conn.execute("SELECT coalesce(max(received_at), '') FROM memory_sync_events").fetchone()[0]
    value = json.dumps({"ts": newest_ts or "", "own": before, "received": received})
    conn.execute("INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 [f"sync_converged:{project}", value])


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


def write_relations(conn: sqlite3.Connection, caller: Caller, project: str, target: Project, names: set[str] | None) -> None:
    "Relations (touching ``names`` only, if given), read again after the entities' changes (deleting an entity deletes its relations)."
    columns = "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = :project"
    if names is None:
        rows = conn.execute(columns, {"project": project})
    else:
        rows = conn.execute(f"{columns} AND from_entity IN (SELECT value FROM json_each(:names)) UNION "
                            f"{columns} AND to_entity IN (SELECT value FROM json_each(:names))",
                            {"project": project, "names": json.dumps(sorted(names), ensure_ascii=False)})
    have = {tuple(row) for row in rows}
    gone = [{"from": f, "to": t, "relationType": r} for f, t, r in have if (f, t, r) not in target.relations]
    new = [{"from": f, "to": t, "relationType": r} for f, t, r in target.relations if (f, t, r) not in have]
    for relations in chunks(gone):
        mutations.delete_relations(conn, caller, project, relations)
    for relations in chunks(new):
        mutations.create_relations(conn, caller, project, relations)
