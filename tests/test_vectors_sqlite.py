"""The SQLite that loads sqlite-vec: this Python's own where it can load extensions, else apsw's (sqlean.py is gone)."""

import json
import sqlite3
import subprocess
import sys

import pytest

from datasette_memory import Memory, vectors
from datasette_memory.vectors.side_file import connect_loading_extensions, side_file, side_file_path_for


def test_the_extra_needs_apsw_only_where_this_python_cannot_load_extensions():
    assert vectors.loads_extensions() is hasattr(sqlite3.Connection, "enable_load_extension")
    assert ("apsw" in vectors.REQUIRED_MODULES) is not vectors.loads_extensions()
    assert "sqlean" not in vectors.REQUIRED_MODULES


def test_the_connection_is_the_standard_librarys_where_it_can_load_extensions(tmp_path):
    "Only one branch runs on a given Python; this machine's python3.11 was built without extension loading."
    conn = connect_loading_extensions(tmp_path / "side.db")
    try:
        if vectors.loads_extensions():
            assert isinstance(conn, sqlite3.Connection) and conn.isolation_level is None
        else:
            apsw = pytest.importorskip("apsw", reason="needs pip install 'datasette-memory[vectors]'")
            assert isinstance(conn, apsw.Connection)
        conn.execute("CREATE TABLE t (a)")
        conn.execute("INSERT INTO t VALUES (?)", [1])
        assert not conn.in_transaction  # autocommit, as write_transaction expects
        assert conn.execute("SELECT a FROM t").fetchall() == [(1,)]
    finally:
        conn.close()


def test_a_side_file_loads_sqlite_vec_and_holds_its_tables(semantic, tmp_path):
    memory = Memory.open(tmp_path / "memory.db", project="p")
    try:
        with side_file(memory.conn) as side:
            assert side.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1.")
            tables = {name for (name,) in side.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
            assert {"entity_digests", "entity_vectors", "index_progress"} <= tables
            assert side.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        memory.close()
    assert side_file_path_for(tmp_path / "memory.db").exists()


def test_a_written_entity_is_found_by_meaning_through_the_side_file(semantic, tmp_path):
    memory = Memory.open(tmp_path / "memory.db", project="p")
    try:
        memory.create_entities([{"name": "card-vault", "entityType": "service", "observations": ["stores payment card tokens"]}])
        assert memory.wait_for_semantic_index(timeout=120)
        found = memory.search_memory("where are credit card numbers kept?")
        assert "card-vault" in json.dumps(found)
    finally:
        memory.close()


def test_a_process_that_searches_a_file_without_vectors_loads_neither_apsw_nor_sqlean(tmp_path):
    code = (
        "import sys\nfrom datasette_memory import Memory\n"
        f"m = Memory.open({str(tmp_path / 'm.db')!r}, project='p')\nm.search_memory('x')\nm.close()\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'apsw', 'sqlean', 'sqlite_vec'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "[]", done.stderr
