"""The SQL tools' red-team suite: every case is refused or contained.

Refused: the call fails with an error naming the problem, and nothing
persistent changed (schema, data, files, snapshots) except one new audit row
recording the failure. Contained: the call's effect stays within the caps.
"""

import pytest

from datasette_memory import Memory
from datasette_memory.sqltools.regex import ripgrep

from .sql_support import ITEMS, LIMITS, DoorError, assert_only_audited, connect, path, sql_template, state, tools_for  # noqa: F401


def case(tool, id, match, project=None, setup=(), **arguments):
    return pytest.param(tool, arguments, match, project, setup, id=id)


def view_name(id, name, match):
    return case("create_view", id, match, name=name, select_sql="SELECT 1", description="a view")


REFUSED = [
    # One statement per call; comments, CTEs, casing and NUL bytes disguise nothing.
    case("read_query", "stacked-statements", "one statement per call", query="SELECT 1; DROP TABLE notes"),
    case("write_query", "stacked-after-comment", "one statement per call", query="INSERT INTO notes (body) VALUES ('x'); -- x\nDROP TABLE notes"),
    case("read_query", "ddl-behind-comment", "does not run DROP", query="/* just a select */ DROP TABLE notes"),
    case("read_query", "delete-in-cte", "does not run DELETE", query="WITH x AS (SELECT 1) DELETE FROM notes"),
    case("write_query", "delete-behind-keyword-named-cte", "does not run DELETE", query="WITH replace AS (SELECT 1) DELETE FROM notes"),
    case("read_query", "explain-delete", "cannot change data", query="EXPLAIN DELETE FROM notes"),
    case("write_query", "mixed-case-delete", "does not run DELETE", query="dElEtE\tFROM notes"),
    case("read_query", "nul-byte", "NUL", query="SELECT 1\x00; DROP TABLE notes"),
    case("read_query", "no-statement", "no SQL statement", query="-- only a comment"),
    # ATTACH and VACUUM INTO, to any path.
    case("read_query", "attach", "ATTACH", query="ATTACH '%DIR%/evil.db' AS evil"),
    case("destructive_query", "attach-destructive", "ATTACH", query="ATTACH '%DIR%/evil.db' AS evil", reason="r"),
    case("read_query", "vacuum-into", "VACUUM", query="VACUUM INTO '%DIR%/copy.db'"),
    case("destructive_query", "vacuum-into-destructive", "VACUUM", query="VACUUM INTO '%DIR%/copy.db'", reason="r"),
    # load_extension directly, in a trigger, a default, an index.
    case("read_query", "load-extension", "load_extension", query="SELECT load_extension('%DIR%/evil.so')"),
    case("destructive_query", "load-extension-in-trigger", "load_extension", query="CREATE TRIGGER evil AFTER INSERT ON notes BEGIN SELECT load_extension('x'); END", reason="r"),
    case("write_query", "load-extension-in-default", "load_extension", query="CREATE TABLE evil (a DEFAULT (load_extension('x')))"),
    case("write_query", "load-extension-in-index", "load_extension", query="CREATE INDEX evil ON notes (load_extension(body))"),
    # PRAGMA writes.
    case("read_query", "pragma-writable-schema", "cannot change settings", query="PRAGMA writable_schema = 1"),
    case("read_query", "pragma-journal-mode", "cannot change settings", query="PRAGMA journal_mode = DELETE"),
    case("write_query", "pragma-in-write-query", "does not run PRAGMA", query="PRAGMA journal_mode = OFF"),
    case("read_query", "pragma-function-form", "cannot change settings", query="PRAGMA main.journal_mode('off')"),
    # Mass rewrites through REPLACE, UPSERT, UPDATE OR REPLACE, cascades and plain UPDATE.
    case("write_query", "mass-replace", "over the limit of 100", query="REPLACE INTO items SELECT id, k, 0 FROM items"),
    case("write_query", "mass-upsert", "over the limit of 100", query="INSERT INTO items SELECT id, k, 0 FROM items WHERE true ON CONFLICT (id) DO UPDATE SET v = excluded.v"),
    case("write_query", "mass-update-or-replace", "over the limit of 100", query="UPDATE OR REPLACE items SET k = 'k1' WHERE id > 1"),
    case("write_query", "replace-cascading-deletes", "over the limit of 100", query="REPLACE INTO items SELECT id, k, -1 FROM items WHERE id <= 60"),
    case("write_query", "unfiltered-update", "destructive_query", query="UPDATE items SET v = 0"),
    # Writes, drops and triggers on memory and audit tables.
    case("write_query", "insert-entity", "read-only to SQL", query="INSERT INTO entities (project, name, entity_type, created_at) VALUES ('alpha', 'x', 't', 'now')"),
    case("write_query", "update-observation", "read-only to SQL", query="UPDATE observations SET content = 'rewritten'"),
    case("write_query", "insert-event", "read-only to SQL", query="INSERT INTO events SELECT * FROM events"),
    case("destructive_query", "delete-events", "read-only to SQL", query="DELETE FROM events", reason="r"),
    case("destructive_query", "drop-entities", "memory's own schema", query="DROP TABLE entities", reason="r"),
    case("destructive_query", "alter-checkpoints", "memory's own schema", query="ALTER TABLE checkpoints ADD COLUMN forged TEXT", reason="r"),
    case("destructive_query", "drop-ledger-trigger", "memory's own schema", query="DROP TRIGGER events_refuse_update", reason="r"),
    case("destructive_query", "trigger-on-memory-table", "memory's own schema", query="CREATE TRIGGER spy AFTER INSERT ON observations BEGIN SELECT 1; END", reason="r"),
    case("write_query", "index-on-memory-table", "memory's own schema", query="CREATE INDEX spy ON entities (name)"),
    case("destructive_query", "trigger-writing-memory", "read-only to SQL", query="CREATE TRIGGER sneak AFTER INSERT ON notes BEGIN UPDATE claims SET status = 'approved'; END", reason="r"),
    case("write_query", "foreign-key-to-memory", "foreign key to memory table", query="CREATE TABLE pin (e INTEGER REFERENCES entities (id))"),
    case("destructive_query", "rename-to-reserved-name", "reserved", query="ALTER TABLE notes RENAME TO claim_backdoor", reason="r"),
    case("write_query", "write-audit", "audit record", query="INSERT INTO sql_audit (ts, actor, tool, arguments, ok, duration_ms) VALUES ('', '', '', '', 1, 0)"),
    case("destructive_query", "delete-audit", "audit record", query="DELETE FROM sql_audit", reason="r"),
    case("destructive_query", "drop-audit-table", "audit record", query="DROP TABLE sql_audit", reason="r"),
    case("destructive_query", "drop-audit-view", "audit record", query="DROP VIEW query_errors", reason="r"),
    case("destructive_query", "trigger-on-audit", "audit record", query="CREATE TRIGGER hide BEFORE INSERT ON sql_audit BEGIN SELECT RAISE(IGNORE); END", reason="r"),
    case("create_view", "redefine-audit-view", "reserved", name="query_errors", select_sql="SELECT 1", description="nothing to see", replace=True),
    case("write_query", "write-view-descriptions", "create_view", query="UPDATE sql_views SET description = 'forged'"),
    # sqlite_sequence, sqlite_master, shadow tables, temporary objects, transactions.
    case("write_query", "sqlite-sequence-update", "sqlite_sequence", query="UPDATE sqlite_sequence SET seq = 0"),
    case("destructive_query", "sqlite-sequence-delete", "sqlite_sequence", query="DELETE FROM sqlite_sequence", reason="r"),
    case("write_query", "sqlite-master-update", "may not be modified", query="UPDATE sqlite_master SET sql = 'CREATE TABLE x (a)' WHERE name = 'notes'"),
    case("write_query", "fts-shadow-table", "shadow table", query="INSERT INTO docs_data VALUES (99, x'00')"),
    case("write_query", "temp-table", "temporary", query="CREATE TEMP TABLE scratch (a)"),
    case("write_query", "temp-schema-table", "temporary", query="CREATE TABLE temp.scratch (a)"),
    case("read_query", "begin", "transaction control", query="BEGIN"),
    case("write_query", "savepoint", "transaction control", query="SAVEPOINT s"),
    case("write_query", "create-view-through-sql", "create_view", query="CREATE VIEW v AS SELECT 1"),
    case("write_query", "fts4-module", "fts5 and rtree tables only", query="CREATE VIRTUAL TABLE old USING fts4 (body)"),
    case("create_view", "view-with-stacked-statement", "one statement per call", name="v", select_sql="SELECT 1; DROP TABLE notes", description="d"),
    case("create_view", "view-that-deletes", "must be one SELECT", name="v", select_sql="DELETE FROM notes", description="d"),
    # Names of views, triggers, tables and indexes: one rule for all (ASCII letters, digits, _), so a
    # name needs no quoting and cannot pass for another; memory's names stay memory's.
    view_name("view-name-quote-semicolon", 'v"; DROP TABLE notes; --', "contains '\"'"),
    view_name("view-name-single-quote", "it's", "contains \"'\""),
    view_name("view-name-semicolon", "a;b", "contains ';'"),
    view_name("view-name-comment", "a--b", "contains '-'"),
    view_name("view-name-space", "open bugs", "contains ' '"),
    view_name("view-name-newline", "a\nb", "contains '\\\\n'"),
    view_name("view-name-dot", "main.v", "contains '.'"),
    view_name("view-name-unicode", "ünï", r"contains 'ü' \(U\+00FC\)"),
    view_name("view-name-look-alike", "\u0435ntities", r"U\+0435"),
    view_name("view-name-bidi", "notes\u202e", r"U\+202E"),
    view_name("view-name-digit-first", "1st", "starts with a digit"),
    view_name("view-name-empty", "", "empty"),
    view_name("view-name-blank", " ", "contains ' '"),
    view_name("view-name-overlong", "v" * 129, "129 characters, over the limit of 128"),
    view_name("view-name-entities", "entities", "reserved"),
    view_name("view-name-events-folded", "EVENTS", "reserved"),
    view_name("view-name-audit", "sql_audit", "reserved"),
    view_name("view-name-reserved-prefix", "claim_inbox", "reserved"),
    view_name("view-name-sqlite", "sqlite_v", "reserved"),
    case("destructive_query", "trigger-name-semicolon", "create trigger: the name 'a;b' contains ';'", query='CREATE TRIGGER "a;b" AFTER INSERT ON notes BEGIN SELECT 1; END', reason="r"),
    case("destructive_query", "trigger-name-quote", "contains '\"'", query='CREATE TRIGGER "t""x" AFTER INSERT ON notes BEGIN SELECT 1; END', reason="r"),
    case("destructive_query", "trigger-name-unicode", r"U\+00E9", query="CREATE TRIGGER évil AFTER INSERT ON notes BEGIN SELECT 1; END", reason="r"),
    case("destructive_query", "trigger-name-overlong", "over the limit of 128", query=f"CREATE TRIGGER {'t' * 129} AFTER INSERT ON notes BEGIN SELECT 1; END", reason="r"),
    case("destructive_query", "trigger-name-reserved", "reserved", query="CREATE TRIGGER memory_hook AFTER INSERT ON notes BEGIN SELECT 1; END", reason="r"),
    case("write_query", "table-name-semicolon", "create table: the name", query='CREATE TABLE "x; DROP TABLE notes" (a)'),
    case("write_query", "table-name-space", "contains ' '", query="CREATE TABLE [my notes] (a)"),
    case("write_query", "index-name-quote", "contains \"'\"", query="CREATE INDEX `it's` ON notes (body)"),
    case("write_query", "virtual-table-name-dash", "contains '-'", query='CREATE VIRTUAL TABLE "f-f" USING fts5 (a)'),
    case("destructive_query", "rename-table-to-bad-name", "contains ';'", query='ALTER TABLE notes RENAME TO "n;n"', reason="r"),
    case("destructive_query", "drop-memory-trigger-folded", "memory's own schema", query='DROP TRIGGER main."EVENTS_REFUSE_UPDATE"', reason="r"),
    case("destructive_query", "drop-audit-view-quoted", "audit record", query='DROP VIEW [Query_Errors]', reason="r"),
    # Value size, time and bombs.
    case("read_query", "randomblob-bomb", "byte limit", query="SELECT randomblob(100000000)"),
    case("write_query", "zeroblob-write", "byte limit", query="INSERT INTO notes (body) VALUES (zeroblob(5000000))"),
    case("read_query", "recursive-cte-bomb", "time limit", query="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"),
    case("write_query", "recursive-insert-bomb", "time limit", query="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) INSERT INTO notes (body) SELECT x FROM c"),
    case("read_query", "group-concat-bomb", "limit", query="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT group_concat(x) FROM c"),
    case("read_query", "too-many-columns", "columns", query="SELECT " + ", ".join(f"{i} AS c{i}" for i in range(LIMITS.max_columns + 1))),
    case("create_view", "huge-view-description", "description", name="v", select_sql="SELECT 1", description="x" * 100_000),
    # search_text: where cannot comment out its limits; patterns cannot run forever.
    case("search_text", "where-line-comment", "syntax error", table="items", pattern="k", where="1) --"),
    case("search_text", "where-block-comment", "incomplete input|unrecognized token", table="items", pattern="k", where="1 /*"),
    case("search_text", "where-stacked", "one statement per call", table="items", pattern="k", where="1); DROP TABLE items; --"),
    case("search_text", "table-injection", "no table or view", table='items"; DROP TABLE items; --', pattern="k"),
    # A bridge pinned to a project.
    case("read_query", "pinned-main-qualified", "pinned to project", project="alpha", query="SELECT * FROM main.entities"),
    case("read_query", "pinned-unscoped-index", "no project column", project="alpha", query="SELECT * FROM observations_trigram"),
    case("read_query", "pinned-stored-view", "pinned to project", project="alpha", setup=[("create_view", {"name": "raw", "select_sql": "SELECT * FROM main.entities", "description": "d"})], query="SELECT * FROM raw"),
    case("read_query", "pinned-dbstat", "pinned", project="alpha", query="SELECT * FROM dbstat"),
    case("destructive_query", "pinned-trigger-name-spoof", "memory's own schema", project="alpha", query="CREATE TRIGGER entities AFTER INSERT ON notes BEGIN INSERT INTO notes (body) SELECT name FROM main.entities; END", reason="r"),
    # Bad arguments are refused and audited too.
    case("read_query", "query-not-a-string", "must be (a )?string, got number", query=123),
    case("read_query", "limit-too-large", "limit: must be between", query="SELECT 1", limit=10_000_000),
    case("destructive_query", "missing-reason", "reason", query="DELETE FROM notes", reason=" "),
]


