import hashlib
import json
import os
import pathlib
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner

from datasette_memory import Memory, SchemaTooNewError
from datasette_memory.cli import cli
from datasette_memory.cli.options import default_db_path

from .damage import damage


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_default_path_prefers_environment(tmp_path):
    assert default_db_path({"DATASETTE_MEMORY_DB": str(tmp_path / "team.db")}) == tmp_path / "team.db"
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "datasette-memory" / "memory.db"
    assert default_db_path({}) == pathlib.Path("~/.local/share/datasette-memory/memory.db").expanduser()


def test_verify_intact_and_broken(db_path):
    memory = Memory.open(db_path)
    memory.create_entities([{"name": n, "entityType": "t", "observations": []} for n in "abc"])
    memory.close()
    result = run("verify", "--db", str(db_path))
    assert result.exit_code == 0
    assert "ledger intact: 3 events, head " in result.output
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TRIGGER events_refuse_delete")
    conn.execute("DELETE FROM events WHERE id = 2")
    conn.commit()
    conn.close()
    result = run("verify", "--db", str(db_path))
    assert result.exit_code == 1
    assert "FAILED  ledger chain" in result.output
    assert "events row 3: expected the next event of the chain, found its prev_hash does not match" in result.output


def test_verify_uses_environment_default(tmp_path):
    path = tmp_path / "env.db"
    Memory.open(path).close()
    result = run("verify", env={"DATASETTE_MEMORY_DB": str(path)})
    assert result.exit_code == 0
    assert str(path) in result.output


def test_verify_never_creates_a_file(tmp_path):
    path = tmp_path / "mistyped" / "memroy.db"
    result = CliRunner().invoke(cli, ["verify", "--db", str(path)])
    assert result.exit_code == 2
    assert "no such file" in result.output and "nothing was created" in result.output
    assert not path.parent.exists()


def test_newer_schema_is_refused_and_not_modified(db_path):
    Memory.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) "
        "VALUES ('datasette_memory', 'm999_from_the_future', '2030-01-01')"
    )
    conn.commit()
    conn.close()
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    with pytest.raises(SchemaTooNewError, match="m999_from_the_future"):
        Memory.open(db_path)
    result = CliRunner().invoke(cli, ["verify", "--db", str(db_path)])
    assert result.exit_code == 2
    assert "newer datasette-memory" in result.output and "upgrade" in result.output
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_creates_default_file_and_lists_plugin(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "DATASETTE_MEMORY_DB"}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "datasette_memory", "serve", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        expected = tmp_path / "xdg" / "datasette-memory" / "memory.db"
        assert server.stderr.readline().strip() == f"Memory file: {expected}"
        plugins = json.loads(fetch(f"http://127.0.0.1:{port}/-/plugins.json"))
        assert "datasette-memory" in [p["name"] for p in plugins]
        overview = json.loads(fetch(f"http://127.0.0.1:{port}/-/memory.json"))
        assert overview["path"] == str(expected) and overview["chain"]["ok"]
        assert expected.exists()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_serve_grants_approvers_and_tokens_outlive_restarts(db_path):
    "create-token's tokens work on serve; --approver lets that signed-in person govern, never a token."
    from datasette.app import Datasette

    from datasette_memory.cli.serve import token_secret

    token = run("create-token", "alice", "--db", str(db_path)).output.strip()
    cookie = Datasette(secret=token_secret(db_path.resolve())).sign({"a": {"id": "alice"}}, "actor")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "datasette_memory", "serve", "--db", str(db_path), "--port", str(port), "--approver", "alice"],
        stderr=subprocess.DEVNULL,
    )
    fact = json.dumps({"subject": "auth", "predicate": "port", "object": "8443", "rationale": "checked"}).encode()
    url = f"http://127.0.0.1:{port}/-/memory/facts"
    try:
        fetch(f"http://127.0.0.1:{port}/-/memory.json")
        with pytest.raises(urllib.error.HTTPError) as refused:
            fetch(url, data=fact, headers={"Authorization": f"Bearer {token}"})
        assert refused.value.code == 403
        created = json.loads(fetch(url, data=fact, headers={"Cookie": f"ds_actor={cookie}"}))
        assert created["ok"] and created["fact"]["object"] == "8443"
    finally:
        server.terminate()
        server.wait(timeout=10)


def fetch(url, timeout=20, data=None, headers=None):
    deadline = time.monotonic() + timeout
    while True:
        try:
            request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
            with urllib.request.urlopen(request) as response:
                return response.read()
        except urllib.error.HTTPError:
            raise
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_verify_finds_a_fact_written_outside_the_core(db_path):
    Memory.open(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(
        "INSERT INTO facts (project, subject, predicate, object, subject_key, predicate_key, object_key, "
        "valid_from, recorded_at, recorded_by, rationale) VALUES ('default', 'auth', 'port', '1', 'auth', 'port', '1', "
        "'2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00', 'mallory', 'forged')"
    )
    conn.commit()
    conn.close()
    result = run("verify", "--db", str(db_path))
    assert result.exit_code == 1
    assert "ledger intact: 0 events" in result.output
    assert "facts row 1: expected nothing, found {" in result.output and '"recorded_by": "mallory"' in result.output


@pytest.mark.parametrize("command", ["mcp", "serve"])
def test_sql_cap_flags_are_checked(command, db_path):
    result = CliRunner().invoke(cli, [command, "--db", str(db_path), "--sql-max-rows", "0"])
    assert result.exit_code == 2
    assert "--sql-max-rows: must be at least 1, got 0" in result.output


@pytest.mark.parametrize(
    "module,absent",
    [("datasette_memory.cli", ("datasette", "fastmcp", "mcp", "mcp_types")), ("datasette_memory.plugin", ("fastmcp", "mcp", "mcp_types"))],
)
def test_doors_load_the_frameworks_they_need_only_when_used(module, absent):
    """
    Each command, and Datasette's start, pays only for what it uses: fastmcp loads on the first MCP call
    (the bridge's plain modules, such as its tool profiles, may load earlier: they import no framework).
    """
    code = f"import sys, {module}; print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(absent)!r}))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def damaged(db_path):
    "A memory file whose observations table's root page is overwritten with garbage."
    memory = Memory.open(db_path)
    memory.create_entities([{"name": f"e{i}", "entityType": "t", "observations": [f"note {i} " * 20]} for i in range(200)])
    memory.close()
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    damage(db_path)
    return hashlib.sha256(db_path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [["import", "-"], ["export"], ["verify"]])
def test_a_damaged_file_is_refused_and_not_written(db_path, command):
    before = damaged(db_path)
    result = CliRunner().invoke(cli, [*command, "--db", str(db_path)], input="")
    assert result.exit_code != 0
    assert "damaged" in result.output or "integrity check" in result.output
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before


def test_the_mcp_server_refuses_a_damaged_file(db_path):
    before = damaged(db_path)
    result = CliRunner().invoke(cli, ["mcp", "--db", str(db_path)])
    assert result.exit_code == 1
    assert "the file is damaged (SQLite's quick check:" in result.output and "nothing was written" in result.output
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
