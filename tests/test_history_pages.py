"""Memory's past on the pages: every memory page as of a moment (``?as_of=``), and where each piece of memory came from.

A moment is an event id or an ISO 8601 time. A past page says loudly that it is
not current memory, keeps the moment in its links and offers no form that
changes memory. The entity page gives each observation and relation the events
that made it (who, session, machine, when, linked to the ledger), and reads an
entity's history through the ledger's index of names; a fact's page says who
recorded it, why, and the claim and evidence they approved.
"""

import json
import re
from urllib.parse import quote, urlencode

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.graph.entity_view import EVENTS_NAMING_SQL, GRAPH_KINDS, NO_LIMIT

from .governance import issue_reviewer
from .serving import screenshot, serving

CURATOR_AND_APPROVER = {"permissions": {"memory-curate": {"id": ["carol"]}, "memory-approve": {"id": ["alice"]}}}
LEXICAL = Config(search=SearchSettings(semantic=False))


def entity(name, entity_type, *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(source, relation_type, target):
    return {"from": source, "to": target, "relationType": relation_type}


def build_history(db_path):
    """
    Project p, told in two halves. Up to ``then``: auth listens on port 8080 and
    issues JWTs, and writes to ledger. After: carol edits the port to 8443, the
    agent adds a nightly key rotation and a cache auth uses, carol renames
    ledger to ledger-db, and alice approves the agent's claim about the port.
    """
    agent = Memory.open(db_path, project="p", actor="agent", session="s1", config=LEXICAL)
    agent.create_entities([entity("auth", "service", "listens on port 8080", "issues JWTs"), entity("ledger", "database", "postgres 15")])
    agent.create_relations([relation("auth", "writes to", "ledger")])
    then = agent.conn.execute("SELECT max(id), ts FROM events").fetchone()
    carol = Memory(agent.conn, project="p", actor="carol", session="s2", config=LEXICAL)
    carol.update_observation("auth", "listens on port 8080", "listens on port 8443")
    agent.add_observations([{"entityName": "auth", "contents": ["rotates signing keys nightly"]}])
    agent.create_entities([entity("cache", "service", "redis 7 for sessions")])
    agent.create_relations([relation("auth", "uses", "cache")])
    carol.rename_entity("ledger", "ledger-db")
    seen = {"entityName": "auth", "observation": "listens on port 8443"}
    claim = agent.governed.propose_claim("auth", "port", "8443", evidence=[seen, "the gateway's config file"])
    agent.governed.approve_claim(issue_reviewer("alice"), claim["claim"]["id"], "checked the running config")
    head = agent.conn.execute("SELECT max(id) FROM events").fetchone()[0]
    agent.close()
    return {"then": then[0], "then_ts": then[1], "head": head}


@pytest.fixture
def history(db_path):
    return build_history(db_path)


@pytest.fixture
async def datasette(history, db_path):
    datasette = Datasette([str(db_path)], config=CURATOR_AND_APPROVER)
    await datasette.invoke_startup()
    return datasette


def path(page="/-/memory/entity", **arguments):
    return f"{page}?{urlencode(arguments, quote_via=quote)}"


def in_html(url):
    return url.replace("&", "&amp;")


CAROL = {"actor": {"id": "carol"}}
BANNER = re.compile(r'<div class="memory-past" role="status"')


# The entity page


async def test_the_entity_page_as_of_a_moment_shows_the_entity_then(datasette, history):
    then = history["then"]
    response = await datasette.client.get(path(project="p", name="auth", as_of=then), **CAROL)
    assert response.status_code == 200
    html = response.text
    assert "listens on port 8080" in html and "issues JWTs" in html
    for later in ("listens on port 8443", "rotates signing keys nightly", ">cache<", "ledger-db"):
        assert later not in html
    assert in_html(path(project="p", name="ledger", as_of=then)) in html  # the relation's other end, as it was called then
    assert BANNER.search(html)
    assert f"Memory as of event {then}" in html and "not current" in html
    assert f'<a class="memory-now" href="{in_html(path(project="p", name="auth"))}">Show current memory</a>' in html


async def test_a_past_view_offers_no_form_that_changes_memory(datasette, history):
    now = (await datasette.client.get(path(project="p", name="auth"), **CAROL)).text
    assert "/-/memory/entity/rename?" in now and "edit-observation" in now  # carol may curate memory now
    past = (await datasette.client.get(path(project="p", name="auth", as_of=history["then"]), **CAROL)).text
    for form in ("/-/memory/entity/rename", "/-/memory/entity/merge", "edit-observation", "delete-observation", "delete-relation"):
        assert form not in past
    assert re.findall(r'<form [^>]*action="([^"]*)" method="post"', past) == ["/-/logout"]  # Datasette's own, for a signed-in person


async def test_the_entity_json_as_of_a_moment(datasette, history):
    then = history["then"]
    data = (await datasette.client.get(path("/-/memory/entity.json", project="p", name="auth", as_of=then))).json()
    assert data["as_of"] == {"event_id": then, "ts": history["then_ts"], "asked": str(then), "head": history["head"]}
    assert [o["content"] for o in data["observations"]] == ["listens on port 8080", "issues JWTs"]
    assert [(r["relationType"], r["other"], r["stored"]) for r in data["relations"]["out"]] == [("writes to", "ledger", True)]
    assert data["relations"]["in"] == []
    assert max(event["id"] for event in data["history"]) <= then
    assert "facts" not in data and "claims" not in data  # they keep their own times: the current page lists them
    assert data["may_curate"] is False
    now = (await datasette.client.get(path("/-/memory/entity.json", project="p", name="auth"))).json()
    assert "as_of" not in now and len(now["observations"]) == 3


async def test_a_moment_can_be_a_time(datasette, history):
    then = history["then"]
    response = await datasette.client.get(path(project="p", name="auth", as_of=history["then_ts"]))
    assert response.status_code == 200
    assert f"Memory as of event {then}" in response.text and "You asked for" in response.text
    assert "listens on port 8080" in response.text


async def test_a_name_changed_since_opens_the_entity_under_its_name_then(datasette, history):
    then = history["then"]
    response = await datasette.client.get(path(project="p", name="ledger-db", as_of=then))
    assert (response.status_code, response.headers["location"]) == (302, path(project="p", name="ledger", as_of=then))
    now = await datasette.client.get(path(project="p", name="ledger"))
    assert now.headers["location"] == path(project="p", name="ledger-db")


async def test_an_entity_made_later_was_not_there_then(datasette, history):
    response = await datasette.client.get(path(project="p", name="cache", as_of=history["then"]))
    assert response.status_code == 404
    assert f"no entity named &#39;cache&#39; in project &#39;p&#39; as of event {history['then']}" in response.text
    empty = await datasette.client.get(path("/-/memory/entity.json", project="p", name="auth", as_of=0))
    assert empty.status_code == 404 and empty.json()["field"] == "name"


# The search page


async def test_search_as_of_a_moment_searches_the_past(datasette, history):
    then = history["then"]
    html = (await datasette.client.get(path("/-/memory/search", project="p", q="which port does auth listen on", as_of=then))).text
    assert BANNER.search(html) and f"Memory as of event {then}" in html
    assert "listens on port 8080" in html and "listens on port 8443" not in html
    assert in_html(path(project="p", name="auth", as_of=then)) in html
    assert f'<input type="hidden" name="as_of" value="{then}">' in html  # the next search stays in the past
    nothing = (await datasette.client.get(path("/-/memory/search", project="p", q="rotates signing keys", as_of=then))).text
    assert f"Memory held nothing that answers this in <strong><bdi>p</bdi></strong> as of event {then}" in nothing
    now = (await datasette.client.get(path("/-/memory/search", project="p", q="rotates signing keys"))).text
    assert "rotates signing keys nightly" in now and not BANNER.search(now)


async def test_search_json_as_of_a_moment(datasette, history):
    then = history["then"]
    found = (await datasette.client.get(path("/-/memory/search.json", project="p", q="port", as_of=then))).json()
    assert found["as_of"] == {"event_id": then, "ts": history["then_ts"], "asked": str(then)}
    # the matching observation as it was then, with the entity's next one then (a match shows the one after it)
    assert [o for r in found["results"] for o in r["observations"]] == ["listens on port 8080", "issues JWTs"]


# The overview


async def test_the_overview_as_of_a_moment_counts_and_lists_memory_then(datasette, history, db_path):
    then = history["then"]
    past = (await datasette.client.get(path("/-/memory.json", as_of=then))).json()
    (p,) = past["projects"]
    assert (p["project"], p["entities"], p["observations"], p["relations"], p["events"]) == ("p", 2, 3, 1, then)
    assert [e["name"] for e in p["entity_list"]] == ["auth", "ledger"] and p["entities_left_out"] == 0
    assert past["as_of"]["event_id"] == then
    memory = Memory.open(db_path, project="p", config=LEXICAL)
    graph = memory.read_graph(as_of=then)
    memory.close()
    assert (len(graph["entities"]), len(graph["relations"])) == (p["entities"], p["relations"])
    now = (await datasette.client.get("/-/memory.json")).json()
    (p_now,) = now["projects"]
    assert (p_now["entities"], p_now["relations"], p_now["pending_claims"]) == (3, 2, 0)
    assert "as_of" not in now and "entity_list" not in p_now
    html = (await datasette.client.get(path("/-/memory", as_of=then))).text
    assert BANNER.search(html) and f"Memory as of event {then}" in html
    assert in_html(path(project="p", name="ledger", as_of=then)) in html and "ledger-db" not in html


async def test_before_the_first_event_memory_was_empty(datasette):
    html = (await datasette.client.get(path("/-/memory", as_of=0))).text
    assert "Nothing was stored yet at event 0" in html and "before the first event: memory was empty" in html


async def test_links_between_memory_pages_keep_the_moment(datasette, history):
    then = history["then"]
    html = (await datasette.client.get(path(project="p", name="auth", as_of=then))).text
    assert f'<a href="/-/memory?as_of={then}">Overview</a>' in html
    assert f'<a href="/-/memory/search?as_of={then}">Search</a>' in html
    assert in_html(path("/-/memory/search", project="p", q="auth") + f"&as_of={then}") in html
    assert in_html(path("/-/memory/entity.json", project="p", name="auth") + f"&as_of={then}") in html
    assert in_html(f"/-/memory/ledger?project=p&entity=auth&before={then + 1}") in html  # its ledger, up to the moment
    now = (await datasette.client.get(path(project="p", name="auth"))).text
    assert '<a href="/-/memory">Overview</a>' in now and '<a href="/-/memory/search">Search</a>' in now
    assert in_html(path(project="p", name="ledger-db")) + '"' in now
    assert in_html(path(project="p", name="auth", as_of=then)) in now  # the history row of event `then` opens that moment


@pytest.mark.parametrize(
    "page", ["/-/memory", "/-/memory/entity?project=p&name=auth", "/-/memory/search?project=p&q=port"]
)
@pytest.mark.parametrize(
    "as_of,message",
    [
        ("yesterday", "as_of: &#39;yesterday&#39; is neither an event id (such as 1234) nor an ISO 8601 time"),
        ("99999", "as_of: event 99999 does not exist yet; the ledger ends at event"),
        ("2025-13-45", "as_of: &#39;2025-13-45&#39; is neither an event id (such as 1234) nor an ISO 8601 time"),
    ],
)
async def test_a_bad_moment_is_a_400_saying_what_to_give(datasette, page, as_of, message):
    separator = "&" if "?" in page else "?"
    response = await datasette.client.get(f"{page}{separator}as_of={quote(as_of)}")
    assert response.status_code == 400
    assert message in response.text and 'class="message-error"' in response.text
    json_page = page.replace("?", ".json?", 1) if "?" in page else page + ".json"
    data = await datasette.client.get(f"{json_page}{separator}as_of={quote(as_of)}")
    assert data.status_code == 400
    assert data.json()["ok"] is False and data.json()["field"] == "as_of"


@pytest.mark.parametrize(
    "page", ["/-/memory", "/-/memory.json", "/-/memory/entity?project=p&name=auth", "/-/memory/entity.json?project=p&name=auth",
             "/-/memory/search?project=p&q=port", "/-/memory/search.json?project=p&q=port"]
)
async def test_the_past_needs_view_database_as_the_present_does(history, db_path, page):
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    separator = "&" if "?" in page else "?"
    for as_of in (history["then"], "99999"):  # refused before the moment is read, so a refusal tells nothing of the ledger
        refused = await datasette.client.get(f"{page}{separator}as_of={as_of}")
        assert refused.status_code == 403 and "ledger ends at event" not in refused.text
    allowed = await datasette.client.get(f"{page}{separator}as_of={history['then']}", actor={"id": "alice"})
    assert allowed.status_code == 200


# Provenance


async def test_each_observation_and_relation_says_where_it_came_from(datasette, history, db_path):
    data = (await datasette.client.get(path("/-/memory/entity.json", project="p", name="auth"))).json()
    observations = {o["content"]: o for o in data["observations"]}
    edited = observations["listens on port 8443"]
    assert [(e["kind"], e["actor"], e["session"]) for e in edited["events"]] == [
        ("create_entity", "agent", "s1"), ("update_observation", "carol", "s2")
    ]
    assert all(e["machine"] and e["ts"] for e in edited["events"])
    assert edited["added"]["event_id"] == edited["events"][-1]["event_id"]
    assert [e["kind"] for e in observations["rotates signing keys nightly"]["events"]] == ["add_observation"]
    (moved,) = [r for r in data["relations"]["out"] if r["other"] == "ledger-db"]
    assert [(e["kind"], e["actor"]) for e in moved["events"]] == [("create_relation", "agent"), ("rename_entity", "carol")]
    html = (await datasette.client.get(path(project="p", name="auth"))).text
    first = html.index("listens on port 8443")
    details = html[first:html.index("</details>", first)]
    assert '<details class="memory-provenance">' in details and "Provenance: 2 events" in details
    for event in edited["events"]:
        id = event["event_id"]
        assert in_html(f"/-/memory/ledger?project=p&before={id + 1}#event-{id}") in details
        assert event["machine"][:8] in details
    assert "session <code><bdi>s2</bdi></code>" in details and "<strong><bdi>carol</bdi></strong>" in details
    ledger = (await datasette.client.get(f"/-/memory/ledger?project=p&before={edited['events'][-1]['event_id'] + 1}")).text
    assert f'id="event-{edited["events"][-1]["event_id"]}"' in ledger  # the link lands on the event


async def test_the_history_is_read_through_the_index_of_names(history, db_path):
    memory = Memory.open(db_path, project="p", config=LEXICAL)
    plan = " | ".join(
        row[3]
        for row in memory.conn.execute(
            "EXPLAIN QUERY PLAN " + EVENTS_NAMING_SQL,
            {"project": "p", "names": json.dumps(["auth"]), "upto": NO_LIMIT, "kinds": json.dumps(GRAPH_KINDS)},
        )
    )
    memory.close()
    assert "SEARCH memory_event_names USING PRIMARY KEY" in plan and "SEARCH events USING INTEGER PRIMARY KEY" in plan
    assert "SCAN events" not in plan


async def test_a_fact_page_says_who_recorded_it_why_and_from_what(datasette):
    data = (await datasette.client.get("/-/memory/facts/1.json")).json()
    provenance = data["provenance"]
    assert (provenance["recorded"]["actor"], provenance["recorded"]["rationale"]) == ("alice", "checked the running config")
    assert provenance["claim"]["proposed"]["actor"] == "agent"
    assert [e.get("observation") or e.get("text") for e in provenance["claim"]["evidence"]] == [
        "listens on port 8443", "the gateway's config file"
    ]
    html = (await datasette.client.get("/-/memory/facts/1")).text
    section = html[html.index('id="provenance"'):html.index("<h2>History</h2>")]
    assert "record_fact" in section and "<strong><bdi>alice</bdi></strong>" in section
    assert "checked the running config" in section
    assert 'href="/-/memory/claims/1"' in section and "propose_claim" in section and "<strong><bdi>agent</bdi></strong>" in section
    assert "the gateway&#39;s config file" in section and "listens on port 8443" in section
    recorded = provenance["recorded"]["id"]
    assert in_html(f"/-/memory/ledger?project=p&before={recorded + 1}#event-{recorded}") in section


# In a browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    "The same history, served by `datasette-memory serve`; yields its base URL and moments."
    db_path = tmp_path_factory.mktemp("history") / "memory.db"
    moments = build_history(db_path)
    with serving(db_path) as (base, _):
        yield {"base": base, **moments}


def test_a_person_looks_at_an_entity_as_it_was_and_comes_back_to_now(served, page):
    base, then = served["base"], served["then"]
    page.goto(f"{base}/-/memory/entity?project=p&name=auth")
    observations = page.locator(".memory-observations")
    expect(observations).to_contain_text("listens on port 8443")
    expect(page.locator(".memory-past")).to_have_count(0)
    page.get_by_label("or just after event").fill(str(then))
    page.get_by_role("button", name="Go to event").click()
    expect(page).to_have_url(re.compile(rf"as_of={then}$"))
    expect(page.locator(".memory-past")).to_contain_text(f"Memory as of event {then}")
    expect(page.locator(".memory-past")).to_contain_text("not current")
    expect(observations).to_contain_text("listens on port 8080")
    expect(observations).not_to_contain_text("8443")
    expect(page.get_by_role("link", name="Rename…")).to_have_count(0)
    screenshot(page, "entity-as-of")
    page.get_by_role("link", name="Back to now").click()
    expect(page).to_have_url(f"{base}/-/memory/entity?project=p&name=auth")
    expect(page.locator(".memory-past")).to_have_count(0)
    expect(observations).to_contain_text("listens on port 8443")
    details = page.locator(".memory-observations > li").filter(has_text="listens on port 8443").locator("details.memory-provenance")
    expect(details.locator("li").first).not_to_be_visible()
    details.locator("summary").click()
    expect(details.locator("li")).to_have_count(2)
    expect(details.locator("li").nth(0)).to_contain_text("create_entity by agent")
    expect(details.locator("li").nth(1)).to_contain_text("update_observation by carol")
    expect(details.locator("li").nth(1)).to_contain_text("session s2")
    screenshot(page, "entity-provenance")
    details.locator("li").nth(1).locator("a.memory-event-link").click()
    expect(page).to_have_url(re.compile(r"/-/memory/ledger\?project=p&before=\d+#event-\d+$"))
    expect(page.locator("ol.memory-events li").first).to_contain_text("update_observation")


def test_a_person_searches_memory_as_it_was(served, page):
    base, then = served["base"], served["then"]
    page.goto(f"{base}/-/memory/search?project=p&q=which+port+does+auth+listen+on")
    expect(page.locator(".memory-results")).to_contain_text("listens on port 8443")
    page.get_by_label("or just after event").fill(str(then))
    page.get_by_role("button", name="Go to event").click()
    expect(page.locator(".memory-past")).to_contain_text(f"Memory as of event {then}")
    expect(page.locator(".memory-results")).to_contain_text("listens on port 8080")
    expect(page.locator(".memory-results")).not_to_contain_text("8443")
    expect(page.get_by_label("Question or keywords")).to_have_value("which port does auth listen on")
    screenshot(page, "search-as-of")
    page.locator(".memory-results li strong a").first.click()
    expect(page).to_have_url(re.compile(rf"name=auth&as_of={then}$"))
    expect(page.locator(".memory-past")).to_be_visible()
    page.locator("nav.memory-nav").get_by_role("link", name="Overview").click()
    expect(page).to_have_url(f"{base}/-/memory?as_of={then}")
    expect(page.locator(".memory-past")).to_contain_text(f"Memory as of event {then}")
    expect(page.locator("table.rows-and-columns tbody tr td").nth(1)).to_have_text("2")  # entities then
    expect(page.locator(".memory-entity-list a")).to_have_text(["auth", "ledger"])
    screenshot(page, "overview-as-of")


def test_a_person_reads_where_a_fact_came_from(served, page):
    page.goto(f"{served['base']}/-/memory/facts/1")
    card = page.locator(".memory-fact-provenance")
    expect(card).to_contain_text("record_fact by alice")
    expect(card).to_contain_text("checked the running config")
    expect(card).to_contain_text("propose_claim by agent")
    expect(card.locator(".memory-evidence").first).to_contain_text("the gateway's config file")
    screenshot(page, "fact-provenance")
    card.get_by_role("link", name="claim #1").click()
    expect(page.locator("h1")).to_contain_text("Claim #1")
