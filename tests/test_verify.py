"""``verify`` against real tampering: every memory table edited, inserted into and
deleted from behind the core's back, the ledger rewritten, pages corrupted, and
clean files of every kind that must pass."""

import hashlib
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.cli import cli
from datasette_memory.core.ledger import EVENT_COLUMNS
from datasette_memory.core.witness import flush, witness_path
from datasette_memory.history.file_check import CannotVerify, open_read_only, verify_file
from datasette_memory.sqltools import SqlRefused, SqlTools

from .governance import issue_reviewer
from .tampering import drop, one, raw, rehash_from, triggers_dropped

LEXICAL = Config(search=SearchSettings(semantic=False))
SIDE_FILES = ("-wal", "-shm", ".head.json", ".verified.json")


@pytest.fixture(scope="module")
def reviewer():
    return issue_reviewer("alice")


def build_rich(path: pathlib.Path, reviewer) -> None:
    """
    A file with a history of every kind: entities with observations, relations,
    an observation edited and one deleted, an entity deleted, a rename and a
    merge (so aliases exist and relations were repointed and dropped), claims
    with evidence, one approved into a fact and one rejected, a superseded fact,
    a checkpoint, a second project, and SQL tool calls that wrote audit rows.
    """
    memory = Memory.open(path, project="p", actor="claude", session="s1", config=LEXICAL)
    memory.create_entities([
        {"name": "auth", "entityType": "service", "observations": ["uses postgres", "port 8080"]},
        {"name": "db", "entityType": "database", "observations": ["postgres 16"]},
        {"name": "billing", "entityType": "service", "observations": ["charges cards"]},
        {"name": "payments", "entityType": "service", "observations": ["charges cards", "stripe"]},
        {"name": "gone", "entityType": "temp", "observations": ["to be deleted"]},
    ])
    memory.create_relations([
        {"from": "auth", "to": "db", "relationType": "uses"},
        {"from": "billing", "to": "db", "relationType": "uses"},
        {"from": "payments", "to": "db", "relationType": "uses"},
        {"from": "auth", "to": "billing", "relationType": "calls"},
    ])
    memory.add_observations([{"entityName": "auth", "contents": ["has a login page"]}])
    memory.delete_observations([{"entityName": "auth", "observations": ["port 8080"]}])
    memory.update_observation("db", "postgres 16", "postgres 17")
    memory.delete_entities(["gone"])
    memory.rename_entity("auth", "identity")
    memory.merge_entity("billing", "payments")
    claim = memory.governed.propose_claim(
        "identity", "uses database", "postgres",
        evidence=["seen in compose", {"entityName": "identity", "observation": "uses postgres"}], confidence=0.8,
    )["claim"]
    memory.governed.propose_claim("identity", "uses database", "postgres", evidence=["another hint"])
    doubtful = memory.governed.propose_claim("db", "version", "16", evidence=["old docs"])["claim"]
    memory.governed.approve_claim(reviewer, claim["id"], "checked the config")
    memory.governed.reject_claim(reviewer, doubtful["id"], "it is 17")
    fact = memory.governed.record_fact(reviewer, "db", "host", "old-host", "known", valid_from="2020-01-01")["fact"]
    memory.governed.supersede_fact(reviewer, fact["id"], "new-host", "moved", effective="2021-01-01")
    memory.checkpoint("built the graph")
    memory.append_event("a note", "note")
    memory.close()
    other = Memory.open(path, project="q", actor="bob", config=LEXICAL)
    other.create_entities([{"name": "other", "entityType": "x", "observations": ["elsewhere"]}])
    other.checkpoint("q work so far")
    other.close()
    tools = SqlTools(path, actor="agent", session="s1")
    tools.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    tools.write_query("INSERT INTO notes (body) VALUES ('a'), ('b')")
    tools.read_query("SELECT count(*) FROM entities")
    with pytest.raises(SqlRefused):
        tools.write_query("DELETE FROM entities")


@pytest.fixture(scope="module")
def rich_template(tmp_path_factory, reviewer):
    path = tmp_path_factory.mktemp("template") / "memory.db"
    build_rich(path, reviewer)
    assert not pathlib.Path(f"{path}-wal").exists(), "every connection closed: the file holds everything"
    assert flush(), "the witness beside it holds every head, before tests copy it"
    return path


def copy_memory(source: pathlib.Path, target: pathlib.Path) -> pathlib.Path:
    "The memory file at ``source`` and its side files, copied to ``target``."
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    for suffix in SIDE_FILES:
        if pathlib.Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return target


@pytest.fixture
def rich(rich_template, tmp_path):
    return copy_memory(rich_template, tmp_path / "memory.db")


def tamper(path: pathlib.Path, *statements: str) -> None:
    conn = raw(path)
    try:
        for sql in statements:
            conn.execute(sql)
    finally:
        conn.close()


def problems(report: dict[str, Any]) -> list[dict[str, Any]]:
    "Every problem of a report, each with the check that found it."
    return [dict(p, check=c["check"]) if isinstance(p, dict) else {"check": c["check"], "message": p}
            for c in report["checks"] for p in c["problems"]]


def run_cli(*args: str):
    return CliRunner().invoke(cli, ["verify", *args])


def verify_ok(path: pathlib.Path, since_checkpoint: bool = False) -> dict[str, Any]:
    report = verify_file(path, since_checkpoint)
    assert report["ok"], json.dumps(problems(report), indent=1, default=str)[:3000]
    return report


def test_the_rich_file_is_clean_and_has_a_row_in_every_table(rich):
    report = verify_ok(rich)
    assert report["mode"] == "full" and [c["check"] for c in report["checks"]] == [
        "file integrity", "schema", "word indexes", "ledger chain", "head witness", "last clean check", "SQL audit chain", "replay",
        "event index", "project sizes", "origins",
    ]
    conn = raw(rich)
    for table in TABLES:
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0, table
    assert conn.execute("SELECT count(*) FROM relations WHERE from_entity = 'identity' AND to_entity = 'payments'").fetchone() == (1,)
    conn.close()


# The tamper matrix: each tamper edits the file and returns the row a problem
# must name: an int id, a dict of what identifies a row that is gone, or None
# (only the table need be named).


def inserted(conn: sqlite3.Connection, sql: str, *params: Any) -> int:
    return conn.execute(sql, params).lastrowid


TS = "2026-01-01T00:00:00.000000+00:00"


def entities_edit(conn):
    conn.execute("UPDATE entities SET entity_type = 'forged' WHERE name = 'db'")
    return one(conn, "SELECT id FROM entities WHERE name = 'db'")


def entities_insert(conn):
    return inserted(conn, "INSERT INTO entities (project, name, entity_type, created_at) VALUES ('p', 'ghost', 't', ?)", TS)


