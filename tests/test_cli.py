import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest
from click.testing import CliRunner

from datasette_memory import Memory, SchemaTooNewError
from datasette_memory.cli import cli
from datasette_memory.database import default_db_path


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_default_path_prefers_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DATASETTE_MEMORY_DB", str(tmp_path / "team.db"))
    assert default_db_path() == tmp_path / "team.db"
    monkeypatch.delenv("DATASETTE_MEMORY_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_db_path() == tmp_path / "xdg" / "datasette-memory" / "memory.db"


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
    assert "ledger broken at event 3: its prev_hash does not match" in result.output


def test_verify_uses_environment_default(tmp_path):
    path = tmp_path / "env.db"
    result = run("verify", env={"DATASETTE_MEMORY_DB": str(path)})
    assert result.exit_code == 0
    assert str(path) in result.output
    assert path.exists()


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
    assert result.exit_code == 1
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


def fetch(url, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url) as response:
                return response.read()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
