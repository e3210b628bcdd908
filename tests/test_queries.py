"""The stored governance queries in datasette.yaml, run through Datasette on a seeded memory file."""

import pytest
from datasette.app import Datasette

from datasette_memory import Memory, MemoryStoreError
from datasette_memory.plugin.resources import datasette_config
from datasette_memory.sqltools import SqlTools

from .governance import issue_reviewer

QUERIES = datasette_config("datasette.yaml", "memory")["databases"]["memory"]["queries"]


@pytest.fixture
def datasette(db_path):
    memory = Memory.open(db_path, project="payments", actor="claude")
    memory.create_entities(
        [
            {"name": "auth", "entityType": "service", "observations": ["port 8443"]},
            {"name": "legacy-cron", "entityType": "job", "observations": ["runs at 02:00"]},
            {"name": "gone", "entityType": "service", "observations": ["to be deleted"]},
        ]
    )
    memory.delete_entities(["gone"])
    reviewer = issue_reviewer()
    pending = memory.governed.propose_claim("auth", "port", "8443")["claim"]
    rejected = memory.governed.propose_claim("auth", "owner", "nobody")["claim"]
    memory.governed.reject_claim(reviewer, rejected["id"], "Dana owns it")
    old = memory.governed.record_fact(reviewer, "auth", "port", "8080", "from the runbook")["fact"]
    memory.governed.supersede_fact(reviewer, old["id"], "8443", "moved after the mTLS rollout")
    memory.conn.execute(
        "UPDATE entities SET created_at = '2020-01-01T00:00:00.000000+00:00' WHERE name = 'legacy-cron'"
    )
    memory.conn.execute(
        "UPDATE observations SET created_at = '2020-01-01T00:00:00.000000+00:00' WHERE content = 'runs at 02:00'"
    )
    with pytest.raises(MemoryStoreError):
        SqlTools(db_path, project="payments", actor="claude").read_query("DELETE FROM entities")
    memory.close()
    return Datasette([str(db_path)], config=datasette_config("datasette.yaml", "memory")), pending


async def rows(datasette, name, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project": "", **params}.items())
    response = await datasette.client.get(f"/memory/{name}.json?_shape=objects&{query}")
    assert response.status_code == 200, response.text
    return response.json()["rows"]


async def test_every_stored_query_runs_and_finds_what_it_is_for(datasette):
    datasette, pending = datasette
    found = {name: await rows(datasette, name) for name in QUERIES}
    assert [r["id"] for r in found["pending_claims"]] == [pending["id"]]
    assert [(r["object"], r["reviewer"], r["rationale"]) for r in found["rejected_claims"]] == [("nobody", "alice", "Dana owns it")]
    assert [(r["predicate"], r["object"]) for r in found["current_facts"]] == [("port", "8443")]
    assert [r["object"] for r in found["retired_facts"]] == ["8080"]
    assert [r["name"] for r in found["stale_entities"]] == ["legacy-cron"]
    assert [(r["kind"], r["target"]) for r in found["deleted"]] == [("delete_entity", "gone")]
    assert [r["tool"] for r in found["failing_sql_calls"]] == ["read_query"]
    assert found["recent_changes"][0]["kind"] != "" and len(found["recent_changes"]) >= 8


async def test_stored_queries_filter_by_project(datasette):
    datasette, _ = datasette
    for name in ("pending_claims", "current_facts", "deleted", "recent_changes"):
        assert await rows(datasette, name, project="mobile") == []
    assert [r["name"] for r in await rows(datasette, "stale_entities", days="100000")] == []
