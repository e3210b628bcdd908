import asyncio
import multiprocessing
import re

import pytest
from datasette.app import Datasette

from datasette_memory import InvalidInput, Memory
from datasette_memory.plugin.connection import call_memory, memory_config

from .test_concurrency import SIZES, write_many


@pytest.fixture
def datasette(db_path):
    Memory.open(db_path).close()
    return Datasette([str(db_path)])


async def test_plugin_is_installed(datasette):
    response = await datasette.client.get("/-/plugins.json")
    assert response.status_code == 200
    plugin = next(p for p in response.json() if p["name"] == "datasette-memory")
    assert {"startup", "prepare_connection", "register_routes"} <= set(plugin["hooks"])


async def test_startup_migrates_a_served_file(tmp_path):
    path = tmp_path / "memory.db"
    import sqlite3

    sqlite3.connect(path).execute("CREATE TABLE unrelated (id INTEGER)").connection.close()
    datasette = Datasette([str(path)])
    await datasette.invoke_startup()
    tables = await datasette.get_database("memory").table_names()
    assert {"entities", "observations", "relations", "events", "checkpoints"} <= set(tables)


@pytest.mark.parametrize("path", ["/-/memory", "/-/memory/review", "/-/memory/ledger", "/-/memory/search?q=x"])
async def test_a_memory_file_served_under_another_name_is_known_by_its_schema(tmp_path, path):
    "Plain datasette team-memory.db, no configuration: the file's own tables say it is the memory file."
    Memory.open(tmp_path / "team-memory.db").close()
    datasette = Datasette([str(tmp_path / "team-memory.db")])
    page = await datasette.client.get(path)
    assert page.status_code == 200 and "memory-nav" in page.text
    data = await datasette.client.get(path.replace("?", ".json?") if "?" in path else path + ".json")
    assert data.status_code == 200


@pytest.mark.parametrize("path", ["/-/memory", "/-/memory/review", "/-/memory/ledger", "/-/memory/search?q=x"])
async def test_a_datasette_serving_no_memory_file_says_how_to_serve_one(tmp_path, path):
    import sqlite3

    sqlite3.connect(tmp_path / "notes.db").execute("CREATE TABLE notes (id INTEGER)").connection.close()
    datasette = Datasette([str(tmp_path / "notes.db")])
    page = await datasette.client.get(path)
    assert page.status_code == 404 and "memory-nav" in page.text
    assert "no memory database named memory is being served (served: notes)" in page.text
    assert "plugins: datasette-memory: database:" in page.text
    data = await datasette.client.get(path.replace("?", ".json?") if "?" in path else path + ".json")
    assert data.status_code == 404 and data.json()["error"].startswith("no memory database named memory")


async def test_the_plugin_reads_its_configuration_from_datasette(db_path, tmp_path):
    "serve passes its flags down this way; anyone running datasette configures the plugin the same way."
    Memory.open(db_path).close()
    plugin = {"search": {"semantic": False}, "sql": {"max_rows": 7}, "snapshot_dir": str(tmp_path / "snaps")}
    datasette = Datasette([str(db_path)], config={"plugins": {"datasette-memory": plugin}})
    await datasette.invoke_startup()
    config = memory_config(datasette)
    assert (config.search.semantic, config.sql.max_rows, config.snapshot_dir) == (False, 7, tmp_path / "snaps")


@pytest.mark.parametrize(
    "plugin,message",
    [
        ({"serach": {}}, "plugins.datasette-memory.serach: unknown setting; the settings are search, sql, snapshot_dir and max_request_bytes"),
        ({"max_request_bytes": 0}, "plugins.datasette-memory.max_request_bytes: must be at least 1, got 0"),
        ({"search": {"rrf_k": "sixty"}}, "plugins.datasette-memory.search.rrf_k: must be a number, got 'sixty'"),
        ({"sql": {"max_rows": 0}}, "plugins.datasette-memory.sql.max_rows: must be at least 1, got 0"),
        ({"sql": {"rows": 5}}, "plugins.datasette-memory.sql.rows: unknown cap"),
    ],
)
async def test_a_mistake_in_the_configuration_stops_startup(db_path, plugin, message):
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)], config={"plugins": {"datasette-memory": plugin}})
    with pytest.raises(InvalidInput, match=re.escape(message)):
        await datasette.invoke_startup()


async def test_overview_page_and_json(datasette, db_path):
    memory = Memory.open(db_path, project="billing", actor="agent")
    memory.create_entities([{"name": "invoices", "entityType": "service", "observations": ["<b>not html</b>"]}])
    memory.checkpoint("set up billing")
    response = await datasette.client.get("/-/memory.json")
    data = response.json()
    assert data["chain"]["ok"] is True
    assert data["projects"] == [
        {
            "project": "billing",
            "entities": 1,
            "observations": 1,
            "relations": 0,
            "events": 2,
            "pending_claims": 0,
            "latest_checkpoint": {"ts": data["projects"][0]["latest_checkpoint"]["ts"], "summary": "set up billing"},
        }
    ]
    html = (await datasette.client.get("/-/memory")).text
    assert "ledger intact: 2 events" in html
    assert "set up billing" in html
    assert 'href="/memory/entities?project=billing"' in html


