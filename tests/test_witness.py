"""The head witness's life: checked at every door's start, kept apart from agents' notes, extended by concurrent writers, acknowledged only by a person."""

import json
import os
import pathlib
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.cli import cli
from datasette_memory.core import witness
from datasette_memory.core.errors import InvalidInput
from datasette_memory.core.ledger import RECORDED_KINDS
from datasette_memory.governed.gate import Reviewer, ReviewRequired
from datasette_memory.history.file_check import verify_file
from datasette_memory.history.replay import HANDLERS

from .governance import issue_reviewer
from .serving import serving
from .tampering import NEWEST, one, raw, triggers_dropped

LEXICAL = Config(search=SearchSettings(semantic=False))
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1"}


def mcp_start(path: pathlib.Path, *args: str) -> list[str]:
    "What ``datasette-memory mcp`` says on stderr before its first message (its stdin closed at once)."
    done = subprocess.run([sys.executable, "-m", "datasette_memory", "mcp", "--db", str(path), *args],
                          input="", capture_output=True, text=True, env=ENV, timeout=60)
    return done.stderr.splitlines()


def hook_tool(path: pathlib.Path, folder: pathlib.Path) -> CliRunner:
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    payload = {"session_id": "s-1", "cwd": str(folder), "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a"}}
    return CliRunner().invoke(cli, ["hook", "tool", "--db", str(path), "--project", "p"], input=json.dumps(payload))


# Every door checks the witness at its start, and says so in one line


def test_mcp_says_at_its_start_that_the_file_holds_what_its_witness_saw(built):
    [line] = [line for line in mcp_start(built) if line.startswith("Witness: ")]
    assert line.startswith("Witness: the file holds what its witness saw (agrees: the ledger contains the head the witness saw")


def test_mcp_serve_hooks_and_import_say_a_tampered_file_at_their_start_and_record_it(tampered, tmp_path):
    [line] = [line for line in mcp_start(tampered) if line.startswith("Witness: ")]
    assert line.startswith("Witness: TAMPERING SUSPECTED: shorter: the ledger ends at event ") and "/-/memory/integrity" in line
    [divergence] = witness.unacknowledged(witness.read(tampered))
    assert divergence["noticed_by"] == "the start of mcp", "recorded, so no later write erases it"

    result = hook_tool(tampered, tmp_path / "app")
    assert result.exit_code == 0 and "datasette-memory hook tool: Witness: TAMPERING SUSPECTED: " in result.output
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"type": "entity", "name": "x", "entityType": "t", "observations": []}))
    result = CliRunner().invoke(cli, ["import", str(source), "--db", str(tampered), "--project", "p"])
    assert result.exit_code == 0 and "Witness: TAMPERING SUSPECTED: " in result.output
    with serving(tampered) as (_, lines):
        assert any(line.startswith("Witness: TAMPERING SUSPECTED: ") for line in lines)
    assert len(witness.unacknowledged(witness.read(tampered))) == 1, "the same divergence, recorded once"


def test_a_hook_on_a_clean_file_says_nothing_of_the_witness(built, tmp_path):
    result = hook_tool(built, tmp_path / "app")
    assert result.exit_code == 0 and "Witness" not in result.output


def test_temporary_side_files_a_killed_writer_left_are_removed_at_the_next_start(built):
    folder = built.parent
    leftovers = [".memory.db.head.json.4242.1a2b3c4d.tmp", "memory.db.head.json.4242.tmp", ".memory.db.verified.json.7.00ff00ff.tmp"]
    kept = ["notes.tmp", ".other.db.head.json.1.tmp", "memory.db.head.json"]
    for name in leftovers:
        (folder / name).write_text("{")
    mcp_start(built)
    assert not [name for name in leftovers if (folder / name).exists()]
    assert all((folder / name).exists() for name in kept if name != "notes.tmp" and not name.startswith(".other"))
    (folder / "notes.tmp").write_text("mine")
    (folder / ".other.db.head.json.1.tmp").write_text("another file's")
    mcp_start(built)
    assert (folder / "notes.tmp").read_text() == "mine" and (folder / ".other.db.head.json.1.tmp").exists()


# A person acknowledges; nothing else clears it


