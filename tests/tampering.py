"""Editing a memory file behind the core's back, as a forger would: plain sqlite3, protections dropped and put back."""

import contextlib
import pathlib
import sqlite3
from typing import Any

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.core.ledger import EVENT_COLUMNS, GENESIS_HASH, digest, event_hash
from datasette_memory.history.file_check import verify_file
from datasette_memory.sqltools import SqlTools

LEXICAL = Config(search=SearchSettings(semantic=False))
NEWEST = 5  # rewind() removes this many events from the end


def raw(path: pathlib.Path) -> sqlite3.Connection:
    "A plain sqlite3 connection, as someone editing the file behind the core's back would open it."
    return sqlite3.connect(path, isolation_level=None)


def one(conn: sqlite3.Connection, sql: str, *params: Any) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None, sql
    return row[0]


def drop(conn: sqlite3.Connection, *triggers: str) -> None:
    for trigger in triggers:
        conn.execute(f"DROP TRIGGER {trigger}")


@contextlib.contextmanager
def triggers_dropped(conn: sqlite3.Connection, *triggers: str):
    "Drop ``triggers`` for the block and put them back after it, as a careful forger would."
    saved = [one(conn, "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", name) for name in triggers]
    drop(conn, *triggers)
    yield
    for sql in saved:
        conn.execute(sql)


def rehash_from(conn: sqlite3.Connection, first: int, **changes: Any) -> None:
    "Change event ``first`` (values as JSON text), then recompute every hash from it to the head, as a forger would."
    with triggers_dropped(conn, "events_refuse_update"):
        prev_hash = conn.execute("SELECT hash FROM events WHERE id = ?", [first - 1]).fetchone()[0] if first > 1 else GENESIS_HASH
        events = [dict(zip(EVENT_COLUMNS, values)) for values in conn.execute(
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE id >= ? ORDER BY id", [first]
        )]
        for event in events:
            if event["id"] == first:
                event.update(changes)
                event["old_digest"], event["new_digest"] = digest(event["old"]), digest(event["new"])
            event["prev_hash"] = prev_hash
            event["hash"] = prev_hash = event_hash(event)
            columns = [c for c in EVENT_COLUMNS if c != "id"]
            conn.execute(f"UPDATE events SET {', '.join(f'{c} = ?' for c in columns)} WHERE id = ?",
                         [event[c] for c in columns] + [event["id"]])


def entity(name: str, *observations: str) -> dict:
    return {"name": name, "entityType": "service", "observations": list(observations)}


def build(path: pathlib.Path) -> None:
    """
    A file with an entity and its observation (events 1 and 2), a checkpoint,
    then one entity per event, SQL audit rows, and a clean ``verify`` recorded.
    """
    memory = Memory.open(path, project="p", actor="claude", config=LEXICAL)
    memory.create_entities([entity("svc-a")])
    memory.add_observations([{"entityName": "svc-a", "contents": ["runs on port 80"]}])
    memory.checkpoint("svc-a is up")
    for i in range(8):
        memory.create_entities([entity(f"svc-{i}", f"obs {i}")])
    memory.close()
    tools = SqlTools(path, project="p", actor="claude")
    for i in range(3):
        tools.read_query(f"SELECT {i}")
    assert verify_file(path)["ok"], "the file starts clean, and its clean check is recorded"
    assert pathlib.Path(f"{path}.verified.json").exists()


def rewind(path: pathlib.Path) -> None:
    "Delete the newest events and every row they made, triggers dropped and put back; the witness is kept."
    conn = raw(path)
    head = one(conn, "SELECT max(id) FROM events")
    names = [row[0] for row in conn.execute("SELECT target FROM events WHERE id > ?", [head - NEWEST])]
    with triggers_dropped(conn, "events_refuse_delete"):
        for name in names:
            conn.execute("DELETE FROM observations WHERE entity_id = (SELECT id FROM entities WHERE name = ?)", [name])
            conn.execute("DELETE FROM entities WHERE name = ?", [name])
        conn.execute("DELETE FROM memory_event_names WHERE event_id > ?", [head - NEWEST])
        conn.execute("DELETE FROM events WHERE id > ?", [head - NEWEST])
    conn.close()