async def test_a_long_ledger_is_checked_on_request(datasette, db_path, monkeypatch):
    "Above CHECKED_ON_SIGHT events the overview reports the head; ?check=chain walks the chain and finds an edit."
    monkeypatch.setattr("datasette_memory.overview.CHECKED_ON_SIGHT", 3)
    memory = Memory.open(db_path, project="billing", actor="agent")
    memory.create_entities([{"name": f"e{i}", "entityType": "service", "observations": []} for i in range(4)])
    memory.conn.executescript("DROP TRIGGER events_refuse_update; UPDATE events SET actor = 'someone else' WHERE id = 2")
    head = memory.conn.execute("SELECT hash FROM events ORDER BY id DESC").fetchone()[0]
    chain = (await datasette.client.get("/-/memory.json")).json()["chain"]
    assert chain == {
        "checked": False, "ok": None, "events": 4, "head_hash": head,
        "summary": f"ledger of 4 events, head {head[:12]}; not checked on every look above 3 events",
    }
    page = (await datasette.client.get("/-/memory")).text
    assert 'href="/-/memory?check=chain">Check the whole chain now</a>' in page
    checked = (await datasette.client.get("/-/memory.json?check=chain")).json()["chain"]
    assert checked["checked"] is True and checked["ok"] is False and checked["broken_event_id"] == 2
    assert "ledger broken at event 2" in (await datasette.client.get("/-/memory?check=chain")).text
    bad = await datasette.client.get("/-/memory.json?check=everything")
    assert bad.status_code == 400 and bad.json()["field"] == "check"


async def test_overview_respects_view_permission(db_path):
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    assert (await datasette.client.get("/-/memory.json")).status_code == 403
    assert (await datasette.client.get("/-/memory.json", actor={"id": "alice"})).status_code == 200


@pytest.mark.parametrize("mutations", SIZES)
async def test_datasette_writes_alongside_other_processes(datasette, db_path, mutations):
    "Datasette's write thread and four agent processes share one file without losing a write."
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(5)
    errors = context.Queue()
    workers = [context.Process(target=write_many, args=(str(db_path), w, barrier, errors, mutations)) for w in range(4)]
    for worker in workers:
        worker.start()

    def create(i):
        return lambda memory: memory.create_entities([{"name": f"ds-{i}", "entityType": "t", "observations": []}])

    await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
    for i in range(mutations):
        await call_memory(datasette, create(i), write=True, actor="datasette")
    for worker in workers:
        worker.join(timeout=300)
    assert errors.empty()
    memory = Memory.open(db_path)
    assert len(memory.read_graph()["entities"]) == mutations + 4 * (mutations // 2)
    status = memory.verify_chain()
    assert status.ok and status.events == mutations + 4 * mutations


@pytest.fixture
def searchable(db_path):
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(
        [
            {"name": "auth-gateway", "entityType": "service", "observations": ["listens on port 8443", "<script>alert(1)</script> port"]},
            {"name": "Dana", "entityType": "person", "observations": ["Dana maintains auth"]},
        ]
    )
    memory.create_relations([{"from": "Dana", "to": "auth-gateway", "relationType": "maintains"}])
    return Datasette([str(db_path)])


async def test_search_json(searchable):
    response = await searchable.client.get("/-/memory/search.json?q=Which+port+does+auth+listen+on%3F&project=payments&expand=1")
    data = response.json()
    assert data["ok"] and data["mode"] == "natural"
    assert [(r["entity"]["name"], r["why"]) for r in data["results"]] == [
        ("auth-gateway", "match"),
        ("Dana", "neighbour: Dana maintains auth-gateway"),
    ]
    assert data["accounting"]["returned"] == 2
    assert (await searchable.client.get("/-/memory/search.json?q=port")).json()["results"] == []  # default project


@pytest.mark.parametrize(
    "query,field",
    [("q=auth&limit=x", "limit"), ("q=auth&limit=0", "limit"), ("q=auth&budget=5", "budget")],
)
async def test_search_json_bad_arguments(searchable, query, field):
    response = await searchable.client.get(f"/-/memory/search.json?{query}")
    assert response.status_code == 400
    assert response.json()["field"] == field


async def test_search_needs_view_permission(db_path):
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    assert (await datasette.client.get("/-/memory/search.json?q=x")).status_code == 403
    assert (await datasette.client.get("/-/memory/search?q=x")).status_code == 403
    assert (await datasette.client.get("/-/memory/search.json?q=x", actor={"id": "alice"})).status_code == 200


async def test_search_page_shows_results_as_data(searchable):
    html = (await searchable.client.get("/-/memory/search?q=port&project=payments")).text
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; port" in html
    assert 'href="/-/memory/entity?project=payments&amp;name=auth-gateway"' in html
    assert "matched port" in html
    empty = (await searchable.client.get("/-/memory/search?q=kubernetes&project=payments")).text
    assert "Memory holds nothing that answers this" in empty
    bad = (await searchable.client.get("/-/memory/search?q=x&limit=0")).text
    assert "limit: must be between 1 and 50" in bad


async def test_menu_links_to_memory(searchable):
    html = (await searchable.client.get("/", actor={"id": "someone"})).text
    assert 'href="/-/memory"' in html and 'href="/-/memory/search"' in html


async def test_overview_lists_the_stored_queries_and_says_when_there_are_more(db_path):
    Memory.open(db_path).close()
    queries = {f"q{i:02}": {"sql": "select 1", "title": f"<b>Query {i}</b>"} for i in range(51)}
    datasette = Datasette([str(db_path)], config={"databases": {"memory": {"queries": queries}}})
    data = (await datasette.client.get("/-/memory.json")).json()
    assert len(data["queries"]) == 50 and data["more_queries"] is True
    assert data["queries"][0] == {"name": "q00", "title": "<b>Query 0</b>", "description": None, "path": "/memory/q00"}
    html = (await datasette.client.get("/-/memory")).text
    assert "&lt;b&gt;Query 0&lt;/b&gt;" in html and "More are listed on the database page" in html
    plain = Datasette([str(db_path)])  # no configuration: the plugin gives the built-in queries
    assert "Pending claims" in (await plain.client.get("/-/memory")).text
