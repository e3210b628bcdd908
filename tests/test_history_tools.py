"""memory_diff and get_provenance through MCP: within their byte budgets, saying what they left out."""

import json

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from datasette_memory import Memory
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import issue_reviewer


@pytest.fixture
def server(db_path):
    memory = Memory.open(db_path, actor="claude")
    memory.create_entities([{"name": f"svc-{i}", "entityType": "service", "observations": [f"note {i} " * 30]} for i in range(80)])
    memory.add_observations([{"entityName": "svc-0", "contents": [f"later note {i} " * 20 for i in range(60)]}])
    claim = memory.governed.propose_claim("svc-0", "port", "8080", evidence=[f"seen in file {i} " * 10 for i in range(50)])["claim"]
    memory.governed.approve_claim(issue_reviewer("alice"), claim["id"], "checked the config")
    memory.close()
    return create_server(LocalBackend(db_path, actor="claude"))


async def call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def size(result):
    return len(json.dumps(result, ensure_ascii=False).encode("utf-8"))


async def test_memory_diff_stays_within_its_budget_and_counts_what_it_left_out(server):
    async with Client(server) as client:
        diff = await call(client, "memory_diff", since=0, budget=3000)
    assert size(diff) <= 3000 + 500  # the changes fit the budget; the moments and counts are a fixed few hundred bytes
    accounting = diff["accounting"]
    assert accounting["changes"] == sum(diff["counts"].values()) and diff["counts"]["entity added"] == 80
    assert accounting["returned"] == len(diff["changes"]) < accounting["changes"]
    assert accounting["left_out_by_budget"] == accounting["changes"] - accounting["returned"]
    assert sum(accounting["left_out"].values()) == accounting["left_out_by_budget"]


@pytest.mark.parametrize("arguments", [{"entity": "svc-0"}, {"claim": 1}, {"fact": 1}])
async def test_provenance_stays_within_its_budget(server, arguments):
    async with Client(server) as client:
        whole = await call(client, "get_provenance", **arguments, budget=200_000)
        cut = await call(client, "get_provenance", **arguments, budget=1500)
    assert size(cut) <= 1500 < size(whole)
    assert sum(cut["accounting"]["left_out_by_budget"].values()) > 0
    assert sum(whole["accounting"]["left_out_by_budget"].values()) == 0


async def test_a_facts_provenance_names_the_person_the_claim_and_the_evidence(server):
    async with Client(server) as client:
        found = await call(client, "get_provenance", fact=1)
    assert (found["recorded"]["actor"], found["recorded"]["rationale"]) == ("alice", "checked the config")
    assert found["claim"]["proposed"]["actor"] == "claude"
    assert found["claim"]["evidence"][0]["text"].startswith("seen in file 0")


@pytest.mark.parametrize("arguments,message", [
    ({}, "give exactly one of entity, claim or fact"),
    ({"entity": "svc-0", "fact": 1}, "give exactly one of entity, claim or fact (got entity, fact)"),
    ({"entity": "nobody"}, "entity 'nobody': the ledger of project 'default' has no such entity now"),
    ({"claim": 99}, "claim 99 not found in project 'default'"),
])
async def test_provenance_refuses_unclear_questions(server, arguments, message):
    async with Client(server) as client:
        with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await client.call_tool("get_provenance", arguments)
