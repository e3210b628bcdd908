"""
Every memory page, form and JSON endpoint for every kind of actor, under the
configuration `serve` runs with: who may read, who reaches which form, and that
nobody who may not act can change anything by posting.
"""

import hashlib
import re

import pytest
from datasette.app import Datasette

from datasette_memory import Config, SearchSettings
from datasette_memory.cli.serve import People, serve_config

from .governance import as_actor, ledger_length, store_governed

MEMORY_FORM = re.compile(r'<form class="core( memory-form)?" method="post">')  # a memory act's form, not Datasette's log-out button
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
PEOPLE = People("olive", approvers=("alice",), curators=("carol",), root=True)
ACTORS = ["anonymous", "agent token", "root token", "reviewer", "curator", "owner", "root", "someone else signed in"]
MAY_APPROVE = {"reviewer", "owner", "root"}
MAY_CURATE = {"curator", "owner", "root"}

PAGES = [
    "/-/memory",
    "/-/memory/review?project=p",
    "/-/memory/search?project=p&q=auth",
    "/-/memory/ledger?project=p",
    "/-/memory/entity?project=p&name=auth",
    "/-/memory/claims/1",
    "/-/memory/facts/1",
]
JSON_ONLY = [
    "/-/memory/claims.json?project=p",
    "/-/memory/facts.json?project=p",
    "/-/memory/contradictions.json?project=p",
    "/-/memory/context-pack.json?project=p&q=auth",
]
READS = PAGES + [path.replace("?", ".json?") if "?" in path else path + ".json" for path in PAGES] + JSON_ONLY

APPROVE_FORMS = [
    "/-/memory/claims/1/approve",
    "/-/memory/claims/1/reject",
    "/-/memory/claims/2/reopen",
    "/-/memory/facts/1/supersede",
    "/-/memory/facts/1/invalidate",
    "/-/memory/facts/2/revalidate",
    "/-/memory/facts/new?project=p",
    "/-/memory/redact?project=p&name=auth&index=0",
    "/-/memory/redact?event=1",
]
CURATE_FORMS = [
    f"/-/memory/entity/{curation}?project=p&name=auth"
    for curation in ("edit-observation", "delete-observation", "rename", "merge", "delete-relation")
]


@pytest.fixture
def stored(db_path):
    "Project p: two entities and a relation, a pending claim (1), a rejected one (2), a fact that holds (1), an invalidated one (2)."
    agent = store_governed(db_path)
    yield agent
    agent.close()


async def served(db_path, anonymous_reads):
    config = serve_config(db_path, Config(search=SearchSettings(semantic=False)), PEOPLE, hashlib.sha256(b"unused").hexdigest(), anonymous_reads)
    datasette = Datasette([str(db_path)], config=config)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    return datasette


def posting(arguments):
    return {**arguments, "headers": {**SAME_SITE, **arguments.get("headers", {})}}


@pytest.mark.parametrize("anonymous_reads", [True, False], ids=["on loopback", "off loopback"])
@pytest.mark.parametrize("actor", ACTORS)
async def test_reads(stored, db_path, actor, anonymous_reads):
    datasette = await served(db_path, anonymous_reads)
    arguments = await as_actor(datasette, actor)
    may_read = anonymous_reads or actor != "anonymous"
    for path in READS:
        response = await datasette.client.get(path, **arguments)
        assert response.status_code == (200 if may_read else 403), (path, response.text[:300])
        json_path = ".json" in path
        assert response.headers["content-type"].startswith("application/json" if json_path else "text/html"), path


@pytest.mark.parametrize("actor", ACTORS)
async def test_forms(stored, db_path, actor):
    datasette = await served(db_path, anonymous_reads=True)
    arguments = await as_actor(datasette, actor)
    for forms, holders, action in ((APPROVE_FORMS, MAY_APPROVE, "memory-approve"), (CURATE_FORMS, MAY_CURATE, "memory-curate")):
        for path in forms:
            form = await datasette.client.get(path, **arguments)
            if actor in holders:
                assert form.status_code == 200 and MEMORY_FORM.search(form.text), (path, form.text[:300])
            else:
                assert form.status_code == 403 and action in form.text and not MEMORY_FORM.search(form.text), (path, form.text[:300])


@pytest.mark.parametrize("actor", [actor for actor in ACTORS if actor not in MAY_APPROVE | MAY_CURATE])
async def test_posting_changes_nothing_for_who_may_not_act(stored, db_path, actor):
    datasette = await served(db_path, anonymous_reads=True)
    arguments = posting(await as_actor(datasette, actor))
    fields = {"rationale": "r", "object": "x", "subject": "s", "predicate": "p", "old": "listens on 8443", "new": "y",
              "observation": "listens on 8443", "new_name": "gateway", "into": "db", "relation": "[]",
              "text": "listens on 8443", "reason": "r"}
    before = ledger_length(db_path)
    for path in APPROVE_FORMS + CURATE_FORMS:
        for step in ("confirm", "apply"):
            response = await datasette.client.post(path, data={**fields, "step": step}, **arguments)
            assert response.status_code == 403, (path, step, response.text[:300])
    assert ledger_length(db_path) == before


@pytest.mark.parametrize("actor", ACTORS)
async def test_the_pages_offer_only_the_acts_the_actor_may_do(stored, db_path, actor):
    datasette = await served(db_path, anonymous_reads=True)
    arguments = await as_actor(datasette, actor)
    review = (await datasette.client.get("/-/memory/review?project=p", **arguments)).text
    assert ("Approve…" in review) == (actor in MAY_APPROVE)
    assert ("Record a fact…" in review) == (actor in MAY_APPROVE)
    fact = (await datasette.client.get("/-/memory/facts/1", **arguments)).text
    assert ("Supersede…" in fact) == (actor in MAY_APPROVE)
    entity = (await datasette.client.get("/-/memory/entity?project=p&name=auth", **arguments)).text
    assert ("Rename…" in entity) == (actor in MAY_CURATE)
    assert ("edit-observation" in entity) == (actor in MAY_CURATE)
    assert ("/-/memory/redact?" in entity) == (actor in MAY_APPROVE)
    ledger = (await datasette.client.get("/-/memory/ledger?project=p", **arguments)).text
    assert ("redact…" in ledger) == (actor in MAY_APPROVE)