@pytest.mark.parametrize("tool,arguments,match,project,setup", REFUSED)
async def test_refused(connect, path, tool, arguments, match, project, setup):
    for setup_tool, setup_arguments in setup:
        getattr(tools_for(path), setup_tool)(**setup_arguments)
    door = await connect(project)
    arguments = {k: v.replace("%DIR%", str(path.parent)) if isinstance(v, str) else v for k, v in arguments.items()}
    before = state(path)
    with pytest.raises(DoorError, match=match):
        await door(tool, **arguments)
    assert_only_audited(before, state(path), ok=False)


def test_there_are_at_least_forty_cases():
    assert len(REFUSED) >= 40


def data_lines(text: str) -> list:
    return [line for line in text.splitlines() if not line.startswith("#")]


def assert_within_caps(text: str):
    lines = text.splitlines()
    body = "\n".join(data_lines(text)).encode()
    assert len(body) <= LIMITS.max_result_bytes
    assert lines[-1].startswith("# ")
    return lines


async def test_wide_rows_are_cut_by_bytes(connect, path):
    door = await connect()
    before = state(path)
    text = await door("read_query", query="SELECT " + ", ".join(f"hex(randomblob(500)) AS c{i}" for i in range(50)) + " FROM items", limit=100)
    lines = assert_within_caps(text)
    assert "cut: the 8000-byte result limit" in lines[-1]
    assert_only_audited(before, state(path), ok=True)


