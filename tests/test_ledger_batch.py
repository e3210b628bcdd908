"""A batch of events appended at once is the batch one ``append_event`` per change would have written.

Two copies of one file (so one machine id) take the same changes, one through
``append_events`` and one event at a time; every row of the ledger and of the
tables its triggers feed, the events returned, what ``memory_event`` hears and
what the witness records must be the same.
"""

import json
import sqlite3

import pytest

from datasette_memory import Memory
from datasette_memory.core import plugins, witness
from datasette_memory.core.database import connect, write_transaction
from datasette_memory.core.clock import now
from datasette_memory.core.ledger import (
    INSERT_EVENT, NEXT_EVENT, Caller, Change, append_event, append_events, canonical, digest, event_hash, verify_chain,
)

CHANGES = [
    Change("create_entity", "a/b", new={"name": "a/b", "entityType": "service", "observations": ["it's \"quoted\"", "ünïcode ✓"]},
           ts="2026-01-02T03:04:05.000001+00:00"),
    Change("add_observation", "a/b", new="x" * 5000, ts="2026-01-02T03:04:05.000002+00:00"),
    Change("create_relation", json.dumps(["a/b", "uses", "c"]), new={"from": "a/b", "to": "c", "relationType": "uses"},
           ts="2026-01-02T03:04:05.000003+00:00"),
    Change("delete_observation", "a/b", old="ünïcode ✓", ts="2026-01-02T03:04:05.000004+00:00"),
    Change("delete_relation", json.dumps(["a/b", "uses", "c"]), old={"from": "a/b", "to": "c", "relationType": "uses"},
           ts="2026-01-02T03:04:05.000005+00:00"),
    Change("delete_entity", "a/b", old={"name": "a/b", "entityType": "service", "observations": []},
           ts="2026-01-02T03:04:05.000006+00:00"),
]
# the ledger and every table an event's triggers write, each read whole in a fixed order
TABLES = {
    "events": "SELECT * FROM events ORDER BY id",
    "memory_event_names": "SELECT * FROM memory_event_names ORDER BY project, name, event_id",
    "memory_deleted_fts": "SELECT rowid, text FROM memory_deleted_fts ORDER BY rowid",
}


@pytest.fixture
def twins(tmp_path):
    "Two copies of one memory file with some history, so they share a machine id and a head."
    first = tmp_path / "batch.db"
    memory = Memory.open(first, actor="tester")
    memory.create_entities([{"name": f"e{i}", "entityType": "t", "observations": [f"o{i}"]} for i in range(3)])
    memory.close()
    second = tmp_path / "one-by-one.db"
    source, copy = sqlite3.connect(first), sqlite3.connect(second)
    source.backup(copy)  # the file as a reader sees it, the write-ahead log's pages included
    source.close()
    copy.close()
    return first, second


def rows(path, table):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(TABLES[table]).fetchall()
    finally:
        conn.close()


def appended_alone(conn, caller, project, change):
    "One event appended as ``append_event`` did before batches: the head read from the file, one INSERT, its bookkeeping."
    machine, clock, prev_hash = conn.execute(NEXT_EVENT).fetchone()
    old_text = None if change.old is None else canonical(change.old)
    new_text = None if change.new is None else canonical(change.new)
    event = {
        "machine": machine, "clock": clock, "ts": change.ts or now(), "actor": caller.actor, "session": caller.session,
        "project": project, "kind": change.kind, "target": change.target, "old": old_text, "new": new_text,
        "old_digest": digest(old_text), "new_digest": digest(new_text), "prev_hash": prev_hash,
    }
    event["hash"] = event_hash(event)
    event["id"] = conn.execute(INSERT_EVENT, event).lastrowid
    witness.appended(conn, "events", event["id"], event["hash"], machine)
    plugins.appended(conn, dict(event))
    return event


APPENDS = {
    "batch": append_events,
    "append_event": lambda conn, caller, project, changes: [
        append_event(conn, caller, project, c.kind, c.target, c.old, c.new, c.ts) for c in changes
    ],
    "alone": lambda conn, caller, project, changes: [appended_alone(conn, caller, project, c) for c in changes],
}


def append(path, caller, project, changes, how):
    "Append ``changes`` in one transaction, as ``APPENDS[how]`` does; the events returned."
    conn = connect(path)
    try:
        with write_transaction(conn):
            return APPENDS[how](conn, caller, project, changes)
    finally:
        conn.close()


@pytest.mark.parametrize("changes", [CHANGES, CHANGES[:1], [Change(c.kind, c.target, c.old, c.new) for c in CHANGES[:2]]],
                         ids=["six kinds", "one", "no timestamps given"])
