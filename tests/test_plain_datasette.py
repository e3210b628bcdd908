"""``pip install datasette-memory`` into an existing Datasette: ``datasette FILE`` with no wrapper serves the memory pages.

No configuration names the file here: the plugin knows it by its schema, and
gives it the stored queries, descriptions and facets ``serve`` gets from
``datasette.yaml`` and ``metadata.yml``. Checked in process, through a real
``datasette`` subprocess, and in Chromium; a user's ``--template-dir`` wins
over the plugin's templates; and what the user's own configuration says wins
over what the plugin gives.
"""

import contextlib
import json
import os
import subprocess
import sys
import threading

import pytest
import yaml
from datasette.app import Datasette
from datasette.utils import StartupError

from datasette_memory import Memory
from datasette_memory.plugin.resources import resource_path

from .governance import store_governed
from .serving import screenshot
from .test_cli import fetch, free_port

BUILT_IN = yaml.safe_load(resource_path("datasette.yaml").read_text())["databases"]["memory"]
QUERIES = BUILT_IN["queries"]
FACETED = {table: options["facets"] for table, options in BUILT_IN["tables"].items() if "facets" in options}


@pytest.fixture
def team(tmp_path):
    "A memory file named team.db (so no default name finds it): project p with claims and facts."
    path = tmp_path / "team.db"
    store_governed(path).close()
    return path


async def started(*paths, **options) -> Datasette:
    datasette = Datasette([str(p) for p in paths], **options)
    await datasette.invoke_startup()
    return datasette


async def test_the_memory_pages_are_served_for_a_file_known_by_its_schema(team):
    datasette = await started(team)
    overview = (await datasette.client.get("/-/memory.json")).json()
    assert overview["database"] == "team"
    assert {q["name"] for q in overview["queries"]} == set(QUERIES)
    for path in ("/-/memory", "/-/memory/review?project=p", "/-/memory/ledger?project=p", "/-/memory/entity?project=p&name=auth"):
        assert (await datasette.client.get(path)).status_code == 200, path


async def test_every_stored_query_runs_with_its_title_and_description(team):
    datasette = await started(team)
    for name, query in QUERIES.items():
        response = await datasette.client.get(f"/team/{name}.json?project=p&days=0")
        assert response.status_code == 200, (name, response.text[:300])
        page = (await datasette.client.get(f"/team/{name}?project=p")).text
        assert query["title"] in page, name
    pending = (await datasette.client.get("/team/pending_claims.json?project=p&_shape=objects")).json()["rows"]
    assert [(row["subject"], row["predicate"], row["object"]) for row in pending] == [("auth", "port", "8443")]
    stored = await datasette.get_query("team", "pending_claims")
    assert stored.is_trusted and stored.source == "plugin"  # runs with view-query alone; no one edits it from a page


async def test_the_tables_have_their_facets_and_descriptions(team):
    datasette = await started(team)
    for table, facets in FACETED.items():
        data = (await datasette.client.get(f"/team/{table}.json?_extra=facet_results")).json()
        assert set(data["facet_results"]["results"]) == set(facets), table
    entities = (await datasette.client.get("/team/entities")).text
    assert "Knowledge-graph nodes, unique per project and name." in entities
    tables = (await datasette.client.get("/team.json")).json()["tables"]
    assert [t["hidden"] for t in tables if t["name"] == "memory_meta"] == [True]  # as serve hides it
    database = (await datasette.client.get("/team")).text
    assert "What agents remember, with a hash-chained ledger of every change." in database


async def test_what_the_configuration_says_wins_over_the_built_in(team):
    config = {"databases": {"team": {
        "queries": {"pending_claims": {"sql": "select 'mine' as whose", "title": "My pending claims"}},
        "tables": {"entities": {"facets": ["entity_type"]}},
    }}}
    datasette = await started(team, config=config)
    mine = (await datasette.client.get("/team/pending_claims.json?_shape=objects")).json()["rows"]
    assert mine == [{"whose": "mine"}]
    facets = (await datasette.client.get("/team/entities.json?_extra=facet_results")).json()["facet_results"]["results"]
    assert set(facets) == {"entity_type"}
    assert (await datasette.client.get("/team/current_facts.json")).status_code == 200  # the rest are still given


async def test_a_database_that_is_not_memory_gets_none_of_it(team, tmp_path):
    import sqlite3

    sqlite3.connect(tmp_path / "notes.db").execute("CREATE TABLE events (id INTEGER)").connection.close()
    datasette = await started(tmp_path / "notes.db", team)
    assert (await datasette.client.get("/-/memory.json")).json()["database"] == "team"
    assert (await datasette.client.get("/notes/pending_claims.json")).status_code == 404
    assert (await datasette.client.get("/notes/events.json?_extra=facet_results")).json()["facet_results"]["results"] == {}


