"""The permission matrix: every governance act, every kind of caller; only a person holding memory-approve succeeds."""

import pytest
from datasette.app import Datasette
from datasette.tokens import TokenRestrictions

from datasette_memory import Memory
from datasette_memory.governed.person_actions import APPROVE_ACTION

from .governance import approver_config, issue_reviewer, ledger_length

PAST = "2020-01-01"

# act: (path, body, the status a person holding memory-approve gets)
ACTS = {
    "approve": ("/-/memory/claims/1/approve", {"rationale": "checked the config"}, 200),
    "reject": ("/-/memory/claims/2/reject", {"rationale": "not true"}, 200),
    "reopen": ("/-/memory/claims/3/reopen", {"rationale": "it was true after all"}, 200),
    "enter": ("/-/memory/facts", {"subject": "web", "predicate": "port", "object": "443", "rationale": "ops"}, 201),
    "supersede": ("/-/memory/facts/1/supersede", {"object": "postgres 17", "rationale": "upgraded"}, 200),
    "invalidate": ("/-/memory/facts/2/invalidate", {"rationale": "removed", "effective": "2030-01-01"}, 200),
    "revalidate": ("/-/memory/facts/3/revalidate", {"rationale": "back again"}, 200),
}


def seed(db_path):
    "Claims 1 and 2 pending, claim 3 rejected; facts 1 and 2 holding, fact 3 invalidated."
    reviewer = issue_reviewer("alice")
    memory = Memory.open(db_path, actor="claude")
    for value in ("postgres", "redis", "mysql"):
        memory.governed.propose_claim("auth", "uses", value)
    memory.governed.reject_claim(reviewer, 3, "never used mysql")
    memory.governed.record_fact(reviewer, "auth", "database", "postgres 16", "setup", valid_from=PAST)
    memory.governed.record_fact(reviewer, "auth", "cache", "redis", "setup", valid_from=PAST)
    memory.governed.record_fact(reviewer, "auth", "queue", "rabbitmq", "setup", valid_from=PAST)
    memory.governed.invalidate_fact(reviewer, 3, "replaced")
    memory.close()


@pytest.fixture
def datasette(db_path):
    seed(db_path)
    return Datasette([str(db_path)], config=approver_config("alice"))


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


async def caller_arguments(datasette, caller: str) -> dict:
    "Keyword arguments for ``datasette.client.post`` that make the request as ``caller``."
    if caller == "anonymous":
        return {}
    if caller == "person without the action":
        return {"actor": {"id": "bob"}}
    if caller == "token without the action":
        return {"headers": bearer(await datasette.create_token("bob"))}
    if caller == "token for a person who holds the action":
        return {"headers": bearer(await datasette.create_token("alice"))}
    if caller == "token restricted to the action itself":
        restrictions = TokenRestrictions().allow_all(APPROVE_ACTION)
        return {"headers": bearer(await datasette.create_token("alice", restrictions=restrictions))}
    if caller == "person's cookie sent with a token":
        return {"actor": {"id": "alice"}, "headers": bearer(await datasette.create_token("alice"))}
    if caller == "person's cookie sent with another bearer token":
        return {"actor": {"id": "alice"}, "headers": bearer("some-other-service-token")}
    if caller == "forged token actor in a cookie":
        return {"actor": {"id": "alice", "token": "dstok"}}
    if caller == "person holding the action":
        return {"actor": {"id": "alice"}}
    raise AssertionError(caller)


REFUSED = [
    "anonymous",
    "person without the action",
    "token without the action",
    "token for a person who holds the action",
    "token restricted to the action itself",
    "person's cookie sent with a token",
    "person's cookie sent with another bearer token",
    "forged token actor in a cookie",
]


async def test_a_token_for_the_approver_would_pass_datasette_alone(datasette):
    "Why the gate refuses tokens itself: Datasette lets an unrestricted token act as its actor."
    await datasette.invoke_startup()
    token_actor = await datasette.verify_token(await datasette.create_token("alice"))
    assert await datasette.allowed(action=APPROVE_ACTION, actor=token_actor) is True


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("caller", REFUSED)
async def test_governance_acts_are_refused(datasette, db_path, act, caller):
    path, body, _ = ACTS[act]
    before = ledger_length(db_path)
    response = await datasette.client.post(path, json=body, **(await caller_arguments(datasette, caller)))
    assert response.status_code == 403, response.text
    assert response.json()["ok"] is False
    assert APPROVE_ACTION in response.json()["error"]
    assert ledger_length(db_path) == before