def test_a_person_acknowledges_with_a_reason_and_the_record_stays(tampered):
    memory = Memory.open(tampered, project="p", config=LEXICAL)
    memory.append_event("written after the rewind")
    assert verify_file(tampered)["ok"] is False
    [divergence] = witness.unacknowledged(witness.read(tampered))
    result = memory.acknowledge_divergences(issue_reviewer("alice"), "restored from last night's backup")
    assert [d["row"] for d in result["acknowledged"]] == [divergence["row"]]
    event = result["event"]
    assert (event["kind"], event["actor"], event["new"]["reason"]) == ("acknowledge_divergence", "alice", "restored from last night's backup")
    seen = witness.read(tampered)
    assert witness.unacknowledged(seen) == [] and len(seen["divergences"]) == 1, "acknowledged, never dropped"
    assert seen["divergences"][0]["acknowledged"]["event_id"] == event["id"]
    assert (seen["event_id"], seen["hash"]) == (event["id"], event["hash"]), "the witness takes the file as it is now"
    report = verify_file(tampered)
    assert report["ok"] is True
    detail = [c for c in report["checks"] if c["check"] == "head witness"][0]["detail"]
    assert "1 earlier divergence acknowledged by a person" in detail
    memory.append_event("and life goes on")
    memory.close()
    assert verify_file(tampered)["ok"] is True


def test_only_a_person_the_gate_issued_can_acknowledge(tampered):
    memory = Memory.open(tampered, project="p", config=LEXICAL)
    before = one(raw(tampered), "SELECT count(*) FROM events")
    with pytest.raises(ReviewRequired):
        memory.acknowledge_divergences(Reviewer("mallory"), "trust me")
    with pytest.raises(InvalidInput, match="reason: must not be empty"):
        memory.acknowledge_divergences(issue_reviewer("alice"), "  ")
    memory.close()
    assert one(raw(tampered), "SELECT count(*) FROM events") == before
    assert witness.unacknowledged(witness.read(tampered)) or verify_file(tampered)["ok"] is False


def test_nothing_to_acknowledge_is_a_clear_error(built):
    memory = Memory.open(built, project="p", config=LEXICAL)
    with pytest.raises(InvalidInput, match="there is no divergence to acknowledge"):
        memory.acknowledge_divergences(issue_reviewer("alice"), "just in case")
    memory.close()


def test_an_acknowledgement_forged_into_the_file_clears_nothing(tampered):
    "The acknowledgement the witness trusts is the one it recorded, not an event someone wrote into the file."
    memory = Memory.open(tampered, project="p", config=LEXICAL)
    with pytest.raises(InvalidInput, match="kind: 'acknowledge_divergence' is a kind memory records"):
        memory.append_event("all fine", kind="acknowledge_divergence")
    memory.close()
    conn = raw(tampered)
    conn.execute("UPDATE memory_meta SET value = value WHERE key = 'machine_id'")
    with triggers_dropped(conn, "events_refuse_update"):
        conn.execute("UPDATE events SET kind = 'acknowledge_divergence' WHERE id = (SELECT max(id) FROM events)")
    conn.close()
    assert verify_file(tampered)["ok"] is False


def test_an_acknowledgement_rewound_out_of_the_ledger_is_reported(tampered):
    memory = Memory.open(tampered, project="p", config=LEXICAL)
    memory.append_event("after the rewind")
    event = memory.acknowledge_divergences(issue_reviewer("alice"), "known repair")["event"]
    memory.close()
    conn = raw(tampered)
    with triggers_dropped(conn, "events_refuse_delete"):
        conn.execute("DELETE FROM memory_event_names WHERE event_id = ?", [event["id"]])
        conn.execute("DELETE FROM events WHERE id = ?", [event["id"]])
    conn.close()
    report = verify_file(tampered)
    found = [p["found"] for c in report["checks"] if c["check"] == "head witness" for p in c["problems"]]
    assert any(f"the acknowledgement (event {event['id']}) the witness recorded is not in the ledger" in f for f in found)


# An agent's note never passes for one of memory's own events


def test_every_kind_replay_applies_is_reserved():
    assert set(HANDLERS) <= RECORDED_KINDS and witness.ACKNOWLEDGE_KIND in RECORDED_KINDS


