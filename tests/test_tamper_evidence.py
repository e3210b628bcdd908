"""
Evidence that only accumulates: a file tampered with stays reported, whatever is written after.

Each of four ways to undo the ledger's promise (a rewind, a consistent rewrite,
a re-hashed SQL audit chain, a rewind with the witness deleted) is done with
plain sqlite3; then agents and people make ordinary writes through every door
(MCP over stdio, MCP over HTTP, the pages, the hooks, import), and ``verify``,
the ``verify_chain`` tool and the resume context must still report it, until a
person acknowledges it with a reason.
"""

import json
import os
import pathlib
import sys

import httpx2
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from datasette_memory import Memory
from datasette_memory.cli import cli
from datasette_memory.core import witness
from datasette_memory.core.migrations import AUDIT_HASHED
from datasette_memory.core.ledger import chained_hash
from datasette_memory.history.file_check import verify_file
from datasette_memory.sqltools import SqlTools

from .tampering import LEXICAL, NEWEST, build, entity, one, raw, rehash_from, rewind, triggers_dropped

WRITERS = {"permissions": {"memory-curate": {"id": ["carol"]}}, "plugins": {"datasette-memory": {"mcp_tools": "all"}}}
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


# Four ways to undo the promise, each consistent enough that only the records beside the file can tell (rewind is tampering.py's)


def rewrite(path: pathlib.Path) -> None:
    "Edit event 2 (the observation), its row and the checkpoint's hash, and re-hash the chain forward."
    conn = raw(path)
    rehash_from(conn, 2, new=json.dumps("runs on port 8080"))
    conn.execute("UPDATE observations SET content = 'runs on port 8080' WHERE content = 'runs on port 80'")
    with triggers_dropped(conn, "checkpoints_refuse_update"):
        conn.execute("UPDATE checkpoints SET head_hash = (SELECT hash FROM events WHERE id = head_event_id)")
    conn.close()


def rehash_audit(path: pathlib.Path) -> None:
    "Edit the first SQL audit row and re-hash the audit chain forward."
    conn = raw(path)
    with triggers_dropped(conn, "sql_audit_refuse_update"):
        prev_hash = "0" * 64
        rows = conn.execute(f"SELECT id, {', '.join(AUDIT_HASHED)} FROM sql_audit ORDER BY id").fetchall()
        for id, *values in rows:
            row = dict(zip(AUDIT_HASHED, values))
            if id == 1:
                row["arguments"] = json.dumps({"query": "SELECT 'nothing to see'"})
            prev_hash = chained_hash(row, prev_hash_of := prev_hash)
            conn.execute(f"UPDATE sql_audit SET {', '.join(f'{c} = ?' for c in AUDIT_HASHED)}, prev_hash = ?, hash = ? WHERE id = ?",
                         [row[c] for c in AUDIT_HASHED] + [prev_hash_of, prev_hash, id])
    conn.close()


def rewind_and_delete_the_witness(path: pathlib.Path) -> None:
    "A rewind, and the head witness deleted: the last clean check's record still saw the old head."
    rewind(path)
    witness.witness_path(path).unlink()


ATTACKS = {"rewind": rewind, "rewrite": rewrite, "audit rehash": rehash_audit, "rewind, witness deleted": rewind_and_delete_the_witness}
EVIDENCE = {"head witness", "last clean check"}


def failing(path: pathlib.Path) -> set[str]:
    "The checks ``verify`` fails on the file."
    report = verify_file(path)
    return {check["check"] for check in report["checks"] if not check["ok"]}


# The doors: each makes ordinary writes as an agent or a person would


def stdio_client(path: pathlib.Path) -> Client:
    return Client(StdioTransport(
        sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(path), "--project", "p", "--tools", "all"],
        env={"PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1"}, keep_alive=False,
    ))


async def served(path: pathlib.Path) -> Datasette:
    datasette = Datasette([str(path)], config=WRITERS)
    await datasette.invoke_startup()
    return datasette


def http_client(datasette: Datasette, token: str) -> Client:
    return Client(StreamableHttpTransport(
        "http://localhost/-/memory/mcp?tools=all", auth=token,
        httpx_client_factory=lambda **kwargs: httpx2.AsyncClient(transport=httpx2.ASGITransport(app=datasette.app()), **kwargs),
    ))


async def agent_calls(client: Client, door: str) -> None:
    "An agent's ordinary calls: writes to the graph and the ledger, and a SQL read (an audit row)."
    await client.call_tool("create_entities", {"entities": [entity(f"{door}-1", "made by an agent")], "project": "p"})
    await client.call_tool("add_observations", {"observations": [{"entityName": f"{door}-1", "contents": ["more"]}], "project": "p"})
    await client.call_tool("append_event", {"content": f"worked through {door}", "project": "p"})
    await client.call_tool("read_query", {"query": "SELECT count(*) FROM entities", "project": "p"})


async def through_stdio(path: pathlib.Path) -> None:
    async with stdio_client(path) as client:
        await agent_calls(client, "stdio")


async def through_http(path: pathlib.Path) -> None:
    datasette = await served(path)
    async with http_client(datasette, await datasette.create_token("agent")) as client:
        await agent_calls(client, "http")
    await datasette.invoke_shutdown()


