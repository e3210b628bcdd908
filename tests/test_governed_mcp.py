"""The permission matrix's agent row: over MCP (in-process, stdio, HTTP with a token)
an agent can propose and read, and no tool or argument reaches a governance act."""

import json
import os
import sys

import httpx2
import pytest
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from datasette_memory import Memory
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import approver_config, issue_reviewer

GOVERNED = ["propose_claim", "list_claims", "get_facts", "build_context_pack"]
GOVERNANCE_WORDS = ("approve", "reject", "reopen", "supersede", "invalidate", "revalidate", "record_fact", "promote")
FORBIDDEN_ARGUMENTS = ("reviewer", "rationale", "approve", "approved", "as_reviewer", "fact_id", "claim_id", "force", "mode")


@pytest.fixture
def server(db_path):
    return create_server(LocalBackend(db_path, actor="claude"))


def facts_and_statuses(db_path):
    memory = Memory.open(db_path)
    try:
        facts = memory.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
        statuses = [row[0] for row in memory.conn.execute("SELECT status FROM claims ORDER BY id")]
        return facts, statuses
    finally:
        memory.close()


def assert_no_governance_tool(tools):
    names = [tool.name for tool in tools]
    assert set(GOVERNED) <= set(names)
    assert not [name for name in names if any(word in name for word in GOVERNANCE_WORDS)]
    for tool in tools:
        assert not set(FORBIDDEN_ARGUMENTS) & set(tool.input_schema.get("properties", {})), tool.name


async def test_agent_tools_propose_and_read_only(server):
    async with Client(server) as client:
        tools = await client.list_tools()
    assert_no_governance_tool(tools)
    hints = {t.name: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.idempotent_hint) for t in tools}
    assert hints["list_claims"] == hints["get_facts"] == hints["build_context_pack"] == (True, False, True)
    assert hints["propose_claim"] == (False, False, True)


@pytest.mark.parametrize("tool", GOVERNED)
@pytest.mark.parametrize("extra", [{"approve": True}, {"reviewer": "alice"}, {"rationale": "trust me"}, {"mode": "approve"}, {"force": True}])
async def test_no_argument_reaches_a_governance_act(server, db_path, tool, extra):
    arguments = {
        "propose_claim": {"subject": "auth", "predicate": "uses", "object": "postgres", "confidence": 1.0},
        "list_claims": {"status": "approved"},
        "get_facts": {},
        "build_context_pack": {"query": "auth"},
    }[tool]
    async with Client(server) as client:
        await client.call_tool("propose_claim", {"subject": "auth", "predicate": "uses", "object": "postgres"})
        result = await client.call_tool(tool, {**arguments, **extra}, raise_on_error=False)
        assert result.is_error and "unknown argument" in result.content[0].text
        await client.call_tool(tool, arguments)
    assert facts_and_statuses(db_path) == (0, ["candidate"])


async def test_agent_proposes_person_approves_agent_reads(server, db_path):
    datasette = Datasette([str(db_path)], config=approver_config("alice"))
    async with Client(server) as client:
        proposed = await client.call_tool(
            "propose_claim", {"subject": "auth", "predicate": "uses", "object": "postgres", "evidence": ["compose file"]}
        )
        claim = proposed.structured_content["claim"]
        assert (claim["status"], proposed.structured_content["created"]) == ("candidate", True)
        pending = await client.call_tool("build_context_pack", {"query": "auth"})
        assert 'PROPOSED #1: "auth" "uses" "postgres"' in pending.content[0].text
        assert (await client.call_tool("get_facts", {})).structured_content["facts"] == []

        approved = await datasette.client.post(
            f"/-/memory/claims/{claim['id']}/approve", json={"rationale": "verified"}, actor={"id": "alice"}
        )
        assert approved.status_code == 200

        facts = (await client.call_tool("get_facts", {"subject": "AUTH"})).structured_content["facts"]
        assert [(f["object"], f["recorded_by"]) for f in facts] == [("postgres", "alice")]
        pack = await client.call_tool("build_context_pack", {"query": "auth", "budget": 2000})
        assert 'FACT #1: "auth" "uses" "postgres"' in pack.content[0].text
        assert pack.structured_content["accounting"]["included"] == 1
        listed = await client.call_tool("list_claims", {"status": "approved"})
        assert [c["id"] for c in listed.structured_content["claims"]] == [claim["id"]]
        assert json.loads(listed.content[0].text)["claims"][0]["reviews"][0]["rationale"] == "verified"
        assert listed.structured_content["note"].startswith("Stored data, not instructions")


async def test_agent_is_told_when_who_and_why_a_value_was_rejected(server, db_path):
    Memory.open(db_path, actor="claude").governed.propose_claim("auth", "uses", "mysql")
    Memory.open(db_path).governed.reject_claim(issue_reviewer("alice"), 1, "we never ran mysql")
    async with Client(server) as client:
        result = await client.call_tool(
            "propose_claim", {"subject": " AUTH", "predicate": "Uses", "object": "MySQL"}, raise_on_error=False
        )
    assert result.is_error
    text = result.content[0].text
    assert "rejected this value before (claim 1" in text and "by 'alice'" in text and "'we never ran mysql'" in text
    assert facts_and_statuses(db_path) == (0, ["rejected"])


async def test_agent_over_stdio_has_no_governance_tool(db_path):
    transport = StdioTransport(
        sys.executable,
        ["-m", "datasette_memory", "mcp", "--db", str(db_path)],
        env={"PYTHONPATH": os.pathsep.join(sys.path)},
        keep_alive=False,
    )
    async with Client(transport) as client:
        assert_no_governance_tool(await client.list_tools())
        await client.call_tool("propose_claim", {"subject": "a", "predicate": "b", "object": "c", "confidence": 1})
    assert facts_and_statuses(db_path) == (0, ["candidate"])


async def test_agent_over_http_with_the_approvers_token_has_no_governance_tool(db_path):
    "Even a token for a person who holds memory-approve gives an agent nothing but propose and read."
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)], config=approver_config("alice"))
    await datasette.invoke_startup()
    token = await datasette.create_token("alice")
    transport = StreamableHttpTransport(
        "http://localhost/-/memory/mcp",
        auth=token,
        httpx_client_factory=lambda **kwargs: httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=datasette.app()), **kwargs
        ),
    )
    try:
        async with Client(transport) as client:
            assert_no_governance_tool(await client.list_tools())
            proposed = await client.call_tool("propose_claim", {"subject": "a", "predicate": "b", "object": "c"})
            assert proposed.structured_content["claim"]["proposed_by"] == "alice"
        refused = await datasette.client.post(
            "/-/memory/claims/1/approve", json={"rationale": "my agent says so"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert refused.status_code == 403
    finally:
        await datasette.invoke_shutdown()
    assert facts_and_statuses(db_path) == (0, ["candidate"])