def entities_delete(conn):
    conn.execute("DELETE FROM entities WHERE name = 'db'")
    return {"project": "p", "name": "db"}


def observations_edit(conn):
    conn.execute("UPDATE observations SET content = 'postgres 9' WHERE content = 'postgres 17'")
    return one(conn, "SELECT id FROM observations WHERE content = 'postgres 9'")


def observations_insert(conn):
    db = one(conn, "SELECT id FROM entities WHERE name = 'db'")
    return inserted(conn, "INSERT INTO observations (entity_id, content, created_at) VALUES (?, 'forged', ?)", db, TS)


def observations_delete(conn):
    conn.execute("DELETE FROM observations WHERE content = 'stripe'")
    return {"project": "p", "entity": "payments"}


def relations_edit(conn):
    conn.execute("UPDATE relations SET relation_type = 'owns' WHERE from_entity = 'payments'")
    return one(conn, "SELECT id FROM relations WHERE relation_type = 'owns'")


def relations_insert(conn):
    return inserted(conn, "INSERT INTO relations (project, from_entity, to_entity, relation_type, created_at) "
                          "VALUES ('p', 'db', 'identity', 'serves', ?)", TS)


def relations_delete(conn):
    conn.execute("DELETE FROM relations WHERE from_entity = 'identity'")
    return {"project": "p", "from": "identity", "to": "payments", "relationType": "calls"}


def memory_aliases_edit(conn):
    conn.execute("UPDATE memory_aliases SET entity_id = (SELECT id FROM entities WHERE name = 'db') WHERE alias = 'auth'")
    return one(conn, "SELECT id FROM memory_aliases WHERE alias = 'auth'")


def memory_aliases_insert(conn):
    return inserted(conn, "INSERT INTO memory_aliases (project, alias, entity_id, created_at) "
                          "VALUES ('p', 'ghost', (SELECT id FROM entities WHERE name = 'db'), ?)", TS)


def memory_aliases_delete(conn):
    conn.execute("DELETE FROM memory_aliases WHERE alias = 'billing'")
    return {"project": "p", "alias": "billing"}


def claims_edit(conn):
    drop(conn, "claims_keep_their_statement")
    conn.execute("UPDATE claims SET object = 'mysql' WHERE id = 1")
    return 1


def claims_insert(conn):
    return inserted(conn, "INSERT INTO claims (project, subject, predicate, object, subject_key, predicate_key, object_key, "
                          "proposed_by, proposed_at) VALUES ('p', 'a', 'b', 'c', 'a', 'b', 'c', 'claude', ?)", TS)


def claims_delete(conn):
    drop(conn, "claims_refuse_delete")
    conn.execute("DELETE FROM claims WHERE id = 2")
    return 2


def claim_evidence_edit(conn):
    drop(conn, "claim_evidence_refuse_update")
    conn.execute("UPDATE claim_evidence SET content = 'forged evidence' WHERE content = 'seen in compose'")
    return one(conn, "SELECT id FROM claim_evidence WHERE content = 'forged evidence'")


def claim_evidence_insert(conn):
    return inserted(conn, "INSERT INTO claim_evidence (claim_id, kind, content, added_by, added_at) "
                          "VALUES (1, 'text', 'made up', 'claude', ?)", TS)


def claim_evidence_delete(conn):
    drop(conn, "claim_evidence_refuse_delete")
    conn.execute("DELETE FROM claim_evidence WHERE content = 'another hint'")
    return {"claim": 1}


def claim_reviews_edit(conn):
    drop(conn, "claim_reviews_refuse_update")
    conn.execute("UPDATE claim_reviews SET rationale = 'rubber stamp' WHERE act = 'approve'")
    return one(conn, "SELECT id FROM claim_reviews WHERE act = 'approve'")


def claim_reviews_insert(conn):
    return inserted(conn, "INSERT INTO claim_reviews (claim_id, act, reviewer, reviewed_at, rationale) "
                          "VALUES (2, 'reopen', 'mallory', ?, 'sneaky')", TS)


def claim_reviews_delete(conn):
    drop(conn, "claim_reviews_refuse_delete")
    conn.execute("DELETE FROM claim_reviews WHERE act = 'reject'")
    return {"claim": 2}


def facts_edit(conn):
    # valid_to is not guarded by a trigger (a person's invalidation sets it): the ledger still knows
    conn.execute("UPDATE facts SET valid_to = '2030-01-01T00:00:00.000000+00:00' WHERE object = 'new-host'")
    return one(conn, "SELECT id FROM facts WHERE object = 'new-host'")


def facts_insert(conn):
    return inserted(conn, "INSERT INTO facts (project, subject, predicate, object, subject_key, predicate_key, object_key, "
                          "valid_from, recorded_at, recorded_by, rationale) "
                          "VALUES ('p', 'a', 'b', 'c', 'a', 'b', 'c', ?, ?, 'mallory', 'trust me')", TS, TS)


def facts_delete(conn):
    drop(conn, "facts_refuse_delete")
    conn.execute("DELETE FROM facts WHERE object = 'old-host'")
    return 2


def fact_history_edit(conn):
    drop(conn, "fact_history_refuse_update")
    conn.execute("UPDATE fact_history SET actor = 'mallory' WHERE act = 'supersede'")
    return one(conn, "SELECT id FROM fact_history WHERE act = 'supersede'")


def fact_history_insert(conn):
    return inserted(conn, "INSERT INTO fact_history (fact_id, act, recorded_at, actor, rationale) "
                          "VALUES (3, 'invalidate', ?, 'mallory', 'why not')", TS)


def fact_history_delete(conn):
    drop(conn, "fact_history_refuse_delete")
    conn.execute("DELETE FROM fact_history WHERE act = 'supersede'")
    return {"fact": 2}


def checkpoints_edit(conn):
    drop(conn, "checkpoints_refuse_update")
    conn.execute("UPDATE checkpoints SET summary = 'nothing to see here' WHERE project = 'p'")
    return one(conn, "SELECT id FROM checkpoints WHERE project = 'p'")


def checkpoints_insert(conn):
    head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return inserted(conn, "INSERT INTO checkpoints (project, ts, actor, session, summary, head_event_id, head_hash) "
                          "VALUES ('p', ?, 'claude', 's1', 'forged checkpoint', ?, ?)", TS, *head)


def checkpoints_delete(conn):
    event = one(conn, "SELECT head_event_id FROM checkpoints WHERE project = 'p'")
    drop(conn, "checkpoints_refuse_delete")
    conn.execute("DELETE FROM checkpoints WHERE project = 'p'")
    return {"event": event}


def sql_audit_edit(conn):
    drop(conn, "sql_audit_refuse_update")
    conn.execute("UPDATE sql_audit SET ok = 1, error = NULL WHERE ok = 0")
    return one(conn, "SELECT id FROM sql_audit WHERE tool = 'write_query' ORDER BY id DESC")


