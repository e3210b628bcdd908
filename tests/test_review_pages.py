"""The review pages and forms, for each kind of actor: who sees what, who may act, and what each step writes."""

import pytest
from datasette.app import Datasette

from datasette_memory import Memory
from datasette_memory.plugin.resources import datasette_config

from .governance import as_actor, issue_reviewer

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
CONFIG = {
    **datasette_config("datasette.yaml", "memory"),
    "permissions": {"memory-approve": {"id": ["alice", "root"]}, "memory-curate": {"id": ["carol", "root"]}},
}
ACTORS = ["anonymous", "agent token", "reviewer", "curator", "root"]
MAY_APPROVE = {"reviewer", "root"}


@pytest.fixture
def stored(db_path, lexical):
    "Project p: a fact, two pending claims that disagree with each other (one also with the fact), one rejected claim."
    agent = Memory.open(db_path, project="p", actor="claude", config=lexical)
    agent.create_entities([{"name": "auth", "entityType": "service", "observations": ["uses postgres 16 since March"]}])
    agent.governed.record_fact(issue_reviewer("alice"), "auth", "uses", "postgres 16", "seen in the runbook", valid_from="2025-01-01")
    agent.governed.propose_claim("auth", "uses", "mysql", evidence=["old wiki page"], confidence=0.4)
    Memory(agent.conn, project="p", actor="codex", config=lexical).governed.propose_claim(
        "auth", "uses", "sqlite", evidence=[{"entityName": "auth", "observation": "uses postgres 16 since March"}]
    )
    agent.governed.propose_claim("auth", "owner", "Dana")
    agent.governed.reject_claim(issue_reviewer("alice"), 3, "Dana left")
    yield agent
    agent.close()


@pytest.fixture
async def datasette(db_path, stored):
    datasette = Datasette([str(db_path)], config=CONFIG)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    return datasette


def events(memory):
    return memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]


@pytest.mark.parametrize("actor", ACTORS)
async def test_everyone_who_may_read_sees_the_queue_only_reviewers_see_the_acts(datasette, actor):
    options = await as_actor(datasette, actor)
    page = await datasette.client.get("/-/memory/review?project=p", **options)
    assert page.status_code == 200
    assert "Claims waiting for review (2)" in page.text
    assert ("Approve…" in page.text) == (actor in MAY_APPROVE)
    data = (await datasette.client.get("/-/memory/review.json?project=p", **options)).json()
    assert data["pending"] == 2 and sorted(c["id"] for c in data["claims"]) == [1, 2]


async def test_the_queue_flags_contradictions_with_facts_and_between_pending_claims(datasette):
    data = (await datasette.client.get("/-/memory/review.json?project=p")).json()
    badges = {c["id"]: [(o["kind"], o["id"]) for o in c["contradicts"]] for c in data["claims"]}
    sqlite_claim = next(c["id"] for c in data["claims"] if c["object"] == "sqlite")
    mysql_claim = next(c["id"] for c in data["claims"] if c["object"] == "mysql")
    assert badges[mysql_claim] == [("fact", 1), ("claim", sqlite_claim)]
    assert badges[sqlite_claim] == [("fact", 1), ("claim", mysql_claim)]
    page = (await datasette.client.get("/-/memory/review?project=p")).text
    assert "contradicts fact #1: <bdi>postgres 16</bdi>" in page and f"contradicts claim #{sqlite_claim}: <bdi>sqlite</bdi>" in page
    assert "old wiki page" in page and "uses postgres 16 since March" in page  # evidence, both kinds
    assert "confidence 0.4" in page and "Proposed by <bdi>codex</bdi>" in page


@pytest.mark.parametrize("actor", ["anonymous", "agent token", "curator"])
async def test_who_may_not_approve_reaches_no_form_and_changes_nothing(datasette, stored, actor):
    options = await as_actor(datasette, actor)
    before = events(stored)
    for act in ("approve", "reject"):
        form = await datasette.client.get(f"/-/memory/claims/2/{act}", **options)
        assert form.status_code == 403, (act, form.text[:200])
        for step in ("confirm", "apply"):
            posted = await datasette.client.post(
                f"/-/memory/claims/2/{act}", data={"rationale": "x", "step": step}, headers={**SAME_SITE, **options.get("headers", {})},
                **{k: v for k, v in options.items() if k != "headers"},
            )
            assert posted.status_code == 403
    for act in ("supersede", "invalidate"):
        assert (await datasette.client.get(f"/-/memory/facts/1/{act}", **options)).status_code == 403
    assert (await datasette.client.get("/-/memory/facts/new?project=p", **options)).status_code == 403
    assert events(stored) == before


