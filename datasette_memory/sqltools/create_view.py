"""create_view: a saved query with a description, shown by get_schema."""

from typing import Any

from ..core.clock import now
from ..core.errors import InvalidInput
from ..core.validation import check_text
from .execute import Call, check_sql, classify, transaction
from .guard import READ, VIEW
from .lexer import Statement, statement
from .names import is_reserved, name_problem, quote
from .schema_check import check_schema_change, schema_rows
from .sql_errors import SqlRefused


def check_view_name(name: Any, max_chars: int) -> str:
    "A view name that follows the rule for every name the agent gives (see :func:`~.names.name_problem`)."
    check_text(name, "name", max_bytes=None)
    problem = name_problem(name, max_chars)
    if problem:
        raise (SqlRefused if is_reserved(name) else InvalidInput)(f"name: {problem}")
    return name


def check_description(description: Any, max_chars: int) -> str:
    if not isinstance(description, str) or not description.strip():
        raise InvalidInput("description: must say what the view is for (a non-empty string)")
    if len(description) > max_chars:
        raise InvalidInput(f"description: {len(description)} characters is over the limit of {max_chars}; shorten it")
    if "\x00" in description:
        raise InvalidInput("description: must not contain NUL characters")
    return description


def create_view(call: Call, name: Any, select_sql: Any, description: Any, replace: Any) -> str:
    """
    Save ``select_sql`` as a view with a description; replacing keeps the old one in the audit record.

    :param call: the call
    :param name: the view's name
    :param select_sql: one SELECT (or VALUES / WITH ... SELECT)
    :param description: what the view is for, shown by get_schema
    :param replace: replace a view of that name
    """
    limits = call.limits
    name = check_view_name(name, limits.max_name_chars)
    select_sql = check_sql(select_sql, "select_sql", limits)
    description = check_description(description, limits.max_description_chars)
    if not isinstance(replace, bool):
        raise InvalidInput("replace: must be true or false")
    found = statement(select_sql)
    if found.verb not in ("SELECT", "VALUES") or found.explain:
        raise SqlRefused("select_sql: must be one SELECT, VALUES or WITH ... SELECT statement")
    try_select(call, select_sql, found)
    conn = call.conn
    with transaction(conn):
        replaced = drop_existing(call, name, replace)
        before = schema_rows(conn)
        create = f"CREATE VIEW {quote(name)} AS\n{select_sql}"
        run = call.run(VIEW, create, classify(create, VIEW))
        run.execute()
        run.done()
        conn.execute(
            "INSERT OR REPLACE INTO sql_views (name, description, select_sql, created_at, actor) VALUES (?, ?, ?, ?, ?)",
            [name, description, select_sql, now(), call.actor],
        )
        check_schema_change(conn, before, call.agent, limits)
    call.record.outcome = "replaced" if replaced else "created"
    return f"# view {quote(name)} {'replaced; the old definition is kept in the audit log' if replaced else 'created'}\n"


def try_select(call: Call, select_sql: str, found: Statement) -> None:
    "Run the query read-only, up to its first row: it must compile and be allowed."
    run = call.run(READ, select_sql, found)
    cursor = run.execute()
    run.call(cursor.fetchone)
    cursor.close()
    run.done()


def drop_existing(call: Call, name: str, replace: bool) -> bool:
    "Drop the view ``name`` if it exists and ``replace`` says so, recording its definition."
    conn = call.conn
    row = conn.execute("SELECT type, name, sql FROM main.sqlite_master WHERE name = ? COLLATE NOCASE", [name]).fetchone()
    if row is None:
        return False
    type, stored_name, sql = row
    if type != "view":
        raise SqlRefused(f"name: there is already a {type} named {stored_name}; choose another name")
    if not replace:
        raise SqlRefused(f"name: the view {stored_name} exists; pass replace=true to replace it (the old definition is kept in the audit log)")
    old = conn.execute("SELECT description FROM sql_views WHERE name = ? COLLATE NOCASE", [stored_name]).fetchone()
    call.record.detail["replaced"] = {"name": stored_name, "sql": sql, "description": old[0] if old else None}
    conn.execute(f"DROP VIEW main.{quote(stored_name)}")
    conn.execute("DELETE FROM sql_views WHERE name = ? COLLATE NOCASE", [stored_name])
    return True