def sql_audit_insert(conn):
    newest = one(conn, "SELECT hash FROM sql_audit ORDER BY id DESC")
    return inserted(conn, "INSERT INTO sql_audit (ts, actor, tool, arguments, ok, duration_ms, prev_hash, hash) "
                          "VALUES (?, 'agent', 'read_query', '{}', 1, 1.0, ?, ?)", TS, newest, "f" * 64)


def sql_audit_delete(conn):
    drop(conn, "sql_audit_refuse_delete")
    conn.execute("DELETE FROM sql_audit WHERE id = 2")
    return 3  # the chain breaks at the row after the one deleted


def memory_event_names_edit(conn):
    conn.execute("UPDATE memory_event_names SET name = 'forged' WHERE name = 'db' AND event_id = 2")
    return {"project": "p", "name": "forged", "event_id": 2}


def memory_event_names_insert(conn):
    conn.execute("INSERT INTO memory_event_names VALUES ('p', 'ghost', 5)")
    return {"project": "p", "name": "ghost", "event_id": 5}


def memory_event_names_delete(conn):
    conn.execute("DELETE FROM memory_event_names WHERE name = 'db' AND event_id = 2")
    return {"project": "p", "name": "db", "event_id": 2}


def memory_project_sizes_edit(conn):
    conn.execute("UPDATE memory_project_sizes SET entities = entities + 5 WHERE project = 'p'")
    return {"project": "p"}


def memory_project_sizes_insert(conn):
    conn.execute("INSERT INTO memory_project_sizes VALUES ('ghost', 3)")
    return {"project": "ghost"}


def memory_project_sizes_delete(conn):
    conn.execute("DELETE FROM memory_project_sizes WHERE project = 'p'")
    return {"project": "p"}


def observation(conn, content):
    return one(conn, "SELECT id FROM observations WHERE content = ?", content)


def entity(conn, name):
    return conn.execute("SELECT id, name, entity_type FROM entities WHERE name = ?", [name]).fetchone()


def alias(conn, name):
    return conn.execute("SELECT id, alias FROM memory_aliases WHERE alias = ?", [name]).fetchone()


def deletion(conn):
    "The newest observation deletion's event id and the words the deleted-words index holds for it."
    return conn.execute("SELECT id, json_extract(old, '$') FROM events WHERE kind = 'delete_observation'").fetchone()


def index_tampers(index: str, columns: str, row_of: Callable[[sqlite3.Connection], tuple]):
    "Edit, insert and delete for one word index: its words changed, a ghost row added, a row's words removed."
    placeholders = ", ".join("?" for _ in columns.split(", "))

    def remove(conn):
        row = row_of(conn)
        conn.execute(f"INSERT INTO {index} ({index}, rowid, {columns}) VALUES ('delete', ?, {placeholders})", row)
        return row[0]

    def edit(conn):
        id = remove(conn)
        conn.execute(f"INSERT INTO {index} (rowid, {columns}) VALUES (?, {placeholders})", [id] + ["forged words"] * len(columns.split(", ")))
        return id

    def insert(conn):
        conn.execute(f"INSERT INTO {index} (rowid, {columns}) VALUES (999, {placeholders})", ["ghost words"] * len(columns.split(", ")))
        return 999

    return {f"{index}_edit": edit, f"{index}_insert": insert, f"{index}_delete": remove}


TAMPERS: dict[str, Callable[[sqlite3.Connection], Any]] = {
    name: function for name, function in globals().items()
    if name.endswith(("_edit", "_insert", "_delete")) and callable(function)
}
TAMPERS.update(index_tampers("observations_fts", "content", lambda c: (observation(c, "stripe"), "stripe")))
TAMPERS.update(index_tampers("observations_trigram", "content", lambda c: (observation(c, "stripe"), "stripe")))
TAMPERS.update(index_tampers("entities_fts", "name, entity_type", lambda c: entity(c, "payments")))
TAMPERS.update(index_tampers("entities_trigram", "name, entity_type", lambda c: entity(c, "payments")))
TAMPERS.update(index_tampers("memory_aliases_fts", "alias", lambda c: alias(c, "billing")))
TAMPERS.update(index_tampers("memory_deleted_fts", "text", deletion))
TABLES = (
    "entities", "observations", "relations", "memory_aliases", "claims", "claim_evidence", "claim_reviews", "facts",
    "fact_history", "checkpoints", "sql_audit", "memory_event_names", "memory_project_sizes", "observations_fts", "entities_fts",
    "observations_trigram", "entities_trigram", "memory_aliases_fts", "memory_deleted_fts",
)


def test_the_tamper_matrix_covers_every_table():
    assert sorted(TAMPERS) == sorted(f"{table}_{action}" for table in TABLES for action in ("edit", "insert", "delete"))


# A claim's evidence and reviews and a fact's history are named by their owner
# ({"claim": 1}), a row found there carrying its id among the values found
CHILD_TABLES = {"claim_evidence": "claim", "claim_reviews": "claim", "fact_history": "fact"}


def names_row(problem: dict[str, Any], row: Any) -> bool:
    "Whether ``problem`` names ``row``: the id itself, or every key ``row`` gives."
    if isinstance(row, dict):
        return isinstance(problem.get("row"), dict) and all(problem["row"].get(k) == v for k, v in row.items())
    if problem.get("table") in CHILD_TABLES and isinstance(problem.get("row"), dict):
        return isinstance(problem.get("found"), dict) and problem["found"].get("id") == row
    return problem.get("row") == row


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_tampering_with_any_table_is_found(rich, name):
    table = name.rsplit("_", 1)[0]
    conn = raw(rich)
    try:
        row = TAMPERS[name](conn)
    finally:
        conn.close()
    report = verify_file(rich)
    assert report["ok"] is False
    found = [p for p in problems(report) if p.get("table") == table]
    assert found, f"no problem names {table}: {json.dumps(problems(report), default=str)[:2000]}"
    assert any(names_row(p, row) for p in found), f"no problem names row {row} of {table}: {json.dumps(found, default=str)[:2000]}"
    assert "recorded" not in report and not pathlib.Path(f"{rich}.verified.json").exists()


@pytest.mark.parametrize("name", [
    "observations_edit", "claims_insert", "facts_edit", "claim_reviews_edit", "checkpoints_insert",
    "observations_fts_insert", "memory_deleted_fts_edit", "sql_audit_delete",
])
def test_tampering_through_the_cli(rich, name):
    conn = raw(rich)
    try:
        row = TAMPERS[name](conn)
    finally:
        conn.close()
    table = name.rsplit("_", 1)[0]
    result = run_cli("--db", str(rich))
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"{rich}: PROBLEMS FOUND (full check, ")
    lines = [line.strip() for line in result.output.splitlines()]
    if table in CHILD_TABLES:
        assert any(line.startswith(f'{table} {{"{CHILD_TABLES[table]}": ') and f'"id": {row},' in line for line in lines), result.output
    else:
        assert any(line.startswith(f"{table} row {row}: expected ") for line in lines), result.output


