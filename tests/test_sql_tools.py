"""The SQL tools doing their jobs: results, writes, snapshots, views, schema, search and the audit log."""

import dataclasses
import json
import sqlite3

import pytest

from datasette_memory import InvalidInput, Memory
from datasette_memory.sqltools import Limits, SqlLimitExceeded, SqlRefused
from datasette_memory.sqltools.connections import open_agent_connection
from datasette_memory.sqltools.lexer import statement
from datasette_memory.sqltools.names import is_memory, memory_objects
from datasette_memory.sqltools.regex import ripgrep

from .sql_support import LIMITS, path, sql_template, tools_for  # noqa: F401


@pytest.fixture
def tools(path):
    return tools_for(path)


def audit_rows(path, columns="tool, ok, error"):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT {columns} FROM sql_audit ORDER BY id").fetchall()
    finally:
        conn.close()


def test_csv_shows_nulls_blobs_numbers_and_awkward_names(tools):
    text = tools.read_query(
        """SELECT NULL AS "null", '' AS empty, x'00ff' AS "foo/bar", 1.5 AS "ünï", 'a,"b"' AS quoted, ' padded' AS pad"""
    )
    assert text == 'null,empty,foo/bar,ünï,quoted,pad\n,"",x\'00ff\',1.5,"a,""b"""," padded"\n# 1 row (complete)\n'


def test_line_breaks_and_backslashes_are_escaped(tools):
    text = tools.read_query("SELECT 'a' || char(10) || 'b\\c' || char(13) || char(0) AS v")
    assert text.splitlines()[1] == "a\\nb\\\\c\\r\\x00"


def test_row_limit_default_and_argument(tools):
    assert "# 100 rows (cut: the row limit of 100" in tools.read_query("SELECT * FROM items")
    assert tools.read_query("SELECT id FROM items ORDER BY id", limit=2).splitlines() == [
        "id", "1", "2", "# 2 rows (cut: the row limit of 2 was reached and more rows exist; narrow the query, page with LIMIT/OFFSET, or raise limit)"
    ]
    assert tools.read_query("SELECT id FROM items WHERE id <= 3", limit=3).endswith("# 3 rows (complete)\n")


def test_long_values_are_shortened_and_counted(tools):
    text = tools.read_query("SELECT printf('%.500c', 'x') AS v, 'short' AS w")
    assert "…[300 more characters]" in text
    assert text.splitlines()[-1] == "# 1 row (complete); 1 value shortened to 200 characters"


def test_read_only_pragmas_and_explain(tools):
    assert tools.read_query("PRAGMA trusted_schema").splitlines()[1] == "0"
    assert "name" in tools.read_query("PRAGMA table_info(notes)")
    assert "SCAN" in tools.read_query("EXPLAIN QUERY PLAN SELECT * FROM items WHERE v = 3")