@pytest.mark.parametrize("act", ACTS)
async def test_governance_acts_succeed_for_a_person_holding_the_action(datasette, db_path, act):
    path, body, status = ACTS[act]
    before = ledger_length(db_path)
    response = await datasette.client.post(path, json=body, **(await caller_arguments(datasette, "person holding the action")))
    assert response.status_code == status, response.text
    assert response.json()["ok"] is True
    memory = Memory.open(db_path)
    new_events = memory.conn.execute("SELECT actor, kind FROM events WHERE id > ?", [before]).fetchall()
    assert new_events and {actor for actor, _ in new_events} == {"alice"}
    assert memory.verify_chain().ok


async def test_a_cross_site_page_cannot_make_a_persons_browser_act(datasette, db_path):
    before = ledger_length(db_path)
    path, body, _ = ACTS["approve"]
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://evil.example"}):
        response = await datasette.client.post(path, json=body, actor={"id": "alice"}, headers=headers)
        assert response.status_code == 403
    assert ledger_length(db_path) == before


async def test_refusal_names_the_reason(datasette):
    path, body, _ = ACTS["approve"]
    async def error(caller):
        response = await datasette.client.post(path, json=body, **(await caller_arguments(datasette, caller)))
        return response.json()["error"]

    assert (await error("anonymous")).startswith("no one is signed in")
    assert (await error("person without the action")).startswith("actor 'bob' does not hold memory-approve")
    assert "authenticated with an API token, and tokens never carry memory-approve" in await error(
        "token for a person who holds the action"
    )
    assert "authenticated with an API token" in await error("person's cookie sent with a token")
    assert "the request carries a bearer token" in await error("person's cookie sent with another bearer token")


async def test_the_action_is_registered(datasette):
    await datasette.invoke_startup()
    assert APPROVE_ACTION in datasette.actions
    response = await datasette.client.get("/-/plugins.json")
    plugin = next(p for p in response.json() if p["name"] == "datasette-memory")
    assert {"register_actions", "register_routes"} <= set(plugin["hooks"])


# Clear JSON errors, for a person who may act


PERSON = {"actor": {"id": "alice"}}


@pytest.mark.parametrize("path,body,status,field,message", [
    ("/-/memory/claims/99/approve", {"rationale": "x"}, 404, None, "claim 99 not found in project 'default'"),
    ("/-/memory/facts/99/invalidate", {"rationale": "x"}, 404, None, "fact 99 not found"),
    ("/-/memory/facts/99999999999999999999/invalidate", {"rationale": "x"}, 404, "id", "there is no fact #99999999999999999999"),
    ("/-/memory/facts/x1/invalidate", {"rationale": "x"}, 400, "id", "facts are numbered 1, 2, 3"),
    ("/-/memory/claims/1/approve", {}, 400, "rationale", "rationale: required field is missing"),
    ("/-/memory/claims/1/approve", {"rationale": "  "}, 400, "rationale", "rationale: must not be empty"),
    ("/-/memory/claims/1/approve", {"rationale": "x", "status": "approved"}, 400, "status", "status: unknown field"),
    ("/-/memory/claims/1/approve", {"rationale": "x", "valid_from": "soon"}, 400, "valid_from", "valid_from: 'soon' is not an ISO 8601"),
    ("/-/memory/claims/1/approve", ["rationale"], 400, "body", "body: must be a JSON object, got array"),
    ("/-/memory/claims/3/approve", {"rationale": "x"}, 400, "claim_id", "reopen it first"),
    ("/-/memory/facts/1/supersede", {"rationale": "x"}, 400, "object", "object: required field is missing"),
    ("/-/memory/facts/1/supersede", {"rationale": "x", "object": "postgres 16"}, 400, "object", "already holds"),
    ("/-/memory/facts", {"subject": "a", "predicate": "b", "object": "", "rationale": "x"}, 400, "object", "object: must not be empty"),
    ("/-/memory/claims/1/approve?project=other", {"rationale": "x"}, 404, None, "claim 1 not found in project 'other'"),
    ("/-/memory/claims/1/approve", {"rationale": "x", "project": "other"}, 404, None, "claim 1 not found in project 'other'"),
])
async def test_json_errors(datasette, db_path, path, body, status, field, message):
    before = ledger_length(db_path)
    response = await datasette.client.post(path, json=body, **PERSON)
    assert response.status_code == status, response.text
    data = response.json()
    assert (data["ok"], data["field"]) == (False, field)
    assert message in data["error"]
    assert ledger_length(db_path) == before


async def test_malformed_json_and_wrong_method(datasette):
    response = await datasette.client.post(
        "/-/memory/claims/1/approve", content=b"{not json", headers={"content-type": "application/json"}, **PERSON
    )
    assert (response.status_code, response.json()["field"]) == (400, "body")
    form = await datasette.client.get("/-/memory/claims/1/approve", **PERSON)  # a browser gets the form
    assert form.status_code == 200 and 'name="rationale"' in form.text
    assert (await datasette.client.put("/-/memory/claims/1/approve", json={}, **PERSON)).status_code == 405
    response = await datasette.client.post("/-/memory/claims/1/supersede", json={}, **PERSON)
    assert response.status_code == 404
    assert response.json()["error"] == "claims have no act 'supersede'; the acts are approve, reject, reopen"