# Edits the matrix does not make, each of which once passed unnoticed


def checkpoint_copied(conn):
    "A second row anchored to a checkpoint's event, identical to the first."
    return inserted(conn, "INSERT INTO checkpoints (project, ts, actor, session, summary, head_event_id, head_hash) "
                          "SELECT project, ts, actor, session, summary, head_event_id, head_hash FROM checkpoints WHERE project = 'p'")


def alias_of_nothing(conn):
    "An alias of an entity that does not exist."
    return inserted(conn, "INSERT INTO memory_aliases (project, alias, entity_id, created_at) VALUES ('p', 'nobody', 999, ?)", TS)


def review_names_a_fact(conn):
    "A rejection made to say it produced a fact: replay's reject has no fact, which must not match any."
    drop(conn, "claim_reviews_refuse_update")
    conn.execute("UPDATE claim_reviews SET fact_id = 1 WHERE act = 'reject'")
    return one(conn, "SELECT id FROM claim_reviews WHERE act = 'reject'")


def history_given_an_end(conn):
    "A fact's record row given an end it was not recorded with."
    drop(conn, "fact_history_refuse_update")
    conn.execute("UPDATE fact_history SET valid_to = '2022-01-01T00:00:00.000000+00:00' WHERE act = 'record' AND fact_id = 3")
    return one(conn, "SELECT id FROM fact_history WHERE act = 'record' AND fact_id = 3")


def evidence_of_no_claim(conn):
    return inserted(conn, "INSERT INTO claim_evidence (claim_id, kind, content, added_by, added_at) "
                          "VALUES (77, 'text', 'orphan', 'claude', ?)", TS)


@pytest.mark.parametrize("table,edit", [
    ("checkpoints", checkpoint_copied),
    ("memory_aliases", alias_of_nothing),
    ("claim_reviews", review_names_a_fact),
    ("fact_history", history_given_an_end),
    ("claim_evidence", evidence_of_no_claim),
])
def test_subtler_edits_are_found(rich, table, edit):
    conn = raw(rich)
    try:
        row = edit(conn)
    finally:
        conn.close()
    report = verify_file(rich)
    found = [p for p in problems(report) if p.get("table") == table]
    assert report["ok"] is False and any(names_row(p, row) or p.get("row") == row for p in found), problems(report)


@pytest.mark.parametrize("since_checkpoint", [False, True])
def test_a_dropped_protection_is_found_before_it_is_used(rich, since_checkpoint):
    verify_ok(rich)
    tamper(rich, "DROP TRIGGER events_refuse_delete", "DROP TRIGGER claims_refuse_delete")
    report = verify_file(rich, since_checkpoint)
    assert report["ok"] is False
    assert report["mode"].startswith("since checkpoint") if since_checkpoint else report["mode"] == "full"
    assert sorted((p["table"], p["row"]["type"], p["row"]["name"], p["found"]) for p in checks(report)["schema"]["problems"]) == [
        ("sqlite_master", "trigger", "claims_refuse_delete", None),
        ("sqlite_master", "trigger", "events_refuse_delete", None),
    ]
    result = run_cli("--db", str(rich))
    assert result.exit_code == 1 and 'sqlite_master {"type": "trigger", "name": "events_refuse_delete"}: expected CREATE TRIGGER' in result.output


def test_a_trigger_added_to_a_memory_table_is_found(rich):
    "A trigger that quietly rewrites what the core stores is not the core's."
    tamper(rich, "CREATE TRIGGER rewrite AFTER INSERT ON observations BEGIN "
                 "UPDATE observations SET content = upper(new.content) WHERE id = new.id; END")
    report = verify_file(rich)
    assert [p["row"] for p in checks(report)["schema"]["problems"]] == [{"type": "trigger", "name": "rewrite"}]


def test_an_agents_own_tables_and_triggers_are_not_memory(rich):
    tamper(rich, "CREATE TABLE mine (a)", "CREATE INDEX mine_a ON mine (a)",
           "CREATE TRIGGER mine_t AFTER INSERT ON mine BEGIN SELECT 1; END", "CREATE VIEW mine_v AS SELECT * FROM mine")
    verify_ok(rich)


def test_a_copied_checkpoint_is_found_incrementally_too(rich):
    verify_ok(rich)
    conn = raw(rich)
    # the newest checkpoint: the anchor of the next incremental check, which looks at it and after
    row = inserted(conn, "INSERT INTO checkpoints (project, ts, actor, session, summary, head_event_id, head_hash) "
                         "SELECT project, ts, actor, session, summary, head_event_id, head_hash FROM checkpoints WHERE project = 'q'")
    conn.close()
    report = verify_file(rich, since_checkpoint=True)
    assert report["mode"].startswith("since checkpoint")
    assert report["ok"] is False and any(p["table"] == "checkpoints" and p["row"] == row for p in problems(report))


# The ledger rewritten: an earlier event edited and the chain re-hashed forward


def login_event(conn):
    return one(conn, "SELECT id FROM events WHERE kind = 'add_observation'")


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in report["checks"]}


def test_a_rehashed_ledger_verifies_as_a_chain_but_replay_and_the_witness_catch_it(rich):
    conn = raw(rich)
    rehash_from(conn, login_event(conn), new=json.dumps("has a logout page"))
    conn.close()
    report = verify_file(rich)
    found = checks(report)
    assert report["ok"] is False
    assert found["ledger chain"]["ok"], "every hash was recomputed: the chain alone cannot tell"
    assert not found["head witness"]["ok"] and found["head witness"]["problems"][0]["found"].startswith("diverges: ")
    replayed = {(p["table"], json.dumps(p["expected"]), json.dumps(p["found"])) for p in found["replay"]["problems"]}
    assert ("observations", json.dumps("has a logout page"), "null") in replayed
    assert any(p["table"] == "checkpoints" for p in found["replay"]["problems"]), "the checkpoints hold the old head hashes"


def test_a_rehashed_ledger_with_matching_tables_is_caught_by_the_witness(rich):
    conn = raw(rich)
    rehash_from(conn, login_event(conn), new=json.dumps("has a logout page"))
    conn.execute("UPDATE observations SET content = 'has a logout page' WHERE content = 'has a login page'")
    with triggers_dropped(conn, "checkpoints_refuse_update"):
        conn.execute("UPDATE checkpoints SET head_hash = (SELECT hash FROM events WHERE id = head_event_id)")
    conn.close()
    report = verify_file(rich)
    assert [c["check"] for c in report["checks"] if not c["ok"]] == ["head witness"]
    result = run_cli("--db", str(rich))
    assert result.exit_code == 1 and "diverges: event " in result.output and "was rewritten" in result.output


