"""No door around the ledger: Datasette's own write paths refuse every memory table, for every actor.

Every actor here is granted every write action by the configuration (and root
holds them all anyway), and the agent's own table proves the grants work: the
refusals come from the plugin's deny on memory's tables, nothing else. After
each attempt the memory tables' contents, the ledger head and ``verify`` are
checked unchanged.
"""

import hashlib
import sqlite3

import pytest
from datasette.app import Datasette

from datasette_memory import Memory
from datasette_memory.plugin.permissions import memory_table_names
from datasette_memory.sqltools import SqlTools

from .governance import as_actor, issue_reviewer

WRITE_ACTIONS = [
    "insert-row", "update-row", "delete-row", "alter-table", "drop-table", "drop-view", "set-column-type",
    "create-table", "execute-sql", "execute-write-sql", "store-query",
]
EVERYONE_MAY_WRITE = {"permissions": {action: True for action in WRITE_ACTIONS}}
ACTORS = ["anonymous", "agent token", "root", "root token", "reviewer"]


def memory_state(path) -> tuple:
    "What must not change: every memory table's rows (FTS internals included), the ledger head, verify."
    conn = sqlite3.connect(path)
    try:
        digests = {}
        for name in memory_table_names():
            try:
                rows = conn.execute(f'SELECT * FROM "{name}"').fetchall()
            except sqlite3.OperationalError:
                rows = ["(contentless)"]
            digests[name] = hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()
        head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    memory = Memory.open(path)
    verified = memory.verify_chain().ok and memory.check_replay()["ok"]
    memory.close()
    return digests, head, verified


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    path = tmp_path_factory.mktemp("side-door") / "memory.db"
    memory = Memory.open(path, project="p", actor="agent")
    memory.create_entities([{"name": "auth", "entityType": "service", "observations": ["port 8443"]}])
    memory.create_relations([{"from": "auth", "to": "db", "relationType": "uses"}])
    memory.checkpoint("set up")
    memory.governed.propose_claim("auth", "port", "8443")
    memory.governed.record_fact(issue_reviewer("alice"), "auth", "owner", "Dana", "seen in the runbook")
    memory.close()
    SqlTools(path, project="p", actor="agent").write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    return path


@pytest.fixture
async def datasette(served):
    datasette = Datasette([str(served)], config=EVERYONE_MAY_WRITE)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    return datasette


def attempts(table: str, pk: str = "1") -> list[tuple[str, dict]]:
    "Every way Datasette writes to a table: (path, JSON body)."
    return [
        (f"/memory/{table}/-/insert", {"row": {"id": 999}}),
        (f"/memory/{table}/-/upsert", {"rows": [{"id": 1}]}),
        (f"/memory/{table}/{pk}/-/update", {"update": {"id": 1}}),
        (f"/memory/{table}/{pk}/-/delete", {}),
        (f"/memory/{table}/-/alter", {"operations": [{"op": "add_column", "args": {"name": "extra", "type": "text"}}]}),
        (f"/memory/{table}/-/drop", {"confirm": True}),
        ("/memory/-/create", {"table": table, "row": {"id": 999}}),
        ("/memory/-/execute-write", {"sql": f'INSERT INTO "{table}" DEFAULT VALUES'}),
        ("/memory/-/execute-write", {"sql": f'DELETE FROM "{table}"'}),
        ("/memory/-/execute-write", {"sql": f'UPDATE "{table}" SET rowid = rowid'}),
        ("/memory/-/execute-write", {"sql": f'DROP TABLE "{table}"'}),
        ("/memory/-/execute-write", {"sql": f'ALTER TABLE "{table}" ADD COLUMN extra TEXT'}),
        ("/memory/-/queries/store", {"name": f"write_{table}", "sql": f'DELETE FROM "{table}"', "title": "x"}),
    ]


@pytest.mark.parametrize("actor", ACTORS)
async def test_every_write_path_refuses_every_memory_table(datasette, served, actor):
    options = await as_actor(datasette, actor)
    before = memory_state(served)
    tried = 0
    for table in memory_table_names():
        for path, body in attempts(table):
            response = await datasette.client.post(path, json=body, **options)
            tried += 1
            assert response.status_code in (400, 403, 404), (actor, path, body, response.status_code, response.text[:300])
    assert tried > 300
    assert memory_state(served) == before


async def test_the_refusal_says_where_to_make_the_change(datasette):
    response = await datasette.client.post("/memory/facts/-/insert", json={"row": {"id": 9}}, actor={"id": "root"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert error.startswith("facts is one of memory's tables: it changes only through datasette-memory")
    assert "/-/memory/review" in error and "MCP tools" in error
    written = await datasette.client.post(
        "/memory/-/execute-write", json={"sql": "INSERT INTO observations (entity_id, content, created_at) VALUES (1, 'x', 'now')"},
        actor={"id": "root"},
    )
    assert written.status_code == 403 and written.json()["error"].startswith("observations is one of memory's tables")


@pytest.mark.parametrize("actor", ACTORS)
async def test_the_agents_own_tables_keep_what_datasette_allows(datasette, served, actor):
    "The control: the same grants let every actor write to a table the agent made."
    options = await as_actor(datasette, actor)
    response = await datasette.client.post("/memory/notes/-/insert", json={"row": {"body": actor}}, **options)
    assert response.status_code == 201, response.text
    assert await datasette.client.post("/memory/-/execute-write", json={"sql": "UPDATE notes SET body = body"}, **options)


async def test_no_edit_buttons_on_memory_tables(datasette):
    for table in ("entities", "observations", "claims", "facts", "events"):
        page = await datasette.client.get(f"/memory/{table}", actor={"id": "root"})
        assert page.status_code == 200
        assert "Insert row" not in page.text and "insertRow" not in page.text, table
        row = await datasette.client.get(f"/memory/{table}/1", actor={"id": "root"})
        assert "row-edit" not in row.text and "Delete row" not in row.text, table
    assert "Insert row" in (await datasette.client.get("/memory/notes", actor={"id": "root"})).text
    for table in ("entities", "claims"):
        check = await datasette.allowed(action="update-row", resource=table_resource(table), actor={"id": "root"})
        assert check is False


def table_resource(table):
    from datasette.resources import TableResource

    return TableResource(database="memory", table=table)
