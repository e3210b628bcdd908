"""Checks on the schema a write or destructive statement leaves, before it commits.

The guard sees what a statement does now; these checks look at what the
agent's new or changed tables, views and triggers would do later, when a
memory tool or a person in Datasette writes to them without the guard:

- memory's own objects are exactly as they were;
- every new name of the agent's follows the one rule for names
  (:func:`~.names.name_problem`; ``ALTER TABLE ... RENAME TO`` names its
  target only here);
- no table of the agent's has a foreign key to a memory table (one could block
  or ride along the memory tools' deletes);
- every way to write to a new or changed table or view (its defaults, checks
  and triggers) compiles under the destructive tool's guard: a trigger cannot
  write to memory tables or call refused functions;
- the agent's schema stays under its size cap.
"""

import sqlite3

from .connections import AgentConnection
from .guard import DESTRUCTIVE, Guard
from .lexer import Statement
from .limits import Limits
from .names import fold, is_memory, name_problem, quote
from .sql_errors import SqlLimitExceeded, SqlRefused


def schema_rows(conn: sqlite3.Connection) -> set[tuple[str, str, str, str | None]]:
    "Every object of the main schema as ``(type, name, table, sql)``."
    return set(conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master"))


def check_schema_change(
    conn: sqlite3.Connection, before: set[tuple[str, str, str, str | None]], agent: AgentConnection, limits: Limits
) -> None:
    """
    Refuse the schema the statement left, or return.

    :param conn: the write connection, inside the call's transaction, guard removed
    :param before: :func:`schema_rows` taken before the statement
    :param agent: the call's :class:`~.connections.AgentConnection`
    :param limits: the caps (the schema's size, names' length)
    :raises SqlRefused: naming the object and the problem
    """
    after = schema_rows(conn)
    if {r for r in before if is_memory(r[1])} != {r for r in after if is_memory(r[1])}:
        raise SqlRefused("this statement would change memory's own schema: refused")
    changed = after - before
    check_new_names(conn, {r[1] for r in before}, {r[1] for r in after}, limits.max_name_chars)
    for type, name, table, sql in sorted(changed, key=lambda r: (r[0], r[1])):
        if type == "table":
            check_foreign_keys(conn, name)
    targets = {table for type, name, table, sql in changed if type in ("table", "view", "trigger")}
    for target in sorted(t for t in targets if not fold(t).startswith("sqlite_")):
        check_write_paths(conn, target, agent)
    size = sum(len(sql or "") for type, name, table, sql in after if not is_memory(name))
    if size > limits.max_schema_bytes:
        raise SqlLimitExceeded(
            f"the agent's schema would be {size} bytes of CREATE statements, over the limit of "
            f"{limits.max_schema_bytes}; drop tables, views or triggers you no longer need"
        )


def check_new_names(conn: sqlite3.Connection, before: set[str], after: set[str], max_name_chars: int) -> None:
    """
    Refuse a name the statement gave that breaks the rule for names.

    Only names that are new are checked: an object named before the rule (or
    by another program) can still be altered, dropped or renamed to a good name.
    Names SQLite gives (``sqlite_`` ones, a virtual table's shadow tables) are
    derived from a name already checked.
    """
    shadow = {fold(row[1]) for row in conn.execute("PRAGMA main.table_list") if row[2] == "shadow"}
    for name in sorted(after - before):
        if fold(name).startswith("sqlite_") or fold(name) in shadow:
            continue  # SQLite refuses sqlite_ names to users itself
        problem = name_problem(name, max_name_chars)
        if problem:
            raise SqlRefused(problem)


def check_foreign_keys(conn: sqlite3.Connection, table: str) -> None:
    for row in conn.execute(f"PRAGMA foreign_key_list({quote(table)})"):
        if is_memory(row[2]):
            raise SqlRefused(
                f"table {table} has a foreign key to memory table {row[2]}: refused, because it could block "
                "or ride along the memory tools' changes; store the entity's name or id in a plain column instead"
            )


def write_paths(conn: sqlite3.Connection, table: str) -> list[str]:
    "Statements that, compiled, include every default, check and trigger of ``table``."
    columns = [row[1] for row in conn.execute(f"PRAGMA table_xinfo({quote(table)})") if row[5] == 0]
    name = quote(table)
    paths = [f"EXPLAIN INSERT INTO {name} DEFAULT VALUES", f"EXPLAIN DELETE FROM {name}"]
    if columns:
        paths.append(f"EXPLAIN UPDATE {name} SET " + ", ".join(f"{quote(c)} = {quote(c)}" for c in columns))
    return paths


def check_write_paths(conn: sqlite3.Connection, table: str, agent: AgentConnection) -> None:
    "Compile every write path of ``table`` under the destructive tool's guard."
    if not conn.execute("SELECT 1 FROM main.sqlite_master WHERE name = ? AND type IN ('table', 'view')", [table]).fetchone():
        return
    for sql in write_paths(conn, table):
        guard = Guard(DESTRUCTIVE, Statement("CHECK"), agent.pinned, agent.scope_views, agent.shadow_tables)
        guard.install(conn)
        try:
            conn.execute(sql).fetchall()
        except sqlite3.Error as e:
            if guard.refusal:
                raise SqlRefused(f"writing to {table} later would be refused ({guard.refusal}); its triggers, defaults and checks may not do that")
            if "unsafe use of" in str(e):
                raise SqlRefused(f"writing to {table} would use something SQLite does not trust inside a schema ({e}); with trusted_schema off, triggers, defaults and views cannot call such functions or use virtual tables")
        finally:
            Guard.remove(conn)