@pytest.mark.parametrize("actor", sorted(MAY_APPROVE))
async def test_approving_shows_what_will_change_then_does_it(datasette, stored, actor):
    options = await as_actor(datasette, actor)
    before = events(stored)
    form = await datasette.client.get("/-/memory/claims/2/approve", **options)
    assert form.status_code == 200 and 'name="rationale"' in form.text and "contradicts fact #1" in form.text
    fields = {"rationale": "the migration finished", "valid_from": "2025-06-01"}
    posted = await datasette.client.post("/-/memory/claims/2/approve", data={**fields, "step": "confirm"}, headers=SAME_SITE, **options)
    assert posted.status_code == 302 and posted.headers["location"].startswith("/-/memory/claims/2/approve?draft=")  # POST-redirect-GET
    confirm = await datasette.client.get(posted.headers["location"], **options)
    assert confirm.status_code == 200
    text = " ".join(confirm.text.split())
    assert "becomes <strong>approved</strong>" in text
    assert 'valid from <time datetime="2025-06-01T00:00:00.000000+00:00" title="2025-06-01 00:00:00 UTC">' in text and "with no end" in text
    assert "It will contradict: fact #1 (<bdi>postgres 16</bdi>)" in text
    assert 'name="step" value="apply"' in confirm.text
    assert events(stored) == before  # the confirmation step rehearsed it: nothing written
    applied = await datasette.client.post("/-/memory/claims/2/approve", data={**fields, "step": "apply"}, headers=SAME_SITE, **options)
    assert applied.status_code == 302 and applied.headers["location"] == "/-/memory/claims/2"
    result = await datasette.client.get("/-/memory/claims/2", cookies=dict(applied.cookies), **options)
    assert "Claim #2 approved: fact #2 holds from 2025-06-01 00:00:00 UTC" in result.text  # the message
    assert "The fact it became" in result.text
    actor_id = options["actor"]["id"]
    assert stored.conn.execute("SELECT actor, kind FROM events ORDER BY id DESC LIMIT 1").fetchone() == (actor_id, "approve_claim")
    assert stored.verify_chain().ok and stored.check_replay()["ok"]


async def test_a_bad_field_comes_back_on_the_form_and_a_stale_act_is_refused(datasette, stored):
    alice = {"actor": {"id": "alice"}, "headers": SAME_SITE, "follow_redirects": True}
    empty = await datasette.client.post("/-/memory/claims/2/reject", data={"rationale": "  ", "step": "confirm"}, **alice)
    assert empty.status_code == 400 and "rationale: must not be empty" in empty.text and 'name="rationale"' in empty.text
    assert empty.request.method == "GET" and "draft=" in str(empty.url)  # the form again, reached by a redirect
    bad_time = await datasette.client.post(
        "/-/memory/claims/2/approve", data={"rationale": "ok", "valid_from": "soon", "step": "confirm"}, **alice
    )
    assert bad_time.status_code == 400 and "valid_from: &#39;soon&#39; is not an ISO 8601 date" in bad_time.text
    assert 'value="soon"' in bad_time.text  # what was typed stays, to be corrected
    done = await datasette.client.post("/-/memory/claims/2/reject", data={"rationale": "no", "step": "apply"}, **alice)
    assert done.status_code == 200 and str(done.url).endswith("/-/memory/claims/2")
    again = await datasette.client.post("/-/memory/claims/2/reject", data={"rationale": "no", "step": "apply"}, **alice)
    assert again.request.method == "GET" and "Not done: claim_id: claim 2 is rejected" in again.text
    assert "Claim #2 is rejected now" in again.text and 'name="rationale"' not in again.text
    form = await datasette.client.get("/-/memory/claims/2/approve", actor={"id": "alice"})
    assert "Claim #2 is rejected now" in form.text and "There is nothing to approve" in form.text and 'name="rationale"' not in form.text
    gone = await datasette.client.get("/-/memory/claims/1/approve?draft=forgotten", actor={"id": "alice"})
    assert "no longer kept" in gone.text and 'name="rationale"' in gone.text


