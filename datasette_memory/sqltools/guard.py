"""SQLite's authorizer, set per call: what each tool's statement may do.

Every action SQLite reports while compiling a statement is checked against
the calling tool (read, write or destructive), so comments, CTEs, casing
and views disguise nothing: the decision is made on what the compiled
statement does, not on its text. Actions reported while the statement runs
come from SQLite itself (a virtual table creating or updating its shadow
tables); they pass the same table and name checks but not the per-tool
ones, which is what SQLite's defensive mode does for shadow tables.

SQLite compiles the programs of the triggers a statement fires together with
the statement, reporting their actions with the trigger's name, so a write is
judged by everything it does, its triggers' actions included.
"""

import sqlite3
from typing import cast

from .lexer import Statement
from .limits import Limits
from .names import GLOBAL_TABLES, SCHEMA_TABLES, fold, is_memory, name_problem

READ = "read_query"
WRITE = "write_query"
DESTRUCTIVE = "destructive_query"
VIEW = "create_view"

ATTACH_REFUSED = "ATTACH and DETACH are refused: the SQL tools work on the memory file alone"
TRANSACTION_REFUSED = (
    "transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) is refused: every call is one "
    "transaction, committed when it succeeds and rolled back when it fails"
)
TEMP_REFUSED = "temporary tables, views, indexes and triggers are refused: create a table, or save a query with create_view"

# Objects SQLite makes itself: the AUTOINCREMENT counters and constraint indexes.
SQLITE_MADE = frozenset({"sqlite_sequence"})
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"})
VIRTUAL_TABLE_MODULES = frozenset({"fts5", "rtree", "rtree_i32"})
# Pragmas that only report; the first group also takes a table or index name.
NAME_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list", "table_list"}
)
CHECK_PRAGMAS = frozenset({"integrity_check", "quick_check", "foreign_key_check"})
READ_PRAGMAS = NAME_PRAGMAS | CHECK_PRAGMAS | frozenset(
    {
        "application_id", "auto_vacuum", "busy_timeout", "cache_size", "collation_list",
        "compile_options", "data_version", "database_list", "encoding", "foreign_keys",
        "freelist_count", "function_list", "journal_mode", "module_list", "page_count",
        "page_size", "pragma_list", "query_only", "recursive_triggers", "schema_version",
        "trusted_schema", "user_version",
    }
)
CREATE_ACTIONS = {
    sqlite3.SQLITE_CREATE_TABLE: "create table",
    sqlite3.SQLITE_CREATE_INDEX: "create index",
    sqlite3.SQLITE_CREATE_VIEW: "create view",
    sqlite3.SQLITE_CREATE_TRIGGER: "create trigger",
    sqlite3.SQLITE_CREATE_VTABLE: "create virtual table",
}
DROP_ACTIONS = {
    sqlite3.SQLITE_DROP_TABLE: "drop table",
    sqlite3.SQLITE_DROP_INDEX: "drop index",
    sqlite3.SQLITE_DROP_VIEW: "drop view",
    sqlite3.SQLITE_DROP_TRIGGER: "drop trigger",
    sqlite3.SQLITE_DROP_VTABLE: "drop virtual table",
    sqlite3.SQLITE_ALTER_TABLE: "alter table",
}
TEMP_ACTIONS = frozenset(
    getattr(sqlite3, f"SQLITE_{verb}_TEMP_{kind}")
    for verb in ("CREATE", "DROP")
    for kind in ("TABLE", "INDEX", "VIEW", "TRIGGER")
)
WRITE_ACTIONS = {sqlite3.SQLITE_INSERT: "insert into", sqlite3.SQLITE_UPDATE: "update", sqlite3.SQLITE_DELETE: "delete from"}
# Index and trigger actions name their table second.
TABLE_SECOND = frozenset(
    {sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_DROP_INDEX, sqlite3.SQLITE_CREATE_TRIGGER, sqlite3.SQLITE_DROP_TRIGGER}
)