def test_a_rewrite_of_the_file_and_its_witness_together_is_beyond_verify(rich):
    """
    The limit, written down: someone who rewrites the ledger, the tables and the
    checkpoints consistently, and deletes (or rewrites) the witness beside the
    file, leaves nothing the file itself can contradict. Keep the witness (or a
    copy of the head) where that person cannot write.
    """
    conn = raw(rich)
    rehash_from(conn, login_event(conn), new=json.dumps("has a logout page"))
    conn.execute("UPDATE observations SET content = 'has a logout page' WHERE content = 'has a login page'")
    with triggers_dropped(conn, "checkpoints_refuse_update"):
        conn.execute("UPDATE checkpoints SET head_hash = (SELECT hash FROM events WHERE id = head_event_id)")
    conn.close()
    witness_path(rich).unlink()
    assert verify_file(rich)["ok"] is True


# A damaged file


@pytest.mark.parametrize("where", [0.3, 0.5, 0.7, 0.9])
def test_a_corrupt_page_never_verifies(rich, where):
    size = rich.stat().st_size
    page = 4096
    offset = int(size * where) // page * page
    with open(rich, "r+b") as file:
        file.seek(offset)
        file.write(bytes(range(256)) * (page // 256))
    try:
        report = verify_file(rich)
    except CannotVerify as e:
        assert "damaged" in str(e) or "not a SQLite database" in str(e)
    else:
        assert report["ok"] is False
        assert checks(report)["file integrity"]["ok"] is False, report
        assert not pathlib.Path(f"{rich}.verified.json").exists()
    result = run_cli("--db", str(rich))
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), "a damaged file is reported, not a crash"


# The head witness


def test_the_witness_follows_every_commit(rich):
    "The witness is written in the background after each commit: flush() waits for it, as a door's close does."
    seen = json.loads(witness_path(rich).read_text())
    conn = raw(rich)
    head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    audit = conn.execute("SELECT id, hash FROM sql_audit ORDER BY id DESC LIMIT 1").fetchone()
    conn.close()
    assert (seen["event_id"], seen["hash"], seen["audit_row"], seen["audit_hash"]) == (*head, *audit)
    SqlTools(rich, actor="agent").read_query("SELECT 1")
    assert flush()
    assert json.loads(witness_path(rich).read_text())["audit_row"] == audit[0] + 1
    memory = Memory.open(rich, project="p", config=LEXICAL)
    memory.append_event("one more")
    memory.close()
    assert json.loads(witness_path(rich).read_text())["event_id"] == head[0] + 1


def cut_the_newest_events(conn) -> int:
    "Delete the last two events (the q project's entity and checkpoint) with everything they made: only the witness remembers them."
    head = one(conn, "SELECT max(id) FROM events")
    with triggers_dropped(conn, "events_refuse_delete", "checkpoints_refuse_delete"):
        conn.execute("DELETE FROM checkpoints WHERE project = 'q'")
        conn.execute("DELETE FROM observations WHERE entity_id = (SELECT id FROM entities WHERE name = 'other')")
        conn.execute("DELETE FROM entities WHERE name = 'other'")
        conn.execute("DELETE FROM memory_event_names WHERE event_id >= ?", [head - 1])
        conn.execute("DELETE FROM events WHERE id >= ?", [head - 1])
    return head


def test_newest_events_deleted_make_the_ledger_shorter_than_its_witness(rich):
    conn = raw(rich)
    head = cut_the_newest_events(conn)
    conn.close()
    report = verify_file(rich)
    assert [c["check"] for c in report["checks"] if not c["ok"]] == ["head witness"]
    [problem] = checks(report)["head witness"]["problems"]
    assert (problem["table"], problem["row"]) == ("events", head) and problem["found"].startswith("shorter: ")
    result = run_cli("--db", str(rich))
    assert result.exit_code == 1
    assert f"events row {head}: expected the event the witness saw" in result.output and "found shorter: the ledger ends at event" in result.output


def test_newest_audit_rows_deleted_make_the_audit_log_shorter_than_its_witness(rich):
    conn = raw(rich)
    head = one(conn, "SELECT max(id) FROM sql_audit")
    with triggers_dropped(conn, "sql_audit_refuse_delete"):
        conn.execute("DELETE FROM sql_audit WHERE id = ?", [head])
    conn.close()
    report = verify_file(rich)
    assert checks(report)["SQL audit chain"]["ok"], "what is left of the chain still holds"
    [problem] = checks(report)["head witness"]["problems"]
    assert (problem["table"], problem["row"]) == ("sql_audit", head) and problem["found"].startswith("shorter: ")


def test_a_missing_witness_is_not_tampering(rich):
    witness_path(rich).unlink()
    report = verify_ok(rich)
    assert checks(report)["head witness"]["detail"].startswith("no witness: ")
    assert run_cli("--db", str(rich)).exit_code == 0


def test_a_witness_from_another_file_is_reported(rich, tmp_path):
    other = tmp_path / "other" / "memory.db"
    memory = Memory.open(other, config=LEXICAL)
    memory.append_event("another file")
    memory.close()
    shutil.copyfile(witness_path(other), witness_path(rich))
    report = verify_file(rich)
    assert report["ok"] is False
    [problem] = checks(report)["head witness"]["problems"]
    assert problem["table"] == "events" and problem["found"].startswith("other file: the witness belongs to another memory file")
    result = run_cli("--db", str(rich))
    assert result.exit_code == 1 and "belongs to another memory file" in result.output


def test_a_witness_behind_the_head_is_normal(rich):
    "A witness lost in a crash, or written by an older process, is behind: fine."
    memory = Memory.open(rich, project="p", config=LEXICAL)
    before = witness_path(rich).read_text()
    memory.append_event("after the witness")
    memory.close()
    witness_path(rich).write_text(before)
    assert checks(verify_ok(rich))["head witness"]["detail"].startswith("agrees: ")


# Refused at write time: no write replaces or reuses a row of an append-only table


def snapshot(conn: sqlite3.Connection, table: str) -> list[tuple]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


def columns_of(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


APPEND_ONLY = ("events", "sql_audit", "claims", "facts", "checkpoints", "claim_evidence", "claim_reviews", "fact_history")


def overwrites(conn: sqlite3.Connection, table: str) -> list[str]:
    "Statements that would replace or reuse row 1 of ``table``."
    columns = columns_of(conn, table)
    others = [c for c in columns if c != "id"]
    text = next(c for c in others if c not in ("project", "subject_key", "predicate_key", "object_key", "status",
                                                 "kind", "act", "ok", "duration_ms", "clock", "confidence"))
    return [
        f"INSERT OR REPLACE INTO {table} SELECT * FROM {table} WHERE id = 1",
        f"REPLACE INTO {table} SELECT * FROM {table} WHERE id = 1",
        f"INSERT INTO {table} SELECT * FROM {table} WHERE id = 1 ON CONFLICT(id) DO UPDATE SET {text} = 'forged'",
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT 1, {', '.join(others)} FROM {table} WHERE id = 2",
        f"INSERT OR REPLACE INTO {table} ({', '.join(columns)}) SELECT 1, {', '.join(others)} FROM {table} WHERE id = 2",
        f"UPDATE OR REPLACE {table} SET id = 1 WHERE id = 2",
    ]


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_tables_refuse_every_overwrite(rich, table):
    conn = raw(rich)
    try:
        assert len(snapshot(conn, table)) >= 2
        before = {t: snapshot(conn, t) for t in APPEND_ONLY}
        for sql in overwrites(conn, table):
            with pytest.raises(sqlite3.IntegrityError, match="append-only|never|keep|a claim moves"):
                conn.execute(sql)
            assert {t: snapshot(conn, t) for t in APPEND_ONLY} == before, sql
    finally:
        conn.close()
    verify_ok(rich)


def event_values(conn: sqlite3.Connection, id: int) -> dict[str, Any]:
    return dict(zip(EVENT_COLUMNS, conn.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE id = ?", [id]).fetchone()))


@pytest.mark.parametrize("reuse", ["clock", "hash", "both"])
def test_an_event_cannot_reuse_another_events_clock_or_hash(rich, reuse):
    conn = raw(rich)
    try:
        before = snapshot(conn, "events")
        event = event_values(conn, 1)
        event.pop("id")
        if reuse != "both":
            # a fresh value for the other one, so only the reused one conflicts
            fresh = {"clock": {"hash": "e" * 64}, "hash": {"clock": 10_000}}[reuse]
            event.update(fresh)
        values = f"({', '.join(event)}) VALUES ({', '.join('?' for _ in event)})"
        # the trigger refuses before any conflict clause is consulted: IGNORE and DO UPDATE included
        for sql in (f"INSERT INTO events {values}", f"INSERT OR REPLACE INTO events {values}", f"INSERT OR IGNORE INTO events {values}",
                    f"INSERT INTO events {values} ON CONFLICT DO UPDATE SET actor = 'mallory'"):
            with pytest.raises(sqlite3.IntegrityError, match="the ledger is append-only"):
                conn.execute(sql, list(event.values()))
        assert snapshot(conn, "events") == before
    finally:
        conn.close()
    verify_ok(rich)


# verify changes nothing


def digest_of(path: pathlib.Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_verify_changes_neither_the_file_nor_its_wal(rich):
    writer = Memory.open(rich, project="p", actor="claude", config=LEXICAL)
    try:
        writer.create_entities([{"name": "fresh", "entityType": "t", "observations": ["only in the wal"]}])
        wal = pathlib.Path(f"{rich}-wal")
        assert wal.exists() and wal.stat().st_size > 0, "an open writer keeps its changes in the -wal"
        before = (digest_of(rich), digest_of(wal))
        report = verify_ok(rich)
        assert report["events"] == one(writer.conn, "SELECT max(id) FROM events"), "verify reads through the -wal"
        result = run_cli("--db", str(rich), "--json")
        assert result.exit_code == 0 and json.loads(result.output)["ok"] is True
        assert (digest_of(rich), digest_of(wal)) == before
    finally:
        writer.close()


def test_verify_leaves_only_its_record_behind(rich):
    before = sorted(p.name for p in rich.parent.iterdir())
    digest = digest_of(rich)
    report = verify_ok(rich)
    assert report["recorded"] == f"{rich}.verified.json"
    # SQLite's WAL reader may leave an empty -wal and its -shm index: nothing of the file's own
    new = set(p.name for p in rich.parent.iterdir()) - set(before)
    assert new <= {"memory.db.verified.json", "memory.db.side-files.lock", "memory.db-wal", "memory.db-shm"}
    assert "memory.db.verified.json" in new
    assert not (rich.parent / "memory.db-wal").exists() or (rich.parent / "memory.db-wal").stat().st_size == 0
    assert digest_of(rich) == digest


def test_a_missing_path_creates_nothing(tmp_path):
    path = tmp_path / "no" / "such" / "memory.db"
    result = run_cli("--db", str(path))
    assert result.exit_code == 2 and "no such file" in result.output
    assert not (tmp_path / "no").exists()
    with pytest.raises(CannotVerify):
        verify_file(tmp_path / "memory.db")
    assert list(tmp_path.iterdir()) == [], "no folder, no file, no -wal, no record"


@pytest.mark.parametrize("change,message", [
    ("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('datasette_memory', 'm999_x', '2030-01-01')",
     "newer datasette-memory"),
    ("DELETE FROM _sqlite_migrations WHERE name LIKE 'm009%'", "older datasette-memory"),
])
def test_another_schema_cannot_be_verified(rich, change, message):
    tamper(rich, change)
    before = digest_of(rich)
    result = run_cli("--db", str(rich))
    assert result.exit_code == 2 and message in result.output
    assert digest_of(rich) == before and not pathlib.Path(f"{rich}.verified.json").exists()


def test_files_that_are_not_memory_files_cannot_be_verified(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all " * 100)
    plain = tmp_path / "plain.db"
    sqlite3.connect(plain).execute("CREATE TABLE t (a)").connection.close()
    for path, message in ((text, "not a SQLite database"), (plain, "not a datasette-memory file")):
        result = run_cli("--db", str(path))
        assert result.exit_code == 2 and message in result.output, result.output


def test_the_read_only_connection_cannot_write(rich):
    conn = open_read_only(rich)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            conn.execute("CREATE TABLE x (a)")
    finally:
        conn.close()


def verify_in_a_read_only_folder(folder: pathlib.Path, path: pathlib.Path) -> tuple[int, str] | None:
    """
    Run ``verify --db path`` where ``folder`` (holding ``path``) cannot be
    written: by mode bits for an ordinary user; for root, who writes through
    mode bits, in a mount namespace of its own where the folder is mounted
    read-only. None if neither can be arranged.

    :return: ``(exit code, output)``
    """
    if os.geteuid() != 0:
        for file in folder.iterdir():
            file.chmod(0o444)
        folder.chmod(0o555)
        try:
            result = run_cli("--db", str(path))
            return result.exit_code, result.output
        finally:
            folder.chmod(0o755)
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$1" -m datasette_memory verify --db "$2"'
    done = subprocess.run([unshare, "--mount", "sh", "-c", script, str(folder), sys.executable, str(path)],
                          capture_output=True, text=True, cwd=pathlib.Path(__file__).parent.parent)
    if done.returncode != 0 and ("unshare" in done.stderr or "mount" in done.stderr):
        return None  # no mount namespaces here (an unprivileged container)
    return done.returncode, done.stdout + done.stderr


def test_a_read_only_copy_verifies(rich_template, tmp_path):
    folder = tmp_path / "read-only"
    path = copy_memory(rich_template, folder / "memory.db")
    before = sorted(p.name for p in folder.iterdir())
    outcome = verify_in_a_read_only_folder(folder, path)
    if outcome is None:
        # Root without mount namespaces: the folder cannot be made read-only to
        # us, so check what can be: verify writes nothing to the file itself
        digest = digest_of(path)
        verify_ok(path)
        assert digest_of(path) == digest
        return
    exit_code, output = outcome
    assert exit_code == 0, output
    assert f"{path}: intact (full check" in output
    assert sorted(p.name for p in folder.iterdir()) == before == ["memory.db", "memory.db.head.json"]


def test_a_read_only_copy_whose_wal_cannot_be_indexed_cannot_be_verified(rich, tmp_path):
    "A -wal with changes the file lacks, and no -shm: SQLite cannot read it without writing one."
    writer = Memory.open(rich, project="p", config=LEXICAL)
    try:
        writer.append_event("only in the wal")
        folder = tmp_path / "read-only"
        path = copy_memory(rich, folder / "memory.db")
        (folder / "memory.db-shm").unlink()
    finally:
        writer.close()
    outcome = verify_in_a_read_only_folder(folder, path)
    if outcome is None:
        pytest.skip("no way to make a folder read-only for root here")
    exit_code, output = outcome
    assert exit_code == 2, output
    assert "write-ahead log (memory.db-wal) needs a folder this user can write to" in output


# --since-checkpoint


def grow(path: pathlib.Path, entities: int = 500) -> None:
    "1,000 more events (entities, then an observation each) touching one old entity too, then a checkpoint."
    memory = Memory.open(path, project="p", actor="claude", config=LEXICAL)
    memory.create_entities([{"name": f"new {i}", "entityType": "batch", "observations": []} for i in range(entities)])
    memory.add_observations([{"entityName": f"new {i}", "contents": [f"note {i}"]} for i in range(entities - 1)])
    memory.add_observations([{"entityName": "db", "contents": ["touched after the anchor"]}])
    memory.checkpoint("grown")
    memory.close()


@pytest.fixture
def grown(rich):
    "The rich file, verified clean in full, then grown by 1,000 events and a checkpoint."
    anchor = one(raw(rich), "SELECT max(id) FROM events WHERE kind = 'checkpoint'")
    verify_ok(rich)
    assert json.loads(pathlib.Path(f"{rich}.verified.json").read_text())["anchor_event"] == anchor
    before = one(raw(rich), "SELECT max(id) FROM events")
    grow(rich)
    assert one(raw(rich), "SELECT max(id) FROM events") == before + 1001
    return rich, anchor


def test_an_incremental_check_after_growth(grown):
    path, anchor = grown
    report = verify_ok(path, since_checkpoint=True)
    assert report["mode"] == f"since checkpoint at event {anchor}"
    assert [c["check"] for c in report["checks"]] == [
        "schema", "ledger chain", "head witness", "last clean check", "SQL audit chain", "replay", "event index", "project sizes", "origins"
    ]
    assert "1001 events since" in checks(report)["ledger chain"]["detail"]
    newest = one(raw(path), "SELECT max(id) FROM events")
    assert json.loads(pathlib.Path(f"{path}.verified.json").read_text())["anchor_event"] == newest, "the next check starts from the new checkpoint"
    result = run_cli("--db", str(path), "--since-checkpoint")
    assert result.exit_code == 0 and f"(since checkpoint at event {newest} check," in result.output


def test_an_edit_of_an_entity_touched_since_the_checkpoint_is_found_incrementally(grown):
    path, _ = grown
    conn = raw(path)
    row = one(conn, "SELECT id FROM observations WHERE content = 'postgres 17'")  # db was touched after the anchor
    conn.execute("UPDATE observations SET content = 'postgres 9' WHERE id = ?", [row])
    conn.close()
    report = verify_file(path, since_checkpoint=True)
    assert report["mode"].startswith("since checkpoint") and report["ok"] is False
    assert any(p["table"] == "observations" and p["row"] == row for p in problems(report))
    result = run_cli("--db", str(path), "--since-checkpoint")
    assert result.exit_code == 1 and f"observations row {row}: expected nothing" in result.output


def test_a_forged_checkpoint_summary_is_found_incrementally(grown):
    path, _ = grown
    conn = raw(path)
    drop(conn, "checkpoints_refuse_update")
    conn.execute("UPDATE checkpoints SET summary = 'all done, nothing to review' WHERE summary = 'grown'")
    row = one(conn, "SELECT id FROM checkpoints WHERE summary = 'all done, nothing to review'")
    conn.close()
    report = verify_file(path, since_checkpoint=True)
    assert report["ok"] is False and any(p["table"] == "checkpoints" and p["row"] == row for p in problems(report))


def test_an_edit_of_an_untouched_old_row_needs_the_full_check(grown):
    """
    ``--since-checkpoint`` promises only what changed after the anchor: the
    chains since, the checkpoints since, and the entities, claims and facts the
    new events touched. An old row no new event touched (here an observation of
    ``payments``) is not looked at; the full check finds it.
    """
    path, _ = grown
    conn = raw(path)
    row = one(conn, "SELECT id FROM observations WHERE content = 'stripe'")
    conn.execute("UPDATE observations SET content = 'paypal' WHERE id = ?", [row])
    conn.close()
    full = verify_file(path)
    assert full["ok"] is False and any(p["table"] == "observations" and p["row"] == row for p in problems(full))


def test_without_a_clean_record_since_checkpoint_checks_everything(rich):
    report = verify_ok(rich, since_checkpoint=True)
    assert report["mode"] == "full" and "no clean full check was recorded" in report["note"]


def test_a_record_of_another_file_is_not_trusted(rich, tmp_path):
    other = copy_memory(rich, tmp_path / "other" / "memory.db")
    conn = raw(other)
    conn.execute("UPDATE memory_meta SET value = 'another machine' WHERE key = 'machine_id'")
    conn.close()
    witness_path(other).unlink()
    assert verify_ok(other)["recorded"]  # a clean check of the other file
    shutil.copyfile(f"{other}.verified.json", f"{rich}.verified.json")
    report = verify_file(rich, since_checkpoint=True)
    assert report["mode"] == "full", "it anchors nothing"
    assert [c["check"] for c in report["checks"] if not c["ok"]] == ["last clean check"], "and it is reported, like a witness of another file"
    assert all(p["found"].startswith("other file: the last clean check belongs to another memory file") for p in problems(report))


def test_a_rehashed_ledger_is_found_by_the_incremental_check(grown):
    "Rewriting history from before the anchor changes the anchor's hash: the incremental check refuses the anchor."
    path, anchor = grown
    conn = raw(path)
    rehash_from(conn, login_event(conn), new=json.dumps("has a logout page"))
    conn.close()
    report = verify_file(path, since_checkpoint=True)
    chain = checks(report)["ledger chain"]
    assert report["ok"] is False and chain["problems"][0]["row"] == anchor


# Clean files of every kind pass


def every_kind_of_change(path: pathlib.Path, reviewer):
    "Each step a kind of change through the core or the SQL tools; yields its label after it."
    memory = Memory.open(path, project="p", actor="claude", session="s1", config=LEXICAL)
    person = Memory.open(path, project="p", actor="ignored", config=LEXICAL)
    tools = SqlTools(path, actor="agent", session="s1")
    try:
        memory.create_entities([
            {"name": "auth", "entityType": "service", "observations": ["uses postgres", "it's \"quoted\""]},
            {"name": "foo/bar", "entityType": "path", "observations": ["ünïcödé 🎉", "x" * 5_000]},
            {"name": "db", "entityType": "database", "observations": []},
        ])
        yield "entities created"
        memory.create_relations([{"from": "auth", "to": "db", "relationType": "uses"},
                                 {"from": "db", "to": "auth", "relationType": "serves"},
                                 {"from": "auth", "to": "nowhere", "relationType": "mentions"},
                                 {"from": "foo/bar", "to": "auth", "relationType": "configures"}])
        yield "relations created, one to an entity that does not exist"
        memory.add_observations([{"entityName": "db", "contents": ["postgres 16", "port 5432"]}])
        yield "observations added"
        memory.update_observation("db", "postgres 16", "postgres 17")
        yield "an observation updated"
        memory.delete_observations([{"entityName": "db", "observations": ["port 5432"]}])
        memory.add_observations([{"entityName": "db", "contents": ["port 5432"]}])
        yield "an observation deleted and added again"
        memory.delete_relations([{"from": "db", "to": "auth", "relationType": "serves"}])
        yield "a relation deleted"
        memory.delete_entities(["foo/bar"])
        yield "an entity with observations and relations deleted"
        memory.create_entities([{"name": "foo/bar", "entityType": "other type", "observations": ["born again"]}])
        memory.create_relations([{"from": "foo/bar", "to": "auth", "relationType": "configures"}])
        yield "an entity re-created with the same name, and its relation"
        memory.rename_entity("auth", "identity")
        yield "a rename repointed relations both ways"
        memory.rename_entity("identity", "auth")
        yield "renamed back to its own alias"
        memory.create_entities([{"name": "login", "entityType": "service", "observations": ["uses postgres", "sessions"]}])
        memory.create_relations([{"from": "login", "to": "db", "relationType": "uses"},
                                 {"from": "login", "to": "cache", "relationType": "uses"}])
        memory.merge_entity("login", "auth")
        yield "a merge dropped a duplicate relation, repointed another, merged observations"
        memory.rename_entity("auth", "gateway")
        memory.merge_entity("gateway", "db")
        yield "a renamed entity merged: its aliases follow"
        memory.delete_entities(["db"])
        yield "an entity with aliases deleted"
        memory.import_graph([{"name": "imported", "entityType": "t", "observations": ["from a file"]},
                             {"name": "foo/bar", "entityType": "other type", "observations": ["born again", "more"]}],
                            [{"from": "imported", "to": "foo/bar", "relationType": "feeds"}])
        yield "a graph imported"
        memory.rename_entity("imported", "ingested")
        yield "a graph imported, an entity renamed"
        claim = memory.governed.propose_claim("foo/bar", "is", "config", evidence=["text", {"entityName": "foo/bar", "observation": "more"}])["claim"]
        memory.governed.propose_claim("foo/bar", "is", "config", evidence=["more text"])
        yield "a claim proposed and given more evidence"
        person.governed.reject_claim(reviewer, claim["id"], "not yet")
        person.governed.reopen_claim(reviewer, claim["id"], "on second thought")
        fact = person.governed.approve_claim(reviewer, claim["id"], "checked", valid_from="2020-01-01")["fact"]
        yield "a claim rejected, reopened, approved"
        newer = person.governed.supersede_fact(reviewer, fact["id"], "settings", "renamed", effective="2021-01-01")["fact"]
        person.governed.invalidate_fact(reviewer, newer["id"], "gone")
        person.governed.revalidate_fact(reviewer, newer["id"], "back")
        person.governed.record_fact(reviewer, "ingested", "owner", "team", "org chart", valid_from="2022-01-01")
        yield "facts superseded, invalidated, revalidated, recorded"
        memory.checkpoint("a checkpoint")
        memory.append_event("a decision", "decision")
        yield "a checkpoint and a note"
        tools.write_query("CREATE TABLE scratch (id INTEGER PRIMARY KEY, v TEXT)")
        tools.write_query("INSERT INTO scratch (v) VALUES ('a'), ('b')")
        tools.destructive_query("DELETE FROM scratch WHERE v = 'a'", "prune")
        tools.create_view("scratch_view", "SELECT * FROM scratch", "the scratch rows")
        tools.read_query("SELECT count(*) FROM observations")
        with pytest.raises(SqlRefused):
            tools.write_query("UPDATE observations SET content = 'x'")
        yield "SQL tool calls, one refused"
        elsewhere = Memory.open(path, project="q", actor="bob", config=LEXICAL)
        elsewhere.create_entities([{"name": "auth", "entityType": "same name, other project", "observations": ["q"]}])
        elsewhere.checkpoint("q's checkpoint")
        elsewhere.close()
        yield "another project with the same names"
    finally:
        memory.close()
        person.close()


def test_every_kind_of_change_verifies_clean(tmp_path, reviewer):
    path = tmp_path / "memory.db"
    for step in every_kind_of_change(path, reviewer):
        full = verify_file(path)
        assert full["ok"], f"after {step}: {json.dumps(problems(full), default=str)[:2000]}"
        incremental = verify_file(path, since_checkpoint=True)
        assert incremental["ok"], f"after {step} (since checkpoint): {json.dumps(problems(incremental), default=str)[:2000]}"
    conn = raw(path)
    assert one(conn, "SELECT count(*) FROM memory_aliases") > 0 and one(conn, "SELECT count(*) FROM memory_deleted_fts") > 0
    conn.close()
    assert run_cli("--db", str(path)).exit_code == 0