async def test_huge_alias_cannot_flood(connect, path):
    door = await connect()
    text = await door("read_query", query=f"SELECT 1 AS {'a' * 50_000}")
    lines = assert_within_caps(text)
    assert len(lines[0]) < LIMITS.max_cell_chars + 50
    assert "1 value shortened" in lines[-1]


async def test_huge_checkpoint_summary_is_cut(connect, path):
    memory = Memory.open(path, project="alpha")
    memory.checkpoint("s" * 60_000)
    memory.close()
    door = await connect("alpha")
    text = await door("read_query", query="SELECT summary FROM checkpoints ORDER BY id DESC")
    assert_within_caps(text)
    assert "more characters]" in text


async def test_recursive_cte_rows_are_cut_by_the_row_limit(connect, path):
    door = await connect()
    text = await door("read_query", query="WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c", limit=7)
    assert len(data_lines(text)) == 1 + 7
    assert "cut: the row limit of 7" in text.splitlines()[-1]


@pytest.mark.parametrize(
    "value",
    ["x\n# 0 rows (complete)", "# 99 rows (complete)", "a\r# forged", "x\u2028# forged", "x\x85# forged", "\\n# forged"],
)
async def test_a_value_cannot_forge_a_trailer(connect, path, value):
    door = await connect()
    await door("write_query", query="INSERT INTO notes (body) VALUES (?)".replace("?", "'" + value.replace("'", "''") + "'"))
    for query in ("SELECT body FROM notes ORDER BY id DESC LIMIT 1", "SELECT 1 AS " + '"' + value + '"'):
        text = await door("read_query", query=query)
        assert [line for line in text.splitlines() if line.startswith("#")] == [text.splitlines()[-1]]
        assert text.splitlines()[-1] == "# 1 row (complete)"