class Guard:
    """
    The authorizer for one statement of one tool call.

    :param tool: READ, WRITE, DESTRUCTIVE or VIEW
    :param statement: the statement being compiled
    :param pinned: the project the connection is pinned to, or None
    :param scope_views: folded names of the temporary views that filter memory tables by project
    :param shadow_tables: folded names of virtual tables' shadow tables, read-only to SQL as in defensive mode
    :param sql: the statement's text: its trace marks the end of compiling
    :param max_name_chars: the longest name of a new table, view, index or trigger
    """

    def __init__(
        self,
        tool: str,
        statement: Statement,
        pinned: str | None = None,
        scope_views: frozenset[str] = frozenset(),
        shadow_tables: frozenset[str] = frozenset(),
        sql: str | None = None,
        max_name_chars: int = Limits.max_name_chars,
    ):
        self.tool = tool
        self.statement = statement
        self.pinned = pinned
        self.scope_views = scope_views
        self.shadow_tables = shadow_tables
        self.sql = sql
        self.max_name_chars = max_name_chars
        self.running = False
        self.refusal: str | None = None
        self.dropped_views: list[str | None] = []
        self.triggers: set[str] = set()

    def __call__(self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
        try:
            reason = self.check(action, arg1, arg2, db, source)
        except Exception as e:  # a bug here must refuse, never allow
            reason = f"the SQL guard failed ({e!r}); the statement was refused"
        if reason is None:
            return sqlite3.SQLITE_OK
        if self.refusal is None:
            self.refusal = reason
        return sqlite3.SQLITE_DENY

    def started(self, sql: str) -> None:
        "Trace callback: the statement has compiled and is running (nested statements are traced too)."
        if self.sql is None or sql == self.sql:
            self.running = True

    def install(self, conn: sqlite3.Connection) -> None:
        "Check every statement ``conn`` compiles from now on."
        self.running = False
        conn.set_authorizer(self)
        conn.set_trace_callback(self.started)

    @staticmethod
    def remove(conn: sqlite3.Connection) -> None:
        conn.set_authorizer(None)
        conn.set_trace_callback(None)

    def check(self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> str | None:
        "None if the action is allowed, else why not."
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return ATTACH_REFUSED
        if action in (sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT):
            return TRANSACTION_REFUSED
        if action in TEMP_ACTIONS:
            return TEMP_REFUSED
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE):
            return None
        if action == sqlite3.SQLITE_FUNCTION:
            return self.check_function(arg2)
        if action == sqlite3.SQLITE_PRAGMA:
            return self.check_pragma(arg1, arg2)
        if action == sqlite3.SQLITE_READ:
            return self.check_read(arg1, db, source)
        if action in WRITE_ACTIONS:
            return self.check_write(action, arg1, db, source)
        if action in CREATE_ACTIONS or action in DROP_ACTIONS:
            return TEMP_REFUSED if db == "temp" else self.check_schema(action, arg1, arg2)
        if action == sqlite3.SQLITE_REINDEX and self.statement.verb == "CREATE":
            return None  # CREATE INDEX reports building the index this way
        return f"this statement needs an action the SQL tools do not allow (SQLite action {action})"

    def check_function(self, name: str | None) -> str | None:
        if name and fold(name) in DENIED_FUNCTIONS:
            return f"the function {name}() is refused: it can load code or reach files outside the memory file"
        return None

    def check_pragma(self, name: str | None, value: str | None) -> str | None:
        name = fold(name or "")
        if name not in READ_PRAGMAS:
            if value is not None:
                return f"PRAGMA {name} = {value} is refused: the SQL tools cannot change settings"
            return f"PRAGMA {name} is not available; read-only pragmas: {', '.join(sorted(READ_PRAGMAS))}"
        if value is not None and name not in NAME_PRAGMAS | CHECK_PRAGMAS:
            return f"PRAGMA {name} = {value} is refused: the SQL tools cannot change settings"
        if name in CHECK_PRAGMAS and self.pinned is not None:
            return f"PRAGMA {name} reports on every project's rows: not available to a bridge pinned to a project"
        return None

    def check_read(self, table: str | None, db: str | None, source: str | None) -> str | None:
        if self.pinned is None or table is None:
            return None
        folded = fold(table)
        if folded == "dbstat":
            return "dbstat reports on every project's storage: not available to a bridge pinned to a project"
        if db != "main" or not is_memory(table) or folded in GLOBAL_TABLES:
            return None
        if source is not None and fold(source) in self.scope_views:
            return None
        if folded in self.scope_views:
            return (
                f"{table} holds every project's rows, and this bridge is pinned to project {self.pinned!r}: "
                f"it reads {table} through a filter to that project. Refer to it as {table}, not main.{table}; "
                "views saved with create_view are filtered too, triggers are not"
            )
        return f"{table} has no project column, so a bridge pinned to project {self.pinned!r} cannot read it"

    def check_write(self, action: int, table: str | None, db: str | None, trigger: str | None = None) -> str | None:
        "``trigger``: the trigger whose program does the write, or None for the statement itself."
        folded = fold(table or "")
        verb = self.statement.verb
        if folded in SCHEMA_TABLES:
            return None  # SQLite refuses direct schema edits itself, and PRAGMA writable_schema is refused
        if folded == "sqlite_sequence":
            if trigger is None and (action, verb) in ((sqlite3.SQLITE_DELETE, "DROP"), (sqlite3.SQLITE_UPDATE, "ALTER")):
                return None  # dropping or renaming an AUTOINCREMENT table keeps its counter in step
            return "sqlite_sequence holds SQLite's AUTOINCREMENT counters: the SQL tools cannot change it"
        if folded.startswith("sqlite_"):
            return f"{table} is SQLite's own table: the SQL tools cannot change it"
        if is_memory(table):  # in temp too: a pinned connection's memory tables are temporary views
            return memory_write_refused(table)
        if db == "temp":
            return TEMP_REFUSED
        if folded in self.shadow_tables and not self.running:
            return shadow_refused(table)
        if self.tool in (READ, VIEW):
            use = "destructive_query(query, reason)" if action == sqlite3.SQLITE_DELETE else "write_query"
            return f"{self.tool} cannot change data (this statement would {WRITE_ACTIONS[action]} {table}): use {use}"
        if trigger is not None:
            return self.check_trigger_write(action, table, trigger)
        return None

    def check_trigger_write(self, action: int, table: str | None, trigger: str) -> str | None:
        """
        A trigger's write is judged as the same write made by the statement itself.

        write_query runs no DELETE statement, whatever its size: a delete needs a
        reason and a snapshot, which destructive_query takes. A trigger's DELETE
        is the same act one step removed, so a write that can fire one (SQLite
        compiles every trigger the statement may fire, WHEN clauses aside) is
        refused here, before anything runs, and destructive_query runs it after
        its snapshot, with a reason in the audit log. Snapshotting inside
        write_query instead would make write_query a delete with no reason.
        A trigger's UPDATE (or REPLACE) is treated as the statement's own: the
        rows it changes count toward max_changed_rows, since the change counter
        reads total_changes(), which includes trigger programs (see :mod:`.change_count`).
        """
        self.triggers.add(trigger)
        if action == sqlite3.SQLITE_DELETE and self.tool == WRITE:
            return (
                f"this write can fire trigger {trigger}, which deletes rows from {table}: write_query does not "
                "delete rows, its triggers included. Use destructive_query(query, reason), which snapshots the "
                "file first, or drop the trigger"
            )
        return None

    def check_schema(self, action: int, arg1: str | None, arg2: str | None) -> str | None:
        what = CREATE_ACTIONS.get(action) or DROP_ACTIONS[action]
        # SQLite names the object of every create, drop and alter action (the table, for ALTER TABLE)
        name = cast(str, arg2 if action == sqlite3.SQLITE_ALTER_TABLE else arg1)
        table = arg2 if action in TABLE_SECOND else name
        for touched in (name, table):
            if is_memory(touched):
                return memory_schema_refused(touched)
        if action in CREATE_ACTIONS and not self.running and not made_by_sqlite(name):  # running: a shadow table
            problem = name_problem(name, self.max_name_chars)
            if problem:
                return f"{what}: {problem}"
        if fold(table or "") in self.shadow_tables and not self.running:
            return shadow_refused(table)
        if action == sqlite3.SQLITE_CREATE_VTABLE and fold(arg2 or "") not in VIRTUAL_TABLE_MODULES:
            return f"virtual tables using {arg2} are refused: the SQL tools create fts5 and rtree tables only"
        if action == sqlite3.SQLITE_DROP_VIEW:
            self.dropped_views.append(arg1)
        if self.running and self.tool in (WRITE, DESTRUCTIVE):
            return None  # a virtual table creating or dropping its shadow tables
        return self.check_schema_tool(action, what, name)

    def check_schema_tool(self, action: int, what: str, name: str | None) -> str | None:
        allowed = {
            READ: (),
            WRITE: (sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_CREATE_VTABLE),
            DESTRUCTIVE: tuple(a for a in list(CREATE_ACTIONS) + list(DROP_ACTIONS) if a != sqlite3.SQLITE_CREATE_VIEW),
            VIEW: (sqlite3.SQLITE_CREATE_VIEW,),
        }[self.tool]
        if action in allowed:
            return None
        if action == sqlite3.SQLITE_CREATE_VIEW:
            return "views are created with create_view(name, select_sql, description), which records what they are for"
        tool = "write_query" if action in (sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_CREATE_INDEX) else "destructive_query(query, reason)"
        return f"{self.tool} cannot {what} {name}: use {tool}"


def made_by_sqlite(name: str) -> bool:
    "Is ``name`` one SQLite gives its own objects (AUTOINCREMENT counters, constraint indexes)?"
    return fold(name) in SQLITE_MADE or fold(name).startswith("sqlite_autoindex_")


def shadow_refused(table: str | None) -> str:
    return (
        f"{table} is a shadow table holding a virtual table's index: it is read-only to SQL (as in SQLite's "
        "defensive mode); change the virtual table itself"
    )


def memory_write_refused(table: str) -> str:
    if fold(table) == "sql_audit":
        return f"{table} is the SQL tools' audit record: no tool can change it"
    if fold(table) == "sql_views":
        return f"{table} holds the descriptions of saved views: change them with create_view"
    return (
        f"{table} is a memory table and is read-only to SQL: change memory through the memory tools "
        "(create_entities, add_observations, delete_entities, append_event, ...), which keep the ledger and search index true"
    )


def memory_schema_refused(name: str) -> str:
    if fold(name) in ("sql_audit", "sql_views", "query_errors") or fold(name).startswith("sql_audit"):
        return f"{name} belongs to the SQL tools' audit record: it cannot be dropped, altered or redefined"
    return f"{name} is part of memory's own schema: it cannot be created, dropped or altered through SQL"