async def test_several_memory_files_are_refused_until_the_configuration_picks_one(team, tmp_path):
    Memory.open(tmp_path / "other.db").close()
    with pytest.raises(StartupError, match=r"2 databases hold memory \((team, other|other, team)\); say which one .*"
                                           r"plugins: datasette-memory: database: NAME"):
        await started(team, tmp_path / "other.db")
    datasette = await started(team, tmp_path / "other.db", config={"plugins": {"datasette-memory": {"database": "other"}}})
    assert (await datasette.client.get("/-/memory.json")).json()["database"] == "other"
    assert (await datasette.client.get("/other/pending_claims.json")).status_code == 200
    assert (await datasette.client.get("/team/pending_claims.json")).status_code == 404


async def test_an_immutable_memory_file_is_known_too(team):
    "datasette -i team.db, as a restored copy is browsed: the pages and queries, and no migration or write."
    before = team.read_bytes()
    datasette = Datasette(immutables=[str(team)])
    await datasette.invoke_startup()
    assert (await datasette.client.get("/-/memory.json")).json()["database"] == "team"
    rows = (await datasette.client.get("/team/pending_claims.json?project=p&_shape=objects")).json()["rows"]
    assert [row["object"] for row in rows] == ["8443"]
    assert team.read_bytes() == before


async def test_a_template_in_template_dir_wins_over_the_plugins(team, tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "memory_overview.html").write_text(
        '{% extends "_memory_page.html" %}{% block content %}<p id="ours">Our own overview of {{ database }}</p>{% endblock %}'
    )
    datasette = await started(team, template_dir=str(templates))
    page = (await datasette.client.get("/-/memory")).text
    assert '<p id="ours">Our own overview of team</p>' in page and "memory-nav" in page  # the plugin's other templates still serve
    review = (await datasette.client.get("/-/memory/review?project=p")).text
    assert "8443" in review  # a template not overridden is the plugin's


# ---------------------------------------------------------------- a real datasette process


@contextlib.contextmanager
def plain_datasette(*arguments, env=None):
    "``datasette ARGUMENTS`` on a free loopback port, as someone who installed the plugin runs it: the base URL."
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", *map(str, arguments), "--port", str(port)],
        env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1", **(env or {})}, stderr=subprocess.PIPE, text=True,
    )
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            fetch(f"{base}/-/versions.json", timeout=60)
        except OSError:
            pytest.fail("datasette did not start:\n" + "".join(lines))
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_datasette_process_serves_the_pages_queries_and_facets(team, tmp_path):
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "memory_ledger.html").write_text("<p>our ledger page for {{ project }}</p>")
    with plain_datasette(team, "--template-dir", templates) as base:
        overview = json.loads(fetch(f"{base}/-/memory.json"))
        assert overview["database"] == "team" and {q["name"] for q in overview["queries"]} == set(QUERIES)
        assert b"memory-nav" in fetch(f"{base}/-/memory/review?project=p")
        rows = json.loads(fetch(f"{base}/team/pending_claims.json?project=p&_shape=objects"))["rows"]
        assert [row["object"] for row in rows] == ["8443"]
        facets = json.loads(fetch(f"{base}/team/claims.json?_extra=facet_results"))["facet_results"]["results"]
        assert set(facets) == set(FACETED["claims"])
        assert fetch(f"{base}/-/memory/ledger?project=p").decode().strip() == "<p>our ledger page for p</p>"


def test_a_person_clicks_from_the_overview_to_a_stored_query(team, page):
    "In Chromium, on plain datasette: the overview's list of stored queries leads to the query, which shows the claim."
    with plain_datasette(team) as base:
        page.goto(f"{base}/-/memory?project=p")
        page.get_by_role("link", name="Pending claims").first.click()
        page.wait_for_url("**/team/pending_claims**")
        assert page.locator("h1").first.inner_text().strip() == "Pending claims"
        page.fill("input[name=project]", "p")
        page.locator("input[type=submit]").first.click()
        page.wait_for_load_state()
        assert "8443" in page.locator("table.rows-and-columns").inner_text()
        screenshot(page, "plain-datasette-pending-claims")
        page.goto(f"{base}/team/entities")
        page.get_by_role("link", name="p", exact=True).first.click()  # the project facet
        page.wait_for_url("**project=p**")
        assert "auth" in page.locator("table.rows-and-columns").inner_text()
