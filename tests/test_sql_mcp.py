"""The SQL tools through real MCP clients: in-process, and over HTTP through Datasette."""

import os
import sqlite3

import click
import httpx2
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from datasette_memory import Memory
from datasette_memory.cli.options import config_options, sql_env_var as env_var
from datasette_memory.core.stored_data import STORED_DATA_NOTE
from datasette_memory.sqltools import Limits, SqlTools
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server
from mcp_bridge.sql_tools import TOOLS

SQL_TOOLS = ["read_query", "write_query", "destructive_query", "list_tables", "describe_table", "get_schema", "create_view", "snapshot", "search_text"]


@pytest.fixture
async def client(db_path):
    backend = LocalBackend(db_path, actor="claude")
    async with Client(create_server(backend, project="alpha")) as client:
        yield client
    backend.close()


def audit(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT tool, ok, actor, project, error FROM sql_audit ORDER BY id").fetchall()
    finally:
        conn.close()


async def test_sql_tools_are_offered_with_truthful_hints(client):
    tools = {tool.name: tool for tool in await client.list_tools()}
    assert [name for name in tools if name in SQL_TOOLS] == SQL_TOOLS
    hints = {name: (tools[name].annotations.read_only_hint, tools[name].annotations.destructive_hint) for name in SQL_TOOLS}
    for name in ("read_query", "list_tables", "describe_table", "get_schema", "search_text"):
        assert hints[name] == (True, False)
    for name in ("write_query", "destructive_query", "create_view", "snapshot"):
        assert hints[name] == (False, True)
    assert tools["read_query"].input_schema["required"] == ["query"]


async def test_results_are_the_core_text(client, db_path):
    await client.call_tool("write_query", {"query": "CREATE TABLE notes (body TEXT)"})
    result = await client.call_tool("write_query", {"query": "INSERT INTO notes VALUES ('a,b'), (NULL) RETURNING body"})
    assert result.content[0].text == 'body\n"a,b"\n\n# 2 returned rows (complete)\n# 2 rows affected\n'
    assert result.structured_content is None
    core = SqlTools(db_path, project="alpha").read_query("SELECT * FROM notes")
    read = await client.call_tool("read_query", {"query": "SELECT * FROM notes"})
    # a read's stored values are marked as data by one more "#" line, as every tool carrying stored text marks them
    assert read.content[0].text == core + f"# {STORED_DATA_NOTE}\n"
    assert read.meta["datasette-memory/note"] == STORED_DATA_NOTE


async def test_calls_are_audited_as_the_bridge_actor_and_project(client, db_path):
    await client.call_tool("list_tables", {})
    with pytest.raises(ToolError, match="query: must be string, got number"):
        await client.call_tool("read_query", {"query": 5})
    with pytest.raises(ToolError, match="colour: unknown argument"):
        await client.call_tool("list_tables", {"colour": "red"})
    with pytest.raises(ToolError, match="query: required argument is missing"):
        await client.call_tool("write_query", {})
    assert audit(db_path)[-4:] == [
        ("list_tables", 1, "claude", "alpha", None),
        ("read_query", 0, "claude", "alpha", "query: must be string, got number"),
        ("list_tables", 0, "claude", "alpha", "colour: unknown argument; list_tables takes project"),
        ("write_query", 0, "claude", "alpha", "query: required argument is missing"),
    ]


async def test_the_pinned_project_holds(client, db_path):
    for project in ("alpha", "beta"):
        memory = Memory.open(db_path, project=project)
        memory.create_entities([{"name": f"{project}-e", "entityType": "t", "observations": []}])
        memory.close()
    result = await client.call_tool("read_query", {"query": "SELECT name FROM entities"})
    assert result.content[0].text == f"name\nalpha-e\n# 1 row (complete)\n# {STORED_DATA_NOTE}\n"
    with pytest.raises(ToolError, match="pinned to project 'alpha'"):
        await client.call_tool("read_query", {"query": "SELECT 1", "project": "beta"})


async def test_over_http_the_token_actor_is_audited(db_path):
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)])
    await datasette.invoke_startup()
    token = await datasette.create_token("alice")
    transport = StreamableHttpTransport(
        "http://localhost/-/memory/mcp?tools=all",  # the SQL tools are in the all profile only
        auth=token,
        httpx_client_factory=lambda **kwargs: httpx2.AsyncClient(transport=httpx2.ASGITransport(app=datasette.app()), **kwargs),
    )
    async with Client(transport) as client:
        result = await client.call_tool("read_query", {"query": "SELECT 40 + 2 AS answer"})
    await datasette.invoke_shutdown()
    assert result.content[0].text == f"answer\n42\n# 1 row (complete)\n# {STORED_DATA_NOTE}\n"
    assert audit(db_path)[-1][:4] == ("read_query", 1, "alice", "default")


def test_every_sql_tool_is_in_the_module():
    assert [tool.__name__ for tool in TOOLS] == SQL_TOOLS


def test_cap_flags_and_variables_make_the_config_and_leave_the_environment_alone():
    before = dict(os.environ)

    @click.command()
    @config_options
    def serve(config):
        click.echo(f"{config.sql.max_rows} {config.sql.timeout_ms} {config.snapshot_dir} {config.search.semantic}")

    result = CliRunner().invoke(
        serve,
        ["--sql-max-rows", "12", "--snapshot-dir", "/tmp/snaps"],
        env={env_var("timeout_ms"): "250", "DATASETTE_MEMORY_NO_VECTORS": "1"},
    )
    assert result.output == "12 250 /tmp/snaps False\n"
    defaults = CliRunner().invoke(serve, [], env={env_var("timeout_ms"): None, "DATASETTE_MEMORY_NO_VECTORS": None})
    assert defaults.output == f"{Limits().max_rows} {Limits().timeout_ms} None True\n"
    assert "--sql-timeout-ms" in CliRunner().invoke(serve, ["--help"]).output
    refused = CliRunner().invoke(serve, ["--sql-max-rows", "0"])
    assert refused.exit_code == 2 and "--sql-max-rows: must be at least 1, got 0" in refused.output
    assert dict(os.environ) == before