async def test_fact_forms_supersede_invalidate_revalidate_and_record(datasette, stored):
    alice = {"actor": {"id": "alice"}, "headers": SAME_SITE}
    superseded = await datasette.client.post(
        "/-/memory/facts/1/supersede", data={"object": "postgres 17", "rationale": "upgraded", "effective": "2025-09-01", "step": "confirm"},
        follow_redirects=True, **alice
    )
    assert 'stops holding</strong> <time datetime="2025-09-01T00:00:00.000000+00:00"' in superseded.text and "postgres 17" in superseded.text
    applied = await datasette.client.post(
        "/-/memory/facts/1/supersede", data={"object": "postgres 17", "rationale": "upgraded", "effective": "2025-09-01", "step": "apply"}, **alice
    )
    new_fact = int(applied.headers["location"].rsplit("/", 1)[1])
    page = await datasette.client.get(f"/-/memory/facts/{new_fact}", actor={"id": "alice"})
    assert "Supersedes" in page.text and "postgres 17" in page.text
    old = await datasette.client.get("/-/memory/facts/1", actor={"id": "alice"})
    assert "superseded" in old.text and "Revalidate…" in old.text and "Supersede…" not in old.text
    await datasette.client.post(f"/-/memory/facts/{new_fact}/invalidate", data={"rationale": "moved to managed db", "step": "apply"}, **alice)
    assert stored.governed.fact(new_fact)["valid_to"] is not None
    await datasette.client.post(f"/-/memory/facts/{new_fact}/revalidate", data={"rationale": "moved back", "step": "apply"}, **alice)
    assert stored.governed.fact(new_fact)["valid_to"] is None
    recorded = await datasette.client.post(
        "/-/memory/facts/new", data={"project": "p", "subject": "auth", "predicate": "port", "object": "8443", "rationale": "seen", "step": "apply"}, **alice
    )
    assert recorded.status_code == 302 and recorded.headers["location"].startswith("/-/memory/facts/")
    history = [row[0] for row in stored.conn.execute("SELECT act FROM fact_history WHERE fact_id = ? ORDER BY id", [new_fact])]
    assert history == ["record", "invalidate", "revalidate"]
    assert stored.check_replay()["ok"]


async def test_pages_have_json_twins_and_unknown_things_are_named(datasette):
    claim = (await datasette.client.get("/-/memory/claims/3.json")).json()["claim"]
    assert claim["status"] == "rejected" and claim["reviews"][0]["rationale"] == "Dana left"
    assert (await datasette.client.get("/-/memory/facts/1.json")).json()["fact"]["history"][0]["act"] == "record"
    missing = await datasette.client.get("/-/memory/claims/99.json")
    assert missing.status_code == 404 and missing.json()["error"] == "there is no claim 99"
    page = await datasette.client.get("/-/memory/claims/99")
    assert page.status_code == 404 and "there is no claim 99" in page.text and "memory-nav" in page.text
    unknown = await datasette.client.get("/-/memory/review.json?project=nope")
    assert unknown.status_code == 404 and unknown.json()["error"] == "project: there is no project 'nope'; the projects are default, p"
    assert "the projects are default, p" in (await datasette.client.get("/-/memory/review?project=nope")).text
    for endpoint in ("claims.json", "facts.json", "contradictions.json", "context-pack.json", "search.json?q=x&"):
        separator = "" if endpoint.endswith("&") else "?"
        response = await datasette.client.get(f"/-/memory/{endpoint}{separator}project=nope")
        assert response.status_code == 404 and "the projects are default, p" in response.json()["error"], endpoint


async def test_datasettes_own_pages_lead_to_the_forms(datasette):
    pending = await datasette.client.get("/memory/pending_claims?project=p")
    assert 'href="/-/memory/claims/2"' in pending.text
    row = await datasette.client.get("/memory/claims/2")
    assert 'href="/-/memory/claims/2"' in row.text and "Open claim #2" in row.text
    current = await datasette.client.get("/memory/current_facts")
    assert 'href="/-/memory/facts/1"' in current.text
    overview = await datasette.client.get("/-/memory")
    assert 'href="/-/memory/review?project=p">2 pending</a>' in overview.text