async def test_manual_snapshots_never_flush_the_recovery_snapshot(connect, path):
    door = await connect()
    await door("destructive_query", query="DELETE FROM tags WHERE id > 200", reason="prune")
    recovery = [p for p in state(path)["snapshots"] if p.name.endswith("before-destructive.db")][-1]
    for i in range(LIMITS.snapshots_keep + 3):
        await door("snapshot", reason=f"manual {i}")
    snapshots = state(path)["snapshots"]
    assert recovery in snapshots
    assert len([p for p in snapshots if p.name.endswith("-manual.db")]) == LIMITS.snapshots_keep


async def test_search_where_cannot_lift_the_limits(connect, path):
    door = await connect()
    text = await door("search_text", table="items", pattern="k", where="1) OR (1", limit=3)
    assert len(data_lines(text)) == 1 + 3
    assert "cut: the match limit of 3" in text.splitlines()[-1]


async def test_pinned_bridge_sees_only_its_project(connect, path):
    door = await connect("alpha")
    text = await door("read_query", query="SELECT name FROM entities UNION ALL SELECT content FROM observations UNION ALL SELECT summary FROM checkpoints")
    assert "beta" not in text and "alpha-service" in text
    text = await door("read_query", query="SELECT * FROM service_names")
    assert data_lines(text) == ["name", "alpha-service"]
    text = await door("search_text", table="observations", pattern="secret")
    assert "alpha secret" in text and "beta" not in text