@pytest.mark.parametrize("one_at_a_time", ["alone", "append_event"])
def test_a_batch_writes_the_rows_one_append_each_would(twins, recorder, changes, one_at_a_time):
    first, second = twins
    caller = Caller("agent", "session-1")
    batched = append(first, caller, "proj", changes, "batch")
    announced = recorder.events[:]
    recorder.events.clear()
    one_by_one = append(second, caller, "proj", changes, one_at_a_time)
    if changes[0].ts is None:  # now() differs between the runs: the rest must not
        assert [e["ts"] for e in batched] != [] and all(e["ts"] for e in batched)
        assert [e["clock"] for e in batched] == [e["clock"] for e in one_by_one]
        assert verify_chain(sqlite3.connect(first)).ok
        return
    assert batched == one_by_one
    assert announced == recorder.events == one_by_one
    for table in TABLES:
        assert rows(first, table) == rows(second, table), table
    witness.flush()
    heads = [{k: witness.read(path)[k] for k in ("machine", "event_id", "hash")} for path in twins]
    assert heads[0] == heads[1] == {"machine": batched[-1]["machine"], "event_id": batched[-1]["id"], "hash": batched[-1]["hash"]}
    for path in twins:
        assert verify_chain(sqlite3.connect(path)).ok


def test_a_batch_takes_consecutive_ids_and_clocks_chained_in_order(twins):
    first, _ = twins
    events = append(first, Caller(), "default", CHANGES, "batch")
    assert [e["id"] for e in events] == list(range(events[0]["id"], events[0]["id"] + len(CHANGES)))
    assert [e["clock"] for e in events] == list(range(events[0]["clock"], events[0]["clock"] + len(CHANGES)))
    assert [e["prev_hash"] for e in events[1:]] == [e["hash"] for e in events[:-1]]
    stored = {row[0]: row for row in rows(first, "events")}
    assert [stored[e["id"]][-1] for e in events] == [e["hash"] for e in events]


def test_an_empty_batch_appends_nothing(twins):
    first, _ = twins
    before = rows(first, "events")
    assert append(first, Caller(), "default", [], "batch") == []
    assert rows(first, "events") == before


def replayed_alone(path, events):
    "``events`` (rows of another copy) appended again one at a time, as the code before batches did."
    conn = connect(path)
    try:
        with write_transaction(conn):
            for event in events:
                old = None if event["old"] is None else json.loads(event["old"])
                new = None if event["new"] is None else json.loads(event["new"])
                change = Change(event["kind"], event["target"], old, new, event["ts"])
                appended_alone(conn, Caller(event["actor"], event["session"]), event["project"], change)
    finally:
        conn.close()


def new_events(path, after):
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute("SELECT * FROM events WHERE id > ? ORDER BY id", [after])]
    finally:
        conn.close()


@pytest.mark.parametrize("call", [
    lambda m: m.create_entities([{"name": f"n{i}", "entityType": "t", "observations": [f"a{i}", f"b{i}"]} for i in range(50)]),
    lambda m: m.add_observations([{"entityName": "e0", "contents": ["p", "q"]}, {"entityName": "e1", "contents": ["r", "o1"]}]),
    lambda m: m.create_relations([{"from": "e0", "to": "e1", "relationType": "r"}, {"from": "e1", "to": "e2", "relationType": "r"}]),
    lambda m: m.delete_observations([{"entityName": "e0", "observations": ["o0", "missing"]}, {"entityName": "e2", "observations": ["o2"]}]),
    lambda m: (m.create_relations([{"from": "e0", "to": "e1", "relationType": "r"}, {"from": "e2", "to": "e0", "relationType": "s"}]),
               m.delete_entities(["e0", "nobody", "e1"])),
    lambda m: (m.create_relations([{"from": "e0", "to": "e1", "relationType": "r"}, {"from": "e2", "to": "e0", "relationType": "s"}]),
               m.delete_relations([{"from": "e2", "to": "e0", "relationType": "s"}, {"from": "e0", "to": "e1", "relationType": "r"}])),
], ids=["create_entities", "add_observations", "create_relations", "delete_observations", "delete_entities", "delete_relations"])
def test_each_graph_write_appends_what_one_event_at_a_time_would(twins, call):
    first, second = twins
    head = len(rows(first, "events"))
    memory = Memory.open(first, actor="agent", session="s")
    call(memory)
    memory.close()
    written = new_events(first, head)
    assert written
    replayed_alone(second, written)
    assert new_events(second, head) == written
    for table in TABLES:
        assert rows(first, table) == rows(second, table), table
