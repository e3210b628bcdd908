"""Shared by the SQL tool tests: a populated memory file, its persistent state, and the doors."""

import hashlib
import pathlib
import shutil
import sqlite3

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from datasette_memory import DEFAULT_PROJECT, Config, Memory, MemoryStoreError
from datasette_memory.core.stored_data import STORED_DATA_NOTE
from datasette_memory.sqltools import Limits, SqlTools
from datasette_memory.sqltools.snapshots import list_snapshots
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

# Small caps, so each rail is reached quickly.
LIMITS = Limits(
    timeout_ms=400,
    max_changed_rows=100,
    max_result_bytes=8_000,
    max_cell_chars=200,
    max_rows=500,
    default_rows=100,
    snapshots_keep=3,
    destructive_snapshots_keep=2,
    max_scan_rows=1_000,
)
ITEMS = 300


class DoorError(Exception):
    "A call refused or failed, through whichever door."


class CoreDoor:
    "Calls :class:`SqlTools` directly."

    name = "core"

    def __init__(self, tools: SqlTools):
        self.tools = tools

    @classmethod
    async def open(cls, path, project=None):
        return cls(tools_for(path, project))

    async def close(self):
        pass

    async def __call__(self, tool: str, **arguments) -> str:
        try:
            return getattr(self.tools, tool)(**arguments)
        except MemoryStoreError as e:
            raise DoorError(str(e)) from e


def tools_for(path, project=None, **options) -> SqlTools:
    options.setdefault("limits", LIMITS)
    return SqlTools(path, project=project, actor="agent", session="s1", **options)


def build(path: pathlib.Path):
    "Two projects' memory, agent tables (one with cascading children), an FTS table, a saved view, snapshots."
    for project in ("alpha", "beta"):
        memory = Memory.open(path, project=project, actor="person")
        memory.create_entities(
            [{"name": f"{project}-service", "entityType": "service", "observations": [f"{project} secret port 80{len(project)}"]}]
        )
        memory.create_relations([{"from": f"{project}-service", "to": "db", "relationType": "uses"}])
        memory.checkpoint(f"{project} work so far")
        memory.close()
    tools = tools_for(path)
    tools.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)")
    tools.write_query("INSERT INTO notes (body) VALUES ('first note'), ('second note')")
    tools.write_query("CREATE TABLE items (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INTEGER)")
    tools.write_query(
        f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ITEMS}) "
        "INSERT INTO items SELECT i, 'k' || i, i FROM n"
    )
    tools.write_query("CREATE TABLE tags (id INTEGER PRIMARY KEY, item_id INTEGER REFERENCES items(id) ON DELETE CASCADE, tag TEXT)")
    tools.write_query("INSERT INTO tags (item_id, tag) SELECT id, 'tag' || id FROM items")
    tools.write_query("CREATE VIRTUAL TABLE docs USING fts5(body)")
    tools.write_query("INSERT INTO docs (body) VALUES ('the quick brown fox'), ('jumps over the lazy dog')")
    tools.create_view("service_names", "SELECT name FROM entities WHERE entity_type = 'service'", "Names of services")
    tools.snapshot("baseline")
    tools.destructive_query("DELETE FROM notes WHERE body = 'second note'", "set up a recovery snapshot")


def copy_file(template: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    "A copy of a closed, checkpointed memory file and its snapshots in ``folder``."
    conn = sqlite3.connect(template)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copy(template, folder / template.name)
    shutil.copytree(template.parent / f"{template.stem}-snapshots", folder / f"{template.stem}-snapshots")
    return folder / template.name


def state(path: pathlib.Path) -> dict:
    """
    Everything persistent about a memory file: schema, data (audit aside), audit
    rows, files in its folder and snapshots.
    """
    conn = sqlite3.connect(path)
    try:
        schema = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
        data = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'sql_audit'"):
            try:
                rows = sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"')))
            except sqlite3.OperationalError:
                rows = ["(virtual table)"]
            data[name] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        audit = conn.execute("SELECT id, tool, ok, error FROM sql_audit ORDER BY id").fetchall()
    finally:
        conn.close()
    # SQLite's WAL and shared-memory files and advisory lock files hold no state of their own
    files = sorted(str(p.relative_to(path.parent)) for p in path.parent.rglob("*") if not p.name.endswith(("-wal", "-shm", ".lock")))
    return {"schema": schema, "data": data, "audit": audit, "files": files, "snapshots": list_snapshots(path.parent / f"{path.stem}-snapshots", path.stem)}


def assert_only_audited(before: dict, after: dict, ok: bool):
    "Nothing persistent changed but one new audit row, saying whether the call succeeded."
    for key in ("schema", "data", "files", "snapshots"):
        assert after[key] == before[key], f"{key} changed"
    assert after["audit"][:-1] == before["audit"], "audit history changed"
    assert len(after["audit"]) == len(before["audit"]) + 1, "not exactly one new audit row"
    assert after["audit"][-1][2] == int(ok)


class McpDoor:
    "Calls the tools through a real in-process fastmcp client of the bridge."

    def __init__(self, backend, client):
        self.backend = backend
        self.client = client

    @classmethod
    async def open(cls, path, project=None):
        "A client of a bridge pinned to ``project`` (or the default project), with the test caps."
        backend = LocalBackend(path, actor="agent", config=Config(sql=LIMITS))
        client = Client(create_server(backend, project=project or DEFAULT_PROJECT))
        await client.__aenter__()
        return cls(backend, client)

    async def close(self):
        await self.client.__aexit__(None, None, None)
        self.backend.close()

    async def __call__(self, tool: str, **arguments) -> str:
        try:
            result = await self.client.call_tool(tool, arguments)
        except ToolError as e:
            raise DoorError(str(e)) from e
        text = result.content[0].text
        if tool in STORED_TEXT_TOOLS:
            # the door marks stored values as data with one last "#" line: checked here, then the core's text compared
            note = f"# {STORED_DATA_NOTE}\n"
            assert text.endswith(note), text[-300:]
            return text[: -len(note)]
        return text


STORED_TEXT_TOOLS = {"read_query", "search_text", "list_tables", "describe_table", "get_schema"}
DOORS = {"core": CoreDoor, "mcp": McpDoor}


@pytest.fixture(scope="session")
def sql_template(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sql-template")
    build(folder / "memory.db")
    return folder / "memory.db"


@pytest.fixture
def path(sql_template, tmp_path):
    return copy_file(sql_template, tmp_path)


@pytest.fixture(params=list(DOORS))
async def connect(request, path):
    "``await connect(project)``: a door to the file, pinned to ``project`` if given."
    opened = []

    async def open_door(project=None):
        door = await DOORS[request.param].open(path, project)
        opened.append(door)
        return door

    yield open_door
    for door in opened:
        await door.close()
