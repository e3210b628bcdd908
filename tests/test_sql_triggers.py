"""Triggers on the agent's tables: a write is judged by everything it does, its triggers' actions included.

A trigger's DELETE is a delete, so the write that fires it is refused by
write_query and runs, after a snapshot, through destructive_query; rows a
trigger updates count toward write_query's cap on changed rows; no trigger
writes to memory's tables, whoever made it. Each case ends with one audit
row and no change but the one designed.
"""

import json
import sqlite3
from pathlib import Path

import pytest

from datasette_memory.sqltools import SqlRefused

from .sql_support import DoorError, assert_only_audited, connect, path, sql_template, state, tools_for  # noqa: F401

INSERT_NOTE = "INSERT INTO notes (body) VALUES ('hello')"


def trigger(sql: str):
    "Create a trigger the way an agent can: through destructive_query."
    return ("destructive_query", {"query": sql, "reason": "a trigger for the test"})


def make(path, *setup):
    for tool, arguments in setup:
        getattr(tools_for(path), tool)(**arguments)


def raw_sql(path, sql: str):
    "Make what the SQL tools refuse to make, as a program or an older version could: with plain sqlite3."
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


def last_audit(path) -> dict:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    row = dict(conn.execute("SELECT * FROM sql_audit ORDER BY id DESC LIMIT 1").fetchone())
    conn.close()
    row["detail"] = json.loads(row["detail"]) if row["detail"] else {}
    return row


def count(path, sql: str) -> int:
    conn = sqlite3.connect(path)
    value = conn.execute(sql).fetchone()[0]
    conn.close()
    return value


def assert_only_changed(path, before: dict, tables: set, snapshot: bool = False):
    """
    Only ``tables`` changed, one audit row was added saying the call succeeded,
    and it names a new snapshot if ``snapshot`` (older ones may have rotated away), else none.
    """
    after = state(path)
    assert after["schema"] == before["schema"], "schema changed"
    assert {name for name in after["data"] if after["data"][name] != before["data"].get(name)} == tables
    assert after["audit"][:-1] == before["audit"] and len(after["audit"]) == len(before["audit"]) + 1
    assert after["audit"][-1][2] == 1
    taken = last_audit(path)["snapshot"]
    if snapshot:
        assert taken and Path(taken) in after["snapshots"] and Path(taken) not in before["snapshots"]
    else:
        assert taken is None and after["snapshots"] == before["snapshots"]


DELETING_TRIGGERS = [
    pytest.param("CREATE TRIGGER prune AFTER INSERT ON notes BEGIN DELETE FROM items WHERE id <= 40; END", "prune", id="after-insert-deletes-another-table"),
    pytest.param("CREATE TRIGGER prune AFTER INSERT ON notes BEGIN DELETE FROM items WHERE id = 1; END", "prune", id="deletes-one-row"),
    pytest.param("CREATE TRIGGER prune BEFORE INSERT ON notes WHEN new.body = 'purge' BEGIN DELETE FROM items; END", "prune", id="deletes-only-when"),
    pytest.param("CREATE TRIGGER prune AFTER INSERT ON notes BEGIN DELETE FROM tags WHERE item_id <= 5; END", "prune", id="deletes-children"),
]


@pytest.mark.parametrize("sql,name", DELETING_TRIGGERS)
async def test_write_query_refuses_a_write_whose_trigger_deletes(connect, path, sql, name):
    make(path, trigger(sql))
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match=f"trigger {name}, which deletes rows from (items|tags).*destructive_query"):
        await door("write_query", query=INSERT_NOTE)
    assert_only_audited(before, state(path), ok=False)
    assert "destructive_query" in last_audit(path)["error"]


async def test_destructive_query_runs_a_deleting_trigger_after_a_snapshot(connect, path):
    make(path, trigger(DELETING_TRIGGERS[0].values[0]))
    door = await connect()
    before = state(path)
    assert await door("destructive_query", query=INSERT_NOTE, reason="add a note; its trigger prunes items") == "# 1 row affected\n"
    assert_only_changed(path, before, {"notes", "items", "tags", "sqlite_sequence"}, snapshot=True)
    assert count(path, "SELECT count(*) FROM items") == 260
    audit = last_audit(path)
    assert audit["detail"]["triggers"] == ["prune"]
    assert count(audit["snapshot"], "SELECT count(*) FROM items") == 300