async def test_rejected_value_error_carries_the_rejection(datasette, db_path):
    path = "/-/memory/claims/3/reopen"
    await datasette.client.post(path, json={"rationale": "maybe"}, **PERSON)
    await datasette.client.post("/-/memory/claims/3/reject", json={"rationale": "no, really not"}, **PERSON)
    memory = Memory.open(db_path, actor="claude")
    with pytest.raises(Exception) as raised:
        memory.governed.propose_claim("AUTH", "uses", "MySQL")
    assert raised.value.rejection["rationale"] == "no, really not"


# Reads are for anyone who may view the memory database, tokens included


async def test_reads_work_with_a_token(datasette):
    headers = bearer(await datasette.create_token("script"))
    claims = (await datasette.client.get("/-/memory/claims.json?status=candidate", headers=headers)).json()
    assert [c["id"] for c in claims["claims"]] == [1, 2]
    facts = (await datasette.client.get("/-/memory/facts.json?subject=AUTH", headers=headers)).json()
    assert [f["object"] for f in facts["facts"]] == ["postgres 16", "redis"]
    past = (await datasette.client.get("/-/memory/facts.json?as_of_recorded=2000-01-01", headers=headers)).json()
    assert past["facts"] == [] and past["as_of_recorded"] == "2000-01-01T00:00:00.000000+00:00"
    contradictions = (await datasette.client.get("/-/memory/contradictions.json", headers=headers)).json()
    assert contradictions == {"ok": True, "contradictions": []}
    pack = (await datasette.client.get("/-/memory/context-pack.json?q=auth&budget=2000", headers=headers)).json()
    assert [(i["kind"], i["id"]) for i in pack["items"]] == [("FACT", 2), ("FACT", 1), ("PROPOSED", 2), ("PROPOSED", 1)]
    bad = await datasette.client.get("/-/memory/claims.json?limit=many", headers=headers)
    assert (bad.status_code, bad.json()["field"]) == (400, "limit")


async def test_reads_respect_view_permission(db_path):
    seed(db_path)
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    for path in ("/-/memory/claims.json", "/-/memory/facts.json", "/-/memory/contradictions.json", "/-/memory/context-pack.json"):
        assert (await datasette.client.get(path)).status_code == 403
        assert (await datasette.client.get(path, actor={"id": "alice"})).status_code == 200


# The SQL tools: memory's governed tables are read-only to SQL


@pytest.mark.parametrize("tool,sql", [
    ("write_query", "UPDATE claims SET status = 'approved' WHERE id = 1"),
    ("write_query", "INSERT INTO facts (project, subject, predicate, object, subject_key, predicate_key, object_key, "
                    "valid_from, recorded_at, recorded_by, rationale) SELECT project, subject, predicate, object, "
                    "subject_key, predicate_key, object_key, proposed_at, proposed_at, 'alice', 'sql' FROM claims"),
    ("write_query", "REPLACE INTO claims (id, project, subject, predicate, object, subject_key, predicate_key, object_key, "
                    "status, proposed_by, proposed_at) VALUES (1, 'default', 'a', 'b', 'c', 'a', 'b', 'c', 'approved', 'x', 'y')"),
    ("write_query", "INSERT INTO claim_reviews (claim_id, act, reviewer, reviewed_at, rationale) VALUES (1, 'approve', 'alice', 'now', 'x')"),
    ("write_query", "UPDATE facts SET valid_to = NULL WHERE id = 3"),
    ("destructive_query", "DELETE FROM facts"),
    ("destructive_query", "DROP TRIGGER facts_refuse_delete"),
])
def test_sql_tools_cannot_govern(db_path, tool, sql):
    from datasette_memory import MemoryStoreError
    from datasette_memory.sqltools.tools import SqlTools

    seed(db_path)
    before = ledger_length(db_path)
    tools = SqlTools(db_path, actor="agent", snapshot_dir=db_path.parent / "snapshots")
    arguments = (sql, "cleanup") if tool == "destructive_query" else (sql,)
    with pytest.raises(MemoryStoreError):
        getattr(tools, tool)(*arguments)
    memory = Memory.open(db_path)
    assert memory.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 3
    assert [r[0] for r in memory.conn.execute("SELECT status FROM claims ORDER BY id")] == ["candidate", "candidate", "rejected"]
    assert memory.check_replay()["ok"] and ledger_length(db_path) == before
