"""Pinning a connection to one project: temporary views over the memory tables.

For each memory table with a ``project`` column (or a foreign key to such a
table), the server creates a temporary view of the same name holding only the
pinned project's rows. SQLite looks names up in ``temp`` before ``main``, so
the agent's ``SELECT * FROM entities`` reads the filtered view. The guard then
refuses every other way to the real table (``main.entities``, a view or
trigger stored in the file): a read of a memory table is allowed only from
inside one of these views. Views saved by create_view are recreated as
temporary views too, so their names resolve to the filtered views as well.
Memory tables with no way to tell a row's project (the search indexes) get no
view and so cannot be read at all by a pinned connection.

The agent cannot make temporary objects (the guard refuses them); these are
the server's own, made before the agent's statement is compiled.
"""

import re
import sqlite3

from .names import GLOBAL_TABLES, fold, literal, memory_tables, quote

CREATE_VIEW = re.compile(r"\s*CREATE\s+VIEW\s", re.IGNORECASE)


def pin(conn: sqlite3.Connection, project: str) -> frozenset[str]:
    """
    Create the temporary views that pin ``conn`` to ``project``.

    :param conn: a connection with no authorizer set
    :param project: the project
    :return: folded names of the views filtering memory tables
    """
    filters = project_filters(conn, project)
    views = stored_views(conn)
    conn.set_authorizer(setup_authorizer)
    try:
        for table, select in filters.items():
            conn.execute(f"CREATE TEMP VIEW {quote(table)} AS {select}")
        for sql in views:
            recreate_as_temporary(conn, sql)
    finally:
        conn.set_authorizer(None)
    return frozenset(fold(table) for table in filters)


def unpin(conn: sqlite3.Connection) -> None:
    """
    Drop the temporary views again, before an ALTER TABLE or a DROP: renaming
    re-reads the whole schema, and memory's triggers would then name the views
    instead of the tables; ``DROP VIEW name`` would find a saved view's temporary
    twin instead of the view. The guard still refuses every direct read of a memory table.

    :param conn: a connection with no authorizer set
    """
    for (name,) in conn.execute("SELECT name FROM temp.sqlite_master WHERE type = 'view'").fetchall():
        conn.execute(f"DROP VIEW temp.{quote(name)}")


def project_filters(conn: sqlite3.Connection, project: str) -> dict[str, str]:
    "``{memory table: SELECT of the project's rows}`` for the tables that have a project."
    tables = [name for name in main_tables(conn) if fold(name) in memory_tables() and fold(name) not in GLOBAL_TABLES]
    columns = {name: table_columns(conn, name) for name in tables}
    filters = {}
    for table in tables:
        if "project" in columns[table]:
            filters[table] = f"SELECT * FROM main.{quote(table)} WHERE project = {literal(project)}"
    for table in tables:
        if table not in filters:
            parent = project_parent(conn, table, filters)
            if parent:
                column, parent_table, parent_column = parent
                filters[table] = (
                    f"SELECT * FROM main.{quote(table)} WHERE {quote(column)} IN "
                    f"(SELECT {quote(parent_column)} FROM main.{quote(parent_table)} WHERE project = {literal(project)})"
                )
    return filters


def project_parent(conn: sqlite3.Connection, table: str, filters: dict[str, str]) -> tuple[str, str, str] | None:
    "``(column, parent table, parent column)`` of a foreign key to a table with a project column, or None."
    for row in conn.execute(f"PRAGMA foreign_key_list({quote(table)})"):
        parent, column, parent_column = row[2], row[3], row[4]
        if parent in filters and "project" in table_columns(conn, parent):
            return column, parent, parent_column or "rowid"
    return None


def main_tables(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")]


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({quote(table)})")}


def stored_views(conn: sqlite3.Connection) -> list[str]:
    "The CREATE VIEW statements of the file's views: memory's own and those saved by create_view."
    return [row[0] for row in conn.execute("SELECT sql FROM main.sqlite_master WHERE type = 'view' AND sql IS NOT NULL")]


def recreate_as_temporary(conn: sqlite3.Connection, sql: str) -> None:
    "Make a stored view's temporary twin, which resolves names to the filtered views; skip one that will not."
    if not CREATE_VIEW.match(sql):
        return
    try:
        conn.execute(CREATE_VIEW.sub("CREATE TEMP VIEW ", sql, count=1))
    except sqlite3.Error:
        pass  # the stored view stays unreadable to the pinned connection: the guard refuses it


def setup_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    "While pinning: create temporary views and nothing else."
    allowed = action == sqlite3.SQLITE_CREATE_TEMP_VIEW or (
        action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_READ)
        and fold(arg1 or "") in ("sqlite_temp_master", "sqlite_master")
    )
    return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY
