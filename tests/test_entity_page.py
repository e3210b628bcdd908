"""The entity page: one entity whole, its neighbourhood drawn, and a person's forms to correct it."""

import json
import re
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from datasette.app import Datasette

from datasette_memory import Memory
from datasette_memory.governed.about import statements_about
from datasette_memory.graph.entity_view import entity_page, word_diff
from datasette_memory.plugin.graph_picture import layout

from .governance import issue_reviewer, ledger_length

CURATOR = {"permissions": {"memory-curate": {"id": ["carol"]}}}
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
SVG = "{http://www.w3.org/2000/svg}"


def entity(name, entity_type="service", *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(source, relation_type, target):
    return {"from": source, "to": target, "relationType": relation_type}


@pytest.fixture
def seeded(db_path, lexical):
    """
    Project p: a chain auth -> ledger -> archive -> cold-store (three hops), Dana
    maintaining auth, and a relation from a name no entity has; one observation
    edited by carol; a fact and a claim about auth. Project q holds one entity.
    """
    memory = Memory.open(db_path, project="p", actor="agent", session="s1", config=lexical)
    memory.create_entities([
        entity("auth", "service", "listens on port 8080", "issues JWTs"),
        entity("ledger", "database", "postgres 15"),
        entity("archive", "bucket"),
        entity("cold-store", "bucket"),
        entity("Dana", "person", "on call this week"),
    ])
    memory.create_relations([
        relation("auth", "writes to", "ledger"),
        relation("ledger", "backs up to", "archive"),
        relation("archive", "copies to", "cold-store"),
        relation("Dana", "maintains", "auth"),
        relation("ghost", "watches", "auth"),
    ])
    Memory(memory.conn, project="p", actor="carol", config=lexical).update_observation("auth", "listens on port 8080", "listens on port 8443")
    memory.governed.propose_claim("Auth", "uses", "postgres")
    memory.governed.record_fact(issue_reviewer("alice"), " AUTH ", "port", "8443", "checked the config", valid_from="2020-01-01")
    Memory(memory.conn, project="q", actor="agent", config=lexical).create_entities([entity("elsewhere")])
    yield memory
    memory.close()


@pytest.fixture
async def datasette(seeded, db_path):
    datasette = Datasette([str(db_path)], config=CURATOR)
    await datasette.invoke_startup()
    return datasette


def entity_path(name, project="p", page="/-/memory/entity", **extra):
    return f"{page}?{urlencode({'project': project, 'name': name, **extra}, quote_via=quote)}"


def svg_of(html):
    "The neighbourhood picture in a page, parsed as XML (so it is well formed, every name escaped)."
    return ET.fromstring(re.search(r'<svg class="memory-graph".*?</svg>', html, re.S).group(0))


def linked_names(svg):
    "The names of the entity pages the picture links to (each link's path checked)."
    hrefs = [urlsplit(a.get("href")) for a in svg.iter(f"{SVG}a")]
    assert {href.path for href in hrefs} <= {"/-/memory/entity"}
    return {parse_qs(href.query)["name"][0] for href in hrefs}


def pictured_names(svg):
    return {
        node.find(f"{SVG}title").text.split(" (")[0].split(": not stored")[0]
        for node in svg.iter()
        if "memory-node" in node.get("class", "")
    }


def test_the_plugin_serves_the_entity_page():
    from datasette_memory import plugin

    assert {"register_entity_routes", "entity_row_actions", "entity_cell_links", "register_curation_events"} <= set(plugin.__all__)


# Reading the page


async def test_the_page_shows_observations_with_who_and_when(datasette):
    response = await datasette.client.get(entity_path("auth"))
    assert response.status_code == 200
    assert re.search(r"<h1><bdi>auth</bdi>", response.text)
    observations = (await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()["observations"]
    assert [o["content"] for o in observations] == ["listens on port 8443", "issues JWTs"]
    edited, created = observations[0]["added"], observations[1]["added"]
    assert (edited["actor"], edited["kind"]) == ("carol", "update_observation")
    assert (created["actor"], created["kind"], created["session"]) == ("agent", "create_entity", "s1")
    assert "edited by <strong><bdi>carol</bdi></strong>" in response.text
    assert f'datetime="{edited["ts"]}"' in response.text


async def test_relations_out_and_in_link_to_the_other_end(datasette):
    data = (await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()
    assert [(r["relationType"], r["other"], r["stored"]) for r in data["relations"]["out"]] == [("writes to", "ledger", True)]
    assert [(r["relationType"], r["other"], r["stored"]) for r in data["relations"]["in"]] == [
        ("maintains", "Dana", True), ("watches", "ghost", False)
    ]
    html = (await datasette.client.get(entity_path("auth"))).text
    assert f'href="{entity_path("ledger")}"'.replace("&", "&amp;") in html
    assert f'href="{entity_path("Dana")}"'.replace("&", "&amp;") in html
    assert f'href="{entity_path("ghost")}"'.replace("&", "&amp;") not in html
    assert re.search(r'memory-unstored"><bdi>ghost</bdi></span> <span class="memory-badge">not stored', html)


async def test_facts_and_claims_about_it_match_its_name_as_values_do(datasette):
    data = (await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()
    assert [(f["subject"], f["object"], f["holds_now"]) for f in data["facts"]] == [(" AUTH ", "8443", True)]
    assert [(c["subject"], c["object"], c["status"]) for c in data["claims"]] == [("Auth", "postgres", "candidate")]
    html = (await datasette.client.get(entity_path("auth"))).text
    assert 'href="/-/memory/facts/1"' in html and 'href="/-/memory/claims/1"' in html
    ledger = (await datasette.client.get(entity_path("ledger", page="/-/memory/entity.json"))).json()
    assert ledger["facts"] == ledger["claims"] == []


async def test_history_is_newest_first_with_a_word_diff_of_the_edit(datasette):
    data = (await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()
    kinds = [(e["kind"], e["actor"]) for e in data["history"]]
    assert kinds == [
        ("update_observation", "carol"),
        ("create_relation", "agent"), ("create_relation", "agent"), ("create_relation", "agent"),
        ("create_entity", "agent"),
    ]
    assert data["history"][0]["changes"] == [[
        {"op": "equal", "text": "listens on port "}, {"op": "delete", "text": "8080"}, {"op": "insert", "text": "8443"}
    ]]
    html = (await datasette.client.get(entity_path("auth"))).text
    assert '<div class="memory-diff"><span><bdi>listens on port </bdi></span><del><bdi>8080</bdi></del><ins><bdi>8443</bdi></ins></div>' in html


async def test_the_picture_holds_exactly_the_names_within_two_hops(datasette):
    svg = svg_of((await datasette.client.get(entity_path("auth"))).text)
    assert pictured_names(svg) == {"auth", "ledger", "archive", "Dana", "ghost"}  # cold-store is three hops away
    assert linked_names(svg) == {"auth", "ledger", "archive", "Dana"}  # ghost names no stored entity
    assert len(list(svg.iter(f"{SVG}path"))) == 1 + 4  # the arrowhead, and one path per relation between pictured names
    neighbourhood = (await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()["neighbourhood"]
    assert [(n["name"], n["hops"]) for n in neighbourhood["nodes"]] == [("auth", 0), ("Dana", 1), ("ghost", 1), ("ledger", 1), ("archive", 2)]
    assert (neighbourhood["total"], neighbourhood["left_out"]) == (5, 0)


async def test_the_same_graph_gives_the_same_picture(datasette, tmp_path, lexical):
    first = svg_of((await datasette.client.get(entity_path("auth"))).text)
    again = svg_of((await datasette.client.get(entity_path("auth"))).text)
    assert ET.tostring(first) == ET.tostring(again)
    # the same graph stored in another order, by other hands, in another file
    other = Memory.open(tmp_path / "other" / "memory.db", project="p", actor="someone", config=lexical)
    other.create_entities([entity(n, t) for n, t in (("Dana", "person"), ("archive", "bucket"), ("cold-store", "bucket"), ("ledger", "database"), ("auth", "service"))])
    other.create_relations([
        relation("ghost", "watches", "auth"), relation("Dana", "maintains", "auth"), relation("archive", "copies to", "cold-store"),
        relation("ledger", "backs up to", "archive"), relation("auth", "writes to", "ledger"),
    ])
    mirrored = layout(entity_page(other.conn, "p", "auth")["neighbourhood"])
    other.close()
    assert mirrored == layout((await datasette.client.get(entity_path("auth", page="/-/memory/entity.json"))).json()["neighbourhood"])


async def test_a_crowded_neighbourhood_is_cut_and_says_how_many_were_left_out(db_path, lexical):
    memory = Memory.open(db_path, project="p", config=lexical)
    memory.create_entities([entity("hub")] + [entity(f"spoke-{i:02}") for i in range(30)])
    memory.create_relations([relation("hub", "feeds", f"spoke-{i:02}") for i in range(30)])
    memory.create_relations([relation(f"spoke-{i:02}", "uses", f"leaf-{i:02}") for i in range(30)])
    memory.close()
    datasette = Datasette([str(db_path)])
    html = (await datasette.client.get(entity_path("hub"))).text
    names = pictured_names(svg_of(html))
    assert len(names) == 40 and {f"spoke-{i:02}" for i in range(30)} <= names  # the nearest are kept
    assert "21 of the farthest left out" in html


async def test_an_entity_without_relations_has_nothing_to_draw(datasette):
    response = await datasette.client.get(entity_path("elsewhere", project="q"))
    assert response.status_code == 200
    assert '<svg class="memory-graph"' not in response.text and "has no relations, so it has no neighbourhood to draw" in response.text


@pytest.mark.parametrize("name", ["foo/bar", "Zoë <b>&amp; \"quotes\" 'too'</b>", "a b+c&d=e?#", "<script>alert(1)</script>"])
async def test_awkward_names_are_shown_as_text(db_path, lexical, name):
    memory = Memory.open(db_path, project="p", config=lexical)
    memory.create_entities([entity(name, "<i>type</i>", "<img src=x onerror=alert(1)>"), entity("plain")])
    memory.create_relations([relation(name, "is <em>near</em>", "plain")])
    memory.update_observation(name, "<img src=x onerror=alert(1)>", "<img src=y>")
    memory.close()
    datasette = Datasette([str(db_path)])
    response = await datasette.client.get(entity_path(name))
    assert response.status_code == 200
    for raw in ("<script>alert", "<img", "<em>near", "<i>type", "<b>&amp;"):
        assert raw not in response.text
    assert name in pictured_names(svg_of(response.text))
    data = (await datasette.client.get(entity_path(name, page="/-/memory/entity.json"))).json()
    assert data["entity"]["name"] == name
    plain = svg_of((await datasette.client.get(entity_path("plain"))).text)
    assert linked_names(plain) == {name, "plain"}


async def test_an_unknown_entity_is_a_404_naming_it(datasette):
    page = await datasette.client.get(entity_path("nobody <here>"))
    assert page.status_code == 404
    assert "no entity named &#39;nobody &lt;here&gt;&#39; in project &#39;p&#39;" in page.text
    data = await datasette.client.get(entity_path("nobody", page="/-/memory/entity.json"))
    assert data.status_code == 404
    assert data.json()["ok"] is False and data.json()["field"] == "name"
    missing = await datasette.client.get("/-/memory/entity?project=p")
    assert missing.status_code == 400 and "name: say which entity" in missing.text


async def test_an_unknown_project_is_a_404_listing_the_projects(datasette):
    response = await datasette.client.get(entity_path("auth", project="nowhere"))
    assert response.status_code == 404
    assert "there is no project &#39;nowhere&#39;; the projects are default, p, q" in response.text


async def test_the_page_needs_view_database(seeded, db_path):
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    assert (await datasette.client.get(entity_path("auth"))).status_code == 403
    assert (await datasette.client.get(entity_path("auth"), actor={"id": "alice"})).status_code == 200


async def test_an_old_name_redirects_to_the_entity_it_now_names(datasette, seeded, lexical):
    Memory(seeded.conn, project="p", config=lexical).rename_entity("ledger", "ledger-db")
    page = await datasette.client.get(entity_path("ledger"))
    assert (page.status_code, page.headers["location"]) == (302, entity_path("ledger-db"))
    data = await datasette.client.get(entity_path("ledger", page="/-/memory/entity.json"))
    assert data.headers["location"] == entity_path("ledger-db", page="/-/memory/entity.json")


async def test_datasette_pages_link_to_the_entity_page(datasette):
    row = await datasette.client.get("/memory/entities/1")
    assert "Open entity page" in row.text and entity_path("auth").replace("&", "&amp;") in row.text
    relations = await datasette.client.get("/memory/relations")
    for name in ("auth", "ledger", "ghost"):
        assert f'<a href="{entity_path(name)}"><bdi>{name}</bdi></a>'.replace("&", "&amp;", 1) in relations.text
    other_table = await datasette.client.get("/memory/observations")
    assert "/-/memory/entity?" not in other_table.text


# The core under the page: the ledger replayed


def test_history_follows_renames_and_merges_and_not_a_reused_name(db_path, lexical):
    memory = Memory.open(db_path, project="p", actor="agent", config=lexical)
    memory.create_entities([entity("auth", "service", "one"), entity("gateway", "service", "two")])
    memory.rename_entity("auth", "auth-service")
    memory.create_entities([entity("auth", "service", "a new thing")])  # the old name, for another entity
    memory.merge_entity("gateway", "auth-service")
    page = entity_page(memory.conn, "p", "auth-service")
    assert [(e["kind"], e["target"]) for e in page["history"]] == [
        ("merge_entity", "gateway"), ("rename_entity", "auth"), ("create_entity", "gateway"), ("create_entity", "auth")
    ]
    merged = page["observations"][1]
    assert (merged["content"], merged["added"]["kind"], merged["added"]["merged_from"]) == ("two", "merge_entity", "gateway")
    assert merged["added"]["origin"]["kind"] == "create_entity"
    assert page["entity"]["aliases"] == ["auth", "gateway"]
    assert [e["kind"] for e in entity_page(memory.conn, "p", "auth")["history"]] == ["create_entity"]
    memory.close()


def test_a_name_deleted_and_created_again_starts_a_new_history(db_path, lexical):
    memory = Memory.open(db_path, project="p", config=lexical)
    memory.create_entities([entity("cache", "service", "redis 6")])
    memory.delete_entities(["cache"])
    memory.create_entities([entity("cache", "service", "redis 7")])
    page = entity_page(memory.conn, "p", "cache")
    assert [e["kind"] for e in page["history"]] == ["create_entity"]
    assert page["observations"][0]["added"]["event_id"] == page["history"][0]["id"]
    memory.close()


def test_other_events_and_redacted_values_do_not_break_the_history(db_path, lexical):
    "A note's target is its project, which may share an entity's name; a value cleared from the ledger reads as None."
    memory = Memory.open(db_path, project="p", config=lexical)
    memory.create_entities([entity("p", "project", "the project itself"), entity("q")])
    memory.append_event("decided to keep p", kind="decision")
    memory.rename_entity("q", "q2")
    memory.update_observation("p", "the project itself", "the project, itself")
    memory.conn.executescript(
        "DROP TRIGGER events_refuse_update; UPDATE events SET new = NULL WHERE kind IN ('rename_entity', 'update_observation')"
    )
    assert [e["kind"] for e in entity_page(memory.conn, "p", "p")["history"]] == ["update_observation", "create_entity"]
    assert entity_page(memory.conn, "p", "p")["history"][0]["changes"] == [word_diff("the project itself", "(redacted)")]
    renamed = entity_page(memory.conn, "p", "q2")  # where q went is redacted: its old history cannot be followed
    assert renamed["history"] == [] and renamed["observations"] == []
    memory.close()


def test_word_diff():
    assert word_diff("a b c", "a x c") == [
        {"op": "equal", "text": "a "}, {"op": "delete", "text": "b"}, {"op": "insert", "text": "x"}, {"op": "equal", "text": " c"}
    ]
    assert word_diff("", "new") == [{"op": "insert", "text": "new"}]


def test_statements_about_compare_subjects_as_values(db_path):
    memory = Memory.open(db_path, project="p", actor="agent")
    memory.governed.propose_claim("Ｄａｎａ  Scully", "role", "on call")  # full-width letters and doubled spacing
    assert [c["subject"] for c in statements_about(memory.conn, "p", ["dana scully"])["claims"]] == ["Ｄａｎａ  Scully"]
    assert statements_about(memory.conn, "p", ["dana"]) == {"facts": [], "claims": []}
    memory.close()


# Curation forms

# curation: (query-string extras, posted fields, expected ledger kinds, where apply leads)
CURATIONS = {
    "edit-observation": ({"index": "1"}, {"old": "issues JWTs", "new": "issues JWTs signed with RS256"}, ["update_observation"], "auth"),
    "delete-observation": ({"index": "1"}, {"observation": "issues JWTs"}, ["delete_observation"], "auth"),
    "rename": ({}, {"new_name": "auth-service"}, ["rename_entity"], "auth-service"),
    "merge": ({}, {"into": "ledger"}, ["merge_entity"], "ledger"),
    "delete-relation": ({}, {"relation": json.dumps(["auth", "writes to", "ledger"])}, ["delete_relation"], "auth"),
}
REFUSED = ["anonymous", "token", "token for the curator", "person without memory-curate"]


async def caller_arguments(datasette, caller):
    if caller == "anonymous":
        return {"headers": SAME_SITE}
    if caller.startswith("token"):
        token = await datasette.create_token("carol" if "curator" in caller else "agent")
        return {"headers": {"Authorization": f"Bearer {token}", **SAME_SITE}}
    if caller == "person without memory-curate":
        return {"actor": {"id": "bob"}, "headers": SAME_SITE}
    return {"actor": {"id": caller}, "headers": SAME_SITE}


async def curating(db_path, caller):
    "A Datasette for ``caller``: root needs root enabled, and no memory-curate block (Datasette's allow-lists are exclusive)."
    datasette = Datasette([str(db_path)], config=None if caller == "root" else CURATOR)
    datasette.root_enabled = caller == "root"
    await datasette.invoke_startup()
    return datasette


@pytest.mark.parametrize("caller", REFUSED)
@pytest.mark.parametrize("curation", CURATIONS)
async def test_curation_is_refused_to_anyone_but_a_person_holding_memory_curate(seeded, db_path, curation, caller):
    datasette = await curating(db_path, caller)
    extras, fields, _, _ = CURATIONS[curation]
    path = entity_path("auth", page=f"/-/memory/entity/{curation}", **extras)
    before = ledger_length(db_path)
    arguments = await caller_arguments(datasette, caller)
    assert (await datasette.client.get(path, **arguments)).status_code == 403
    for step in ("confirm", "apply"):
        response = await datasette.client.post(path, data={**fields, "step": step}, **arguments)
        assert response.status_code == 403
        assert "memory-curate" in response.text
    assert ledger_length(db_path) == before
    page = await datasette.client.get(entity_path("auth"), **arguments)
    assert "/-/memory/entity/rename" not in page.text and "edit-observation" not in page.text


@pytest.mark.parametrize("caller", ["carol", "root"])
@pytest.mark.parametrize("curation", CURATIONS)
async def test_a_curator_confirms_then_applies(seeded, db_path, curation, caller):
    datasette = await curating(db_path, caller)
    extras, fields, kinds, remains = CURATIONS[curation]
    path = entity_path("auth", page=f"/-/memory/entity/{curation}", **extras)
    arguments = await caller_arguments(datasette, caller)
    entity_html = (await datasette.client.get(entity_path("auth"), **arguments)).text
    assert f"/-/memory/entity/{curation}?" in entity_html
    form = await datasette.client.get(path, **arguments)
    assert form.status_code == 200 and 'name="step" value="confirm"' in form.text

    before = ledger_length(db_path)
    posted = await datasette.client.post(path, data={**fields, "step": "confirm"}, **arguments)
    assert posted.status_code == 302 and "&draft=" in posted.headers["location"]  # POST-redirect-GET
    confirm = await datasette.client.get(posted.headers["location"], **{k: v for k, v in arguments.items() if k != "headers"})
    assert confirm.status_code == 200
    assert "What will change" in confirm.text and 'name="step" value="apply"' in confirm.text
    assert ledger_length(db_path) == before  # rehearsed, and rolled back

    applied = await datasette.client.post(path, data={**fields, "step": "apply"}, **arguments)
    assert (applied.status_code, applied.headers["location"]) == (302, entity_path(remains))
    message = datasette.unsign(applied.cookies["ds_messages"], "messages")
    assert message and message[0][1] == datasette.INFO
    memory = Memory.open(db_path)
    new_events = memory.conn.execute("SELECT kind, actor FROM events WHERE id > ?", [before]).fetchall()
    assert new_events == [(kind, caller) for kind in kinds]
    assert memory.verify_chain().ok
    memory.close()
    assert (await datasette.client.get(entity_path(remains), **arguments)).status_code == 200


async def test_the_entity_pages_links_fill_in_the_forms(datasette):
    carol = {"actor": {"id": "carol"}}
    edit = await datasette.client.get(entity_path("auth", page="/-/memory/entity/edit-observation", index="1"), **carol)
    assert '<input type="hidden" name="old" value="issues JWTs">' in edit.text
    assert ">issues JWTs</textarea>" in edit.text
    delete = await datasette.client.get(entity_path("auth", page="/-/memory/entity/delete-observation", index="1"), **carol)
    assert 'value="issues JWTs" checked' in delete.text
    target = json.dumps(["auth", "writes to", "ledger"])
    relation = await datasette.client.get(entity_path("auth", page="/-/memory/entity/delete-relation", relation=target), **carol)
    assert 'value="[&#34;auth&#34;, &#34;writes to&#34;, &#34;ledger&#34;]" checked' in relation.text
    page = (await datasette.client.get(entity_path("auth"), **carol)).text
    assert entity_path("auth", page="/-/memory/entity/delete-relation", relation=target).replace("&", "&amp;") in page


async def test_the_confirmation_shows_what_will_change(datasette, db_path):
    carol = {"actor": {"id": "carol"}, "headers": SAME_SITE, "follow_redirects": True}
    path = entity_path("auth", page="/-/memory/entity/edit-observation")
    response = await datasette.client.post(path, data={"old": "issues JWTs", "new": "issues JWTs signed with RS256", "step": "confirm"}, **carol)
    assert '<span><bdi>issues JWTs</bdi></span><ins><bdi> signed with RS256</bdi></ins>' in response.text
    assert '<input type="hidden" name="new" value="issues JWTs signed with RS256">' in response.text
    rename = await datasette.client.post(entity_path("ledger", page="/-/memory/entity/rename"), data={"new_name": "ledger-db", "step": "confirm"}, **carol)
    assert "<strong><bdi>ledger</bdi></strong> will be called <strong><bdi>ledger-db</bdi></strong>" in rename.text
    assert "2 relations follow it" in rename.text
    assert "<del><bdi>ledger</bdi></del><ins><bdi>-db</bdi></ins>" not in rename.text and "<del><bdi>ledger</bdi></del>" in rename.text


async def test_after_a_rename_the_old_name_still_finds_it(datasette):
    carol = {"actor": {"id": "carol"}, "headers": SAME_SITE}
    response = await datasette.client.post(
        entity_path("auth", page="/-/memory/entity/rename"), data={"new_name": "identity-service", "step": "apply"}, **carol
    )
    assert response.headers["location"] == entity_path("identity-service")
    found = (await datasette.client.get("/-/memory/search.json?project=p&q=auth")).json()
    assert "identity-service" in [r["entity"]["name"] for r in found["results"]]
    page = (await datasette.client.get(entity_path("identity-service", page="/-/memory/entity.json"))).json()
    assert page["entity"]["aliases"] == ["auth"]
    assert page["history"][0]["summary"] == "renamed auth to identity-service"
    assert len(page["history"]) == 6  # what happened under the old name is still its history


@pytest.mark.parametrize(
    "curation,fields,field",
    [
        ("rename", {"new_name": "ledger"}, "new_name: an entity named 'ledger' exists"),
        ("rename", {"new_name": ""}, "new_name:"),
        ("edit-observation", {"old": "issues JWTs", "new": "   "}, "new: must not be empty"),
        ("edit-observation", {"old": "never said", "new": "x"}, "old: entity 'auth' has no observation 'never said'"),
        ("merge", {"into": "nobody"}, "into: no entity named 'nobody'"),
        ("merge", {"into": "auth"}, "into: is the entity being merged"),
        ("delete-observation", {"observation": "never said"}, "observation: auth has no observation 'never said'"),
        ("delete-relation", {"relation": '["auth", "writes to", "nowhere"]'}, "relation: auth has no relation"),
        ("delete-relation", {"relation": "not json"}, "relation: auth has no relation"),
        ("edit-observation", {"old": "issues JWTs", "new": "token ghp_" + "a" * 36}, "new:"),
    ],
)
@pytest.mark.parametrize("step", ["confirm", "apply"])
async def test_bad_input_shows_the_form_again_naming_the_field(datasette, db_path, curation, fields, field, step):
    before = ledger_length(db_path)
    response = await datasette.client.post(
        entity_path("auth", page=f"/-/memory/entity/{curation}"), data={**fields, "step": step}, actor={"id": "carol"}, headers=SAME_SITE,
        follow_redirects=True,
    )
    assert response.status_code == 400 and response.request.method == "GET"  # reached by a redirect: reloading sends nothing
    assert field.replace("'", "&#39;") in response.text
    assert 'name="step" value="confirm"' in response.text  # the form, to try again
    assert ledger_length(db_path) == before


async def test_a_form_for_an_unknown_entity_or_curation_is_a_404(datasette):
    carol = {"actor": {"id": "carol"}}
    assert (await datasette.client.get(entity_path("nobody", page="/-/memory/entity/rename"), **carol)).status_code == 404
    unknown = await datasette.client.get(entity_path("auth", page="/-/memory/entity/explode"), **carol)
    assert unknown.status_code == 404 and "edit-observation, delete-observation, rename, merge, delete-relation" in unknown.text


async def test_a_cross_site_page_cannot_make_a_curators_browser_curate(datasette, db_path):
    before = ledger_length(db_path)
    response = await datasette.client.post(
        entity_path("auth", page="/-/memory/entity/rename"),
        data={"new_name": "evil", "step": "apply"}, actor={"id": "carol"}, headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert response.status_code == 403
    assert ledger_length(db_path) == before
