import sqlite3

import pytest

from datasette_memory import InvalidInput, Memory
from datasette_memory.core.ledger import verify_chain


@pytest.fixture
def ledger_file(db_path):
    memory = Memory.open(db_path, actor="tester")
    memory.create_entities([{"name": f"e{i}", "entityType": "t", "observations": [f"o{i}"]} for i in range(5)])
    memory.close()
    return db_path


def tamper(path, *statements, table="events"):
    "Edit ``table`` (the ledger by default) the way a process with file access could: its triggers dropped first."
    conn = sqlite3.connect(path)
    conn.execute(f"DROP TRIGGER {table}_refuse_update")
    conn.execute(f"DROP TRIGGER {table}_refuse_delete")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def status(path):
    memory = Memory.open(path)
    try:
        return memory.verify_chain()
    finally:
        memory.close()


def test_intact_chain_verifies(ledger_file):
    result = status(ledger_file)
    assert result.ok and result.events == 5
    assert result.summary().startswith("ledger intact: 5 events")


@pytest.mark.parametrize(
    "statements,broken_at,problem",
    [
        (["UPDATE events SET actor = 'mallory' WHERE id = 3"], 3, "hash does not match"),
        (["UPDATE events SET new = replace(new, 'o2', 'forged') WHERE id = 3"], 3, "new value does not match its digest"),
        (["UPDATE events SET ts = '2000-01-01' WHERE id = 4"], 4, "hash does not match"),
        (["DELETE FROM events WHERE id = 2"], 3, "prev_hash does not match"),
        (["DELETE FROM events WHERE id = 1"], 2, "prev_hash does not match"),
        (
            # swap events 2 and 3 wholesale: each row keeps its own valid hash
            [
                "UPDATE events SET id = 100 WHERE id = 2",
                "UPDATE events SET id = 2 WHERE id = 3",
                "UPDATE events SET id = 3 WHERE id = 100",
            ],
            2,
            "prev_hash does not match",
        ),
    ],
)
def test_tampering_is_found_at_the_right_event(ledger_file, statements, broken_at, problem):
    tamper(ledger_file, *statements)
    result = status(ledger_file)
    assert not result.ok
    assert result.broken_event_id == broken_at
    assert problem in result.problem


def test_edit_with_recomputed_digest_still_breaks_the_hash(ledger_file):
    tamper(
        ledger_file,
        "UPDATE events SET new = '\"forged\"', new_digest = "
        "'6d8e5a9e9b3d5d2b9b1ac8ed5a8f7d6f6d3c4b2a1908f7e6d5c4b3a29180f7e6' WHERE id = 2",
    )
    result = status(ledger_file)
    assert (result.ok, result.broken_event_id) == (False, 2)


def test_checkpoint_and_resume_context(memory):
    assert memory.resume_context()["checkpoint"] is None
    memory.create_entities([{"name": "a", "entityType": "t", "observations": []}])
    checkpoint = memory.checkpoint("built the auth service; next: tests")
    memory.append_event("chose sqlite over postgres", kind="decision")
    memory.add_observations([{"entityName": "a", "contents": ["x"]}])
    context = memory.resume_context(max_events=1)
    assert context["checkpoint"]["summary"] == "built the auth service; next: tests"
    assert context["checkpoint"]["head_hash"] == checkpoint["head_hash"]
    assert context["checkpoint"]["head_event_id"] == checkpoint["head_event_id"]
    assert context["accounting"]["events_since_checkpoint"] == 2
    assert context["accounting"]["left_out_by_max_events"] == 1
    assert context["accounting"]["left_out_by_budget"] == 0
    assert [e["kind"] for e in context["events"]] == ["add_observation"]
    assert context["chain"]["ok"] is True
    assert context["warnings"] == []
    full = memory.resume_context()
    assert [(e["kind"], e["new"]) for e in full["events"]] == [
        ("decision", "chose sqlite over postgres"),
        ("add_observation", "x"),
    ]


def test_resume_context_is_scoped_to_the_project(db_path):
    a = Memory.open(db_path, project="a")
    b = Memory.open(db_path, project="b")
    a.checkpoint("a's work")
    a.append_event("a secret of a")
    b.append_event("b's note")
    context = b.resume_context()
    assert context["checkpoint"] is None
    assert [e["new"] for e in context["events"]] == ["b's note"]


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda m: m.checkpoint("   "), "summary: must not be empty"),
        (lambda m: m.checkpoint("x" * 70_000), "summary: 70000 bytes is over the limit of 65536"),
        (lambda m: m.append_event("x", kind=""), "kind: must not be empty"),
        (lambda m: m.append_event("x", kind=" \t"), "kind: must not be empty"),
        (lambda m: m.append_event(""), "content: must not be empty; say what happened"),
        (lambda m: m.append_event(" \n\t "), "content: must not be empty; say what happened"),
        (lambda m: m.resume_context(budget=999), "budget: must be between 1000 and 200000, got 999"),
        (lambda m: m.resume_context(budget=200_001), "budget: must be between 1000 and 200000, got 200001"),
        (lambda m: m.resume_context(max_events=-1), "max_events: must be between 0 and 1000"),
        (lambda m: m.resume_context(max_events="5"), "max_events: must be an integer"),
    ],
)
def test_ledger_bad_input(memory, call, message):
    with pytest.raises(InvalidInput, match=message):
        call(memory)
    assert memory.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_checkpoints_are_append_only(memory):
    memory.checkpoint("one")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        memory.conn.execute("UPDATE checkpoints SET summary = 'rewritten'")
    assert verify_chain(memory.conn).ok