async def test_a_deleting_trigger_behind_an_insert_only_trigger_is_found(connect, path):
    make(
        path,
        ("write_query", {"query": "CREATE TABLE log (id INTEGER PRIMARY KEY, what TEXT)"}),
        trigger("CREATE TRIGGER note_log AFTER INSERT ON notes BEGIN INSERT INTO log (what) VALUES (new.body); END"),
        trigger("CREATE TRIGGER log_prune AFTER INSERT ON log BEGIN DELETE FROM items WHERE id <= 10; END"),
    )
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match="trigger log_prune, which deletes rows from items"):
        await door("write_query", query=INSERT_NOTE)
    assert_only_audited(before, state(path), ok=False)


def test_an_instead_of_trigger_on_a_view_cannot_delete_through_write_query(path):
    "Unpinned: a pinned bridge reads saved views through temporary twins, which refuse writes anyway."
    make(path, trigger("CREATE TRIGGER wipe INSTEAD OF INSERT ON service_names BEGIN DELETE FROM items; END"))
    before = state(path)
    with pytest.raises(SqlRefused, match="trigger wipe, which deletes rows from items"):
        tools_for(path).write_query("INSERT INTO service_names (name) VALUES ('x')")
    assert_only_audited(before, state(path), ok=False)


async def test_rows_a_trigger_updates_count_toward_the_cap(connect, path):
    make(path, trigger("CREATE TRIGGER bump AFTER INSERT ON notes BEGIN UPDATE items SET v = v + 1; END"))
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match="up to 300 existing rows.*over the limit of 100.*destructive_query"):
        await door("write_query", query=INSERT_NOTE)
    assert_only_audited(before, state(path), ok=False)


async def test_a_trigger_updating_rows_within_the_cap_is_counted(connect, path):
    make(path, trigger("CREATE TRIGGER bump AFTER INSERT ON notes BEGIN UPDATE items SET v = -v WHERE id <= 50; END"))
    door = await connect()
    before = state(path)
    assert await door("write_query", query=INSERT_NOTE) == "# 1 row affected\n"
    assert_only_changed(path, before, {"notes", "items", "sqlite_sequence"})
    audit = last_audit(path)
    assert (audit["rows_changed"], audit["detail"]["triggers"]) == (50, ["bump"])


async def test_a_trigger_updating_many_rows_runs_through_destructive_query_with_a_snapshot(connect, path):
    make(path, trigger("CREATE TRIGGER bump AFTER INSERT ON notes BEGIN UPDATE items SET v = v + 1; END"))
    door = await connect()
    before = state(path)
    await door("destructive_query", query=INSERT_NOTE, reason="bump every item")
    assert_only_changed(path, before, {"notes", "items", "sqlite_sequence"}, snapshot=True)
    assert count(path, "SELECT sum(v) FROM items") == 300 * 301 // 2 + 300


async def test_a_recursive_trigger_runs_once(connect, path):
    make(path, trigger("CREATE TRIGGER again AFTER INSERT ON notes BEGIN INSERT INTO notes (body) VALUES ('again: ' || new.body); END"))
    door = await connect()
    before = state(path)
    await door("write_query", query=INSERT_NOTE)
    assert_only_changed(path, before, {"notes", "sqlite_sequence"})
    assert count(path, "SELECT count(*) FROM notes WHERE body LIKE '%hello'") == 2
    assert last_audit(path)["detail"]["triggers"] == ["again"]
    with pytest.raises(DoorError, match="cannot change settings"):
        await door("read_query", query="PRAGMA recursive_triggers = ON")