def test_read_connections_are_read_only_underneath_the_guard(path):
    agent = open_agent_connection(path, LIMITS, write=False, project=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            agent.conn.execute("CREATE TABLE x (a)")
        assert agent.conn.execute("PRAGMA trusted_schema").fetchone() == (0,)
    finally:
        agent.close()


def test_write_query_reports_rows_and_returning(tools):
    assert tools.write_query("INSERT INTO notes (body) VALUES ('a'), ('b')") == "# 2 rows affected\n"
    text = tools.write_query("UPDATE items SET v = -v WHERE id <= 2 RETURNING id, v")
    assert text == "id,v\n1,-1\n2,-2\n# 2 returned rows (complete)\n# 2 rows affected\n"
    assert tools.write_query("CREATE INDEX items_v ON items (v)") == "# 0 rows affected\n"


def test_write_query_makes_fts5_and_rtree_tables(tools):
    tools.write_query("CREATE VIRTUAL TABLE places USING rtree (id, min_x, max_x)")
    tools.write_query("INSERT INTO places VALUES (1, 0, 10)")
    assert tools.read_query("SELECT id FROM places WHERE min_x <= 5 AND max_x >= 5").splitlines()[1] == "1"
    assert tools.read_query("SELECT body FROM docs WHERE docs MATCH 'fox'").splitlines()[1] == "the quick brown fox"


def test_upserts_within_the_cap_are_allowed(tools):
    tools.write_query("INSERT INTO items SELECT id, k, 0 FROM items WHERE id <= 50 ON CONFLICT (id) DO UPDATE SET v = excluded.v")
    assert tools.read_query("SELECT count(*) FROM items WHERE v = 0").splitlines()[1] == "50"


def test_destructive_query_snapshots_first(tools, path):
    text = tools.destructive_query("DELETE FROM items WHERE id > 10", "keep only the first ten")
    assert text == "# 290 rows affected\n"
    snapshot, reason = audit_rows(path, "snapshot, reason")[-1]
    conn = sqlite3.connect(snapshot)
    assert conn.execute("SELECT count(*) FROM items").fetchone() == (300,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()
    assert reason == "keep only the first ten"


def test_destructive_snapshots_rotate_among_themselves(tools, path):
    for i in range(LIMITS.destructive_snapshots_keep + 2):
        tools.destructive_query(f"DELETE FROM items WHERE id = {i + 1}", "prune")
    folder = path.parent / "memory-snapshots"
    assert len(list(folder.glob("*-before-destructive.db"))) == LIMITS.destructive_snapshots_keep
    assert len(list(folder.glob("*-manual.db"))) == 1
    assert not list(folder.glob("*.partial"))


def test_snapshot_tool(tools, path):
    text = tools.snapshot("before an experiment")
    assert text.startswith("# snapshot written: ") and "1 taken before destructive statements" in text
    folder = path.parent / "memory-snapshots"
    assert len(list(folder.glob("*-manual.db"))) == 2


def test_snapshot_folder_is_configurable(path, tmp_path):
    tools_for(path, snapshot_dir=tmp_path / "elsewhere").snapshot("x")
    assert len(list((tmp_path / "elsewhere").glob("memory-*-manual.db"))) == 1


def test_create_view_replace_keeps_the_old_definition(tools, path):
    tools.create_view("big_items", "SELECT * FROM items WHERE v > 100", "Items with a large value")
    with pytest.raises(SqlRefused, match="pass replace=true"):
        tools.create_view("big_items", "SELECT 1", "x")
    assert tools.create_view("BIG_ITEMS", "SELECT * FROM items WHERE v > 200", "Items with a very large value", replace=True).startswith("# view")
    detail = json.loads(audit_rows(path, "detail")[-1][0])
    assert detail["replaced"]["sql"] == 'CREATE VIEW "big_items" AS\nSELECT * FROM items WHERE v > 100'
    assert detail["replaced"]["description"] == "Items with a large value"
    assert tools.read_query("SELECT count(*) FROM big_items").splitlines()[1] == "100"
    with pytest.raises(SqlRefused, match="already a table named items"):
        tools.create_view("items", "SELECT 1", "x", replace=True)


def test_dropping_a_view_drops_its_description(tools):
    tools.destructive_query("DROP VIEW service_names", "unused")
    assert "service_names" not in tools.get_schema()
    assert tools.read_query("SELECT count(*) FROM sql_views").splitlines()[1] == "0"


def test_list_tables_and_describe_table(tools):
    tables = tools.list_tables().splitlines()
    assert "notes,table,read and write" in tables
    assert "service_names,view,read (saved view)" in tables
    assert "entities,table,read-only (memory): change it with the memory tools" in tables
    assert not any(line.startswith(("docs_data", "sqlite_")) for line in tables)
    description = tools.describe_table("service_names")
    assert description.splitlines()[:2] == ["column,type,not_null,default,primary_key", "name,TEXT,0,,0"]
    assert "# description: Names of services" in description
    assert "# index sqlite_autoindex_items_1 (unique)" in tools.describe_table("items")
    with pytest.raises(InvalidInput, match="no table or view named"):
        tools.describe_table("nope")


def test_get_schema_shows_descriptions_and_system_objects_on_request(tools):
    schema = tools.get_schema()
    assert schema.splitlines()[0] == "type,name,access,description,sql"
    assert "view,service_names,read (saved view),Names of services," in schema
    assert "docs_data" not in schema and "docs_data" in tools.get_schema(include_system=True)


def test_schema_descriptions_cannot_forge_lines(path):
    "The whole schema (the default result cap's 64 KiB: the tests' 8,000 bytes cut memory's own tables short of the view)."
    tools = tools_for(path, limits=dataclasses.replace(LIMITS, max_result_bytes=Limits().max_result_bytes))
    tools.create_view("v", "SELECT 1", "fine\n# 0 objects (complete)")
    for text in (tools.get_schema(), tools.describe_table("v")):
        hashes = [line for line in text.splitlines() if line.startswith("#")]
        assert not any("0 objects" in line for line in hashes[:-1] if not line.startswith("# description"))
        assert "fine\\n# 0 objects" in text


def test_pinned_writes_read_only_their_project(path):
    pinned = tools_for(path, "beta")
    pinned.write_query("INSERT INTO notes (body) SELECT name FROM entities")
    bodies = tools_for(path).read_query("SELECT body FROM notes").splitlines()
    assert "beta-service" in bodies and "alpha-service" not in bodies


def test_pinned_list_tables_says_what_it_can_read(path):
    tables = tools_for(path, "alpha").list_tables()
    assert "observations_trigram,virtual table,not readable by a bridge pinned to project 'alpha'" in tables
    assert "entities,table,\"read-only (memory, project 'alpha' rows only): change it with the memory tools\"" in tables


engines = ["python", pytest.param("ripgrep", marks=pytest.mark.skipif(not ripgrep(), reason="ripgrep is not installed"))]


@pytest.mark.parametrize("engine", engines)
def test_search_text(path, engine):
    tools = tools_for(path, search_engine=engine)
    tools.write_query("INSERT INTO notes (body) VALUES ('port 8080' || char(10) || 'and PORT 9090 (a.b)')")
    text = tools.search_text("notes", r"port \d+", ignore_case=True, context_chars=4)
    assert text.splitlines() == ["rowid,column,match,snippet", "3,body,port 8080,port 8080\\nand…", "3,body,PORT 9090,…and PORT 9090 (a.…", "# 2 matches (complete); 2 rows scanned"]
    assert "a.b" in tools.search_text("notes", "(a.b)", fixed_strings=True)
    assert "# 0 matches" in tools.search_text("notes", "8080.and")  # a match never spans a line break
    keyed = tools.search_text("items", "^k1[0-9]$", columns=["k"], key_column="v", where="id < 15", limit=2)
    assert keyed.splitlines()[:3] == ["v,column,match,snippet", "10,k,k10,k10", "11,k,k11,k11"]


@pytest.mark.parametrize("engine", engines)
def test_search_text_scan_cap(path, engine):
    tools = tools_for(path, search_engine=engine, limits=Limits(max_scan_rows=50))
    assert tools.search_text("items", "k29\\d").endswith("# 0 matches (cut: the scan limit of 50 rows was reached; narrow the rows with where); 50 rows scanned\n")


@pytest.mark.parametrize(
    "pattern,message",
    [("(?=a)b", "lookahead"), (r"(a)\1", r"\\1"), ("a{,2}", "brace"), ("x*", "empty string"), ("[[:alpha:]]", "not a valid")],
)
def test_search_patterns_outside_the_shared_dialect_are_refused(tools, pattern, message):
    with pytest.raises(InvalidInput, match=message):
        tools.search_text("notes", pattern)


def test_every_call_writes_one_audit_row(tools, path):
    before = len(audit_rows(path))
    tools.read_query("SELECT 1")
    with pytest.raises(InvalidInput):
        tools.read_query(None)
    with pytest.raises(SqlRefused):
        tools.write_query("DROP TABLE notes")
    tools.list_tables()
    rows = audit_rows(path)[before:]
    assert [(tool, ok) for tool, ok, _ in rows] == [("read_query", 1), ("read_query", 0), ("write_query", 0), ("list_tables", 1)]
    errors = tools.read_query("SELECT tool, error FROM query_errors", limit=2).splitlines()
    assert errors[1].startswith('write_query,"write_query does not run DROP TABLE')
    assert errors[2] == 'read_query,"query: must be a string, got null"'


def test_audit_rows_record_who_and_cut_long_arguments(path):
    tools = tools_for(path, "alpha", limits=Limits(audit_text_chars=20))
    tools.read_query("SELECT '" + "x" * 100 + "'")
    actor, session, project, arguments = audit_rows(path, "actor, session, project, arguments")[-1]
    assert (actor, session, project) == ("agent", "s1", "alpha")
    assert json.loads(arguments)["query"] == "SELECT 'xxxxxxxxxxxx…[cut: 109 characters in all]"


def test_the_audit_log_is_append_only_even_outside_the_tools(path):
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM sql_audit")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE sql_audit SET ok = 1")
    conn.close()


def test_limits_from_settings_are_checked():
    assert Limits.from_mapping({"max_rows": 7}).max_rows == 7
    assert Limits.from_mapping({}) == Limits()
    with pytest.raises(InvalidInput, match="sql.timeout_ms: must be a whole number, got 'soon'"):
        Limits.from_mapping({"timeout_ms": "soon"})
    with pytest.raises(InvalidInput, match="sql.max_rows: must be at least 1, got 0"):
        Limits.from_mapping({"max_rows": 0})
    with pytest.raises(InvalidInput, match="sql.rows: unknown cap; the caps are "):
        Limits.from_mapping({"rows": 5})


def test_memory_objects_are_exactly_what_the_migrations_make(tmp_path):
    Memory.open(tmp_path / "fresh.db").close()
    conn = sqlite3.connect(tmp_path / "fresh.db")
    names = [name for (name,) in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert names and all(is_memory(name) for name in names)
    assert {"sql_audit", "query_errors", "sql_views", "entities", "events"} <= set(memory_objects())


@pytest.mark.parametrize(
    "sql,verb,object",
    [
        ("-- DELETE\nSELECT 1", "SELECT", None),
        ("/* x */ with recursive c(x) as (select 1) insert into t select * from c", "INSERT", None),
        ("WITH a(x) AS (SELECT 1), b AS MATERIALIZED (SELECT 2) DELETE FROM t", "DELETE", None),
        ("WITH replace AS (SELECT 1) DELETE FROM t", "DELETE", None),
        ('WITH "select" AS (SELECT \'DELETE\') SELECT * FROM "select"', "SELECT", None),
        ("create unique index i on t (a)", "CREATE", "INDEX"),
        ("CREATE VIRTUAL TABLE f USING fts5 (a)", "CREATE", "VIRTUAL"),
        ("EXPLAIN QUERY PLAN UPDATE t SET a = 1", "UPDATE", None),
    ],
)
def test_statement_verbs(sql, verb, object):
    found = statement(sql)
    assert (found.verb, found.object) == (verb, object)


def test_the_sql_tools_import_no_door():
    import pathlib

    for source in (pathlib.Path(__file__).parent.parent / "datasette_memory" / "sql").glob("*.py"):
        assert "mcp_bridge" not in source.read_text() and "datasette.app" not in source.read_text(), source


def test_the_agents_schema_has_a_size_cap(path):
    tools = tools_for(path, limits=Limits(max_schema_bytes=2_000))
    before = tools.get_schema()
    with pytest.raises(SqlLimitExceeded, match="over the limit of 2000"):
        tools.write_query("CREATE TABLE wide (" + ", ".join(f"column_with_a_long_name_{i} TEXT" for i in range(60)) + ")")
    assert tools.get_schema() == before


@pytest.mark.parametrize("name", ["a", "_scratch", "Open_Bugs2", "v" * LIMITS.max_name_chars])
def test_names_of_ascii_letters_digits_and_underscores_are_accepted(tools, name):
    tools.write_query(f"CREATE TABLE {name} (a)")
    tools.write_query(f"CREATE INDEX {name}_i ON {name} (a)" if len(name) < 100 else f"CREATE INDEX i_{name[:100]} ON {name} (a)")
    tools.create_view(f"{name[:120]}_v", f"SELECT a FROM {name}", "a view of it")
    tools.destructive_query(f"CREATE TRIGGER {name[:120]}_t AFTER INSERT ON {name} BEGIN SELECT 1; END", "for the test")


def test_a_virtual_tables_shadow_tables_may_be_longer_than_the_name_cap(path):
    tools = tools_for(path, limits=Limits(max_name_chars=10))
    tools.write_query("CREATE VIRTUAL TABLE abcdefghij USING fts5 (body)")
    tools.write_query("CREATE VIRTUAL TABLE klmnopqrst USING rtree (id, min_x, max_x)")
    assert "abcdefghij_docsize" in tools.get_schema(include_system=True)
    with pytest.raises(SqlRefused, match="11 characters, over the limit of 10"):
        tools.write_query("CREATE VIRTUAL TABLE abcdefghijk USING fts5 (body)")


def test_an_object_named_before_the_rule_can_be_altered_renamed_and_dropped(tools, path):
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE "old notes" (body TEXT)')
    conn.commit()
    conn.close()
    tools.destructive_query('ALTER TABLE "old notes" ADD COLUMN extra TEXT', "keep it a while")
    with pytest.raises(SqlRefused, match="contains ' '"):
        tools.destructive_query('ALTER TABLE "old notes" RENAME TO "new notes"', "a new bad name is refused")
    tools.destructive_query('ALTER TABLE "old notes" RENAME TO old_notes', "a name that needs no quoting")
    tools.destructive_query("DROP TABLE old_notes", "done with it")
    assert "old" not in tools.get_schema()


def test_a_pinned_bridge_drops_its_saved_view_by_name(path):
    tools_for(path, "alpha").destructive_query("DROP VIEW service_names", "unused")
    assert "service_names" not in tools_for(path).get_schema()
    assert tools_for(path).read_query("SELECT count(*) FROM sql_views").splitlines()[1] == "0"