async def test_a_time_limited_write_is_rolled_back(connect, path):
    door = await connect()
    before = state(path)
    with pytest.raises(DoorError, match="rolled back"):
        await door("write_query", query="INSERT INTO notes (body) SELECT hex(randomblob(100)) FROM items a, items b, items c")
    assert_only_audited(before, state(path), ok=False)


async def test_cascades_within_the_cap_are_counted_and_allowed(connect, path):
    door = await connect()
    text = await door("write_query", query="REPLACE INTO items SELECT id, k, -1 FROM items WHERE id <= 10")
    assert text.splitlines()[-1] == "# 10 rows affected"
    counts = await door("read_query", query="SELECT count(*) FROM tags")
    assert data_lines(counts)[1] == str(ITEMS - 10)


async def test_catastrophic_regex_is_linear_in_both_engines(path):
    "(a+)+$ takes exponential time in a backtracking engine; RE2 (in process) and ripgrep answer at once."
    tools_for(path).write_query("INSERT INTO notes (body) VALUES ('" + "a" * 40_000 + "!')")
    before = state(path)
    assert "# 0 matches (complete)" in tools_for(path, search_engine="python").search_text("notes", "(a+)+$")
    assert_only_audited(before, state(path), ok=True)
    if ripgrep():
        assert "# 0 matches (complete)" in tools_for(path, search_engine="ripgrep").search_text("notes", "(a+)+$")