async def test_a_recursive_deleting_trigger_is_refused_by_write_query_and_runs_once_after_a_snapshot(connect, path):
    make(
        path,
        trigger("CREATE TRIGGER chain AFTER DELETE ON items BEGIN DELETE FROM items WHERE id = old.id + 1; END"),
        trigger("CREATE TRIGGER first_out AFTER INSERT ON notes BEGIN DELETE FROM items WHERE id = 1; END"),
    )
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match="trigger (first_out|chain), which deletes rows from items"):
        await door("write_query", query=INSERT_NOTE)
    assert_only_audited(before, state(path), ok=False)
    before = state(path)
    await door("destructive_query", query=INSERT_NOTE, reason="drop the first item")
    assert_only_changed(path, before, {"notes", "items", "tags", "sqlite_sequence"}, snapshot=True)
    assert count(path, "SELECT group_concat(id) FROM (SELECT id FROM items WHERE id <= 3)") == "3"
    assert last_audit(path)["detail"]["triggers"] == ["chain", "first_out"]


MEMORY_WRITES = [
    pytest.param("DELETE FROM entities", id="delete-entities"),
    pytest.param("UPDATE entities SET name = 'renamed'", id="update-entities"),
    pytest.param(
        "INSERT INTO events (machine, clock, ts, actor, kind, target, prev_hash, hash) "
        "VALUES ('m', 999, 'now', 'agent', 'forged', 'x', 'p', 'h')",
        id="insert-event",
    ),
    pytest.param("INSERT INTO sql_audit (ts, actor, tool, arguments, ok, duration_ms) VALUES ('', '', '', '', 1, 0)", id="insert-audit"),
]


@pytest.mark.parametrize("action", MEMORY_WRITES)
async def test_no_agent_can_make_a_trigger_that_writes_memory(connect, path, action):
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match="read-only to SQL|audit record"):
        await door("destructive_query", query=f"CREATE TRIGGER sneak AFTER INSERT ON notes BEGIN {action}; END", reason="r")
    assert_only_audited(before, state(path), ok=False)


@pytest.mark.parametrize("project", [None, "alpha"])
@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
@pytest.mark.parametrize("action", MEMORY_WRITES)
async def test_a_trigger_made_outside_the_tools_cannot_write_memory_through_them(connect, path, action, tool, project):
    raw_sql(path, f"CREATE TRIGGER sneak AFTER INSERT ON notes BEGIN {action}; END")
    door = await connect(project)
    before = state(path)
    arguments = {"reason": "r"} if tool == "destructive_query" else {}
    with pytest.raises(DoorError, match="read-only to SQL|audit record"):
        await door(tool, query=INSERT_NOTE, **arguments)
    assert_only_audited(before, state(path), ok=False)


@pytest.mark.parametrize("tool", ["write_query", "destructive_query"])
def test_a_trigger_on_an_agent_view_cannot_write_memory(path, tool):
    raw_sql(path, "CREATE TRIGGER sneak INSTEAD OF INSERT ON service_names BEGIN UPDATE entities SET name = new.name; END")
    before = state(path)
    arguments = ("r",) if tool == "destructive_query" else ()
    with pytest.raises(SqlRefused, match="read-only to SQL"):
        getattr(tools_for(path), tool)("INSERT INTO service_names (name) VALUES ('x')", *arguments)
    assert_only_audited(before, state(path), ok=False)


async def test_a_badly_named_object_made_before_the_rule_can_still_be_dropped(connect, path):
    raw_sql(path, 'CREATE VIEW "old; view" AS SELECT 1')
    raw_sql(path, "INSERT INTO sql_views (name, description, select_sql, created_at, actor) VALUES ('old; view', 'd', 'SELECT 1', 'now', 'x')")
    raw_sql(path, 'CREATE TRIGGER "old trigger" AFTER INSERT ON notes BEGIN SELECT 1; END')
    door = await connect()
    await door("destructive_query", query='DROP VIEW "old; view"', reason="its name needs quoting")
    await door("destructive_query", query='DROP TRIGGER "old trigger"', reason="its name needs quoting")
    assert count(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'old%'") == 0
    assert count(path, "SELECT count(*) FROM sql_views WHERE name LIKE 'old%'") == 0