@pytest.mark.parametrize("kind", sorted(RECORDED_KINDS) + ["Checkpoint", " approve_claim "])
def test_append_event_refuses_the_kinds_memory_records(built, kind):
    memory = Memory.open(built, project="p", config=LEXICAL)
    before = one(memory.conn, "SELECT count(*) FROM events")
    with pytest.raises(InvalidInput, match=r"kind: .* is a kind memory records for its own changes; use another label"):
        memory.append_event("pretend", kind=kind)
    assert one(memory.conn, "SELECT count(*) FROM events") == before
    memory.close()
    assert verify_file(built)["ok"] is True


# Writers in several processes at once


WRITER = """
import sys
from datasette_memory import Config, Memory, SearchSettings
memory = Memory.open(sys.argv[1], project="p", config=Config(search=SearchSettings(semantic=False)))
for i in range(int(sys.argv[2])):
    memory.append_event(f"note {i} from {sys.argv[3]}")
memory.close()
"""


def run_writers(path: pathlib.Path, processes: int, each: int) -> None:
    started = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(each), f"w{n}"], env=ENV) for n in range(processes)]
    assert [process.wait(timeout=120) for process in started] == [0] * processes


def test_concurrent_writers_keep_the_witness_with_the_head_and_see_no_divergence(built):
    run_writers(built, 4, 40)
    seen = witness.read(built)
    head = raw(built).execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    assert seen["divergences"] == [] and (seen["event_id"], seen["hash"]) == head
    assert verify_file(built)["ok"] is True


def test_concurrent_writers_never_lose_a_recorded_divergence(tampered):
    head_before = one(raw(tampered), "SELECT max(id) FROM events") + NEWEST
    run_writers(tampered, 4, 30)
    seen = witness.read(tampered)
    [divergence] = witness.unacknowledged(seen)
    assert (divergence["row"], seen["event_id"]) == (head_before, head_before), "recorded once, and the witness stayed"


# The memory file's folder is never made up


@pytest.mark.parametrize("command", [["mcp"], ["import", "-"], ["export"], ["serve"]])
def test_a_db_in_a_folder_that_does_not_exist_is_an_error_naming_it(tmp_path, command):
    path = tmp_path / "typo" / "memory.db"
    result = CliRunner().invoke(cli, [*command, "--db", str(path)], input="")
    assert result.exit_code == 1
    assert f"the folder {tmp_path / 'typo'} does not exist; check --db for a typo" in result.output
    assert not (tmp_path / "typo").exists()


def test_the_environment_variable_is_checked_the_same_way(tmp_path, monkeypatch):
    monkeypatch.setenv("DATASETTE_MEMORY_DB", str(tmp_path / "typo" / "memory.db"))
    result = CliRunner().invoke(cli, ["export"])
    assert result.exit_code == 1 and "check $DATASETTE_MEMORY_DB for a typo" in result.output
    assert not (tmp_path / "typo").exists()


def test_the_resume_context_reports_the_newest_event_deleted_with_its_trigger_dropped(built):
    "The red team's case: the trigger dropped, the last event deleted; the window's chain still links, the witness does not agree."
    conn = raw(built)
    conn.execute("DROP TRIGGER events_refuse_delete")
    top = one(conn, "SELECT max(id) FROM events")
    conn.execute("DELETE FROM memory_event_names WHERE event_id = ?", [top])
    conn.execute("DELETE FROM events WHERE id = ?", [top])
    conn.close()
    memory = Memory.open(built, project="p", config=LEXICAL)
    chain = memory.resume_context()["chain"]
    memory.close()
    assert chain["ok"] is False and chain["witness"] == "shorter"
    assert chain["summary"].startswith(f"TAMPERING SUSPECTED: shorter: the ledger ends at event {top - 1}, but the witness saw event {top}")


def test_an_acknowledgement_leaves_the_witness_writer_running(tampered, monkeypatch):
    "The acknowledgement's own commit queues a witness write; the writer thread must not trip over the acknowledged file."
    crashes: list[threading.ExceptHookArgs] = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    monkeypatch.setattr(witness, "PAUSE_SECONDS", 0.5)  # the writer's pause after a write, long enough to ack within
    memory = Memory.open(tampered, project="p", config=LEXICAL)
    memory.append_event("written after the rewind")
    assert witness.flush()  # the divergence is written; the writer pauses before its next write
    memory.acknowledge_divergences(issue_reviewer("alice"), "restored from last night's backup")
    assert witness.flush()
    memory.close()
    assert [f"{c.exc_type.__name__}: {c.exc_value}" for c in crashes] == []
    assert verify_file(tampered)["ok"] is True