async def through_pages(path: pathlib.Path) -> None:
    "A curator corrects an observation on the entity page, confirming first."
    datasette = await served(path)
    page = "/-/memory/entity/edit-observation?project=p&name=svc-0&index=0"
    fields = {"old": "obs 0", "new": "obs 0, corrected by a person"}
    for step in ("confirm", "apply"):
        response = await datasette.client.post(page, data={**fields, "step": step}, actor={"id": "carol"}, headers=SAME_SITE)
        assert response.status_code in (200, 302), response.text
    await datasette.invoke_shutdown()


async def through_hooks(path: pathlib.Path) -> None:
    "A session's hooks: its start, a prompt, a tool call (each its own process's work, run in process here)."
    folder = path.parent / "app"
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    base = {"session_id": "s-1", "cwd": str(folder), "transcript_path": str(folder / "t.jsonl")}
    payloads = {
        "session-start": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "tool": {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit",
                 "tool_input": {"file_path": str(folder / "a.py"), "old_string": "1", "new_string": "2"}, "tool_response": {}},
    }
    for subcommand, payload in payloads.items():
        result = CliRunner().invoke(cli, ["hook", subcommand, "--db", str(path), "--project", "p"], input=json.dumps(payload))
        assert result.exit_code == 0, result.output


async def through_import(path: pathlib.Path) -> None:
    source = path.parent / "official.jsonl"
    source.write_text(json.dumps({"type": "entity", "name": "imported", "entityType": "service", "observations": ["from a file"]}))
    result = CliRunner().invoke(cli, ["import", str(source), "--db", str(path), "--project", "p"])
    assert result.exit_code == 0, result.output


DOORS = {"MCP over HTTP": through_http, "pages": through_pages, "import": through_import, "hooks": through_hooks,
         "MCP over stdio": through_stdio}


@pytest.mark.parametrize("checked_between", [False, True], ids=["checked only at the end", "checked after each door"])
@pytest.mark.parametrize("attack", ATTACKS)
async def test_no_ordinary_write_through_any_door_makes_a_tampered_file_pass(tmp_path, attack, checked_between):
    path = tmp_path / "memory.db"
    build(path)
    events_before = one(raw(path), "SELECT count(*) FROM events")
    ATTACKS[attack](path)
    assert failing(path) and failing(path) <= EVIDENCE, "the tamper was consistent: only the records beside the file tell"
    for name, door in DOORS.items():
        await door(path)
        if checked_between:
            assert failing(path) & EVIDENCE, f"after writes through {name}, verify passed"
    assert one(raw(path), "SELECT count(*) FROM events") > events_before, "the doors wrote"
    assert failing(path) & EVIDENCE
    async with stdio_client(path) as client:
        chain = (await client.call_tool("verify_chain", {})).structured_content
        resume = (await client.call_tool("get_resume_context", {"project": "p"})).structured_content
    assert chain["ok"] is False and {c["check"] for c in chain["checks"] if not c["ok"]} & EVIDENCE
    assert resume["chain"]["ok"] is False and resume["chain"]["summary"].startswith("TAMPERING SUSPECTED: ")


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_attack_alone_is_found_and_its_record_outlives_the_next_write(tmp_path, attack):
    "The core's own writer: a write after the tamper finds it and records it in the witness, where it stays."
    path = tmp_path / "memory.db"
    build(path)
    ATTACKS[attack](path)
    memory = Memory.open(path, project="p", config=LEXICAL)
    memory.append_event("an ordinary note")
    if attack == "audit rehash":
        SqlTools(path, project="p").read_query("SELECT 1")
    memory.close()
    divergences = witness.unacknowledged(witness.read(path))
    assert divergences and all(d["noticed_by"] == "a write" for d in divergences)
    pathlib.Path(f"{path}.verified.json").unlink()  # the last clean check's record gone too: the witness alone tells
    assert "head witness" in failing(path)


def test_a_witness_of_an_untouched_file_moves_on_with_every_write(tmp_path):
    path = tmp_path / "memory.db"
    build(path)
    memory = Memory.open(path, project="p", config=LEXICAL)
    event = memory.append_event("one more")
    memory.close()
    seen = witness.read(path)
    assert (seen["event_id"], seen["hash"], seen["divergences"]) == (event["id"], event["hash"], [])
    assert failing(path) == set()


def test_a_rewind_stops_the_witness_where_it_was(tmp_path):
    path = tmp_path / "memory.db"
    build(path)
    seen = witness.read(path)
    rewind(path)
    memory = Memory.open(path, project="p", config=LEXICAL)
    for i in range(NEWEST + 2):  # past the head the witness saw
        memory.append_event(f"note {i}")
    memory.close()
    after = witness.read(path)
    assert (after["event_id"], after["hash"]) == (seen["event_id"], seen["hash"]), "the witness did not move"
    [divergence] = after["divergences"]
    assert (divergence["log"], divergence["row"], divergence["hash"], divergence["status"]) == (
        "events", seen["event_id"], seen["hash"], "shorter")
    assert divergence["acknowledged"] is None


def test_verify_never_records_a_clean_check_of_a_file_that_lost_the_last_one(tmp_path):
    path = tmp_path / "memory.db"
    build(path)
    record = pathlib.Path(f"{path}.verified.json")
    before = record.read_text()
    rewind_and_delete_the_witness(path)
    witness_file = witness.witness_path(path)
    report = verify_file(path)
    assert report["ok"] is False and "recorded" not in report
    assert record.read_text() == before, "the last clean check still anchors the next"
    assert witness.unacknowledged(witness.read(path)), "and what verify found is in a witness now"
    record.unlink()
    assert witness_file.exists() and "head witness" in failing(path), "deleting the record afterwards erases nothing"
