"""Which statements each tool runs, read from the statement's leading keywords.

This adds to the authorizer (see :mod:`.guard`) what it cannot see: statements
such as VACUUM that report nothing to it, whether a DELETE is the statement
itself or a cascade of the REPLACE it belongs to, and a clear message for a
change naming a memory table.
"""

from .guard import (
    ATTACH_REFUSED,
    DESTRUCTIVE,
    READ,
    TEMP_REFUSED,
    TRANSACTION_REFUSED,
    VIEW,
    WRITE,
    memory_schema_refused,
    memory_write_refused,
)
from .lexer import Statement
from .names import fold, is_memory
from .sql_errors import SqlRefused

VERBS = {
    READ: {"SELECT", "VALUES", "PRAGMA"},
    WRITE: {"INSERT", "REPLACE", "UPDATE", "CREATE"},
    DESTRUCTIVE: {"INSERT", "REPLACE", "UPDATE", "CREATE", "DELETE", "DROP", "ALTER"},
    VIEW: {"CREATE"},
}
CREATES = {
    WRITE: {"TABLE", "INDEX", "VIRTUAL"},
    DESTRUCTIVE: {"TABLE", "INDEX", "VIRTUAL", "TRIGGER"},
    VIEW: {"VIEW"},
}
NOT_AVAILABLE = {
    "VACUUM": "VACUUM is refused: it rewrites the whole file, and VACUUM INTO copies it elsewhere; use the snapshot tool",
    "ATTACH": ATTACH_REFUSED,
    "DETACH": ATTACH_REFUSED,
    "ANALYZE": "ANALYZE is not available through the SQL tools",
    "REINDEX": "REINDEX is not available through the SQL tools",
    **{verb: TRANSACTION_REFUSED for verb in ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")},
}


def check_verb(tool: str, statement: Statement) -> None:
    """
    Refuse a statement the tool does not run, saying which tool does.

    :param tool: READ, WRITE, DESTRUCTIVE or VIEW
    :param statement: what the statement is
    :raises SqlRefused: naming the problem and the tool to use
    """
    reason = verb_problem(tool, statement) or target_problem(statement)
    if reason:
        raise SqlRefused(reason)


def target_problem(statement: Statement) -> str | None:
    """
    Refuse, with the memory message, a change naming a memory table.

    The guard refuses these anyway; this names the problem for a pinned
    connection too, where SQLite would first complain that the name is a view.
    """
    schema, _, name = (statement.target or "").rpartition(".")
    if not name or fold(schema or "main") not in ("main", "temp") or not is_memory(name):
        return None
    if statement.verb in ("INSERT", "REPLACE", "UPDATE", "DELETE"):
        return memory_write_refused(name)
    if statement.verb in ("DROP", "ALTER") or statement.object in ("INDEX", "TRIGGER"):
        return memory_schema_refused(name)
    return None


def verb_problem(tool: str, statement: Statement) -> str | None:
    verb = statement.verb
    if not verb.isalpha():
        return "query: must start with a statement keyword such as SELECT, INSERT or DELETE"
    if verb in NOT_AVAILABLE:
        return NOT_AVAILABLE[verb]
    if statement.temp:
        return TEMP_REFUSED
    if statement.explain:
        return None if tool == READ else f"{tool} does not run EXPLAIN: use read_query"
    if verb not in VERBS[tool] or (verb == "CREATE" and statement.object not in CREATES.get(tool, ())):
        return wrong_tool(tool, statement)
    return None


def wrong_tool(tool: str, statement: Statement) -> str:
    what = " ".join(filter(None, (statement.verb, statement.object)))
    if statement.verb == "CREATE" and statement.object == "VIEW":
        use = "create_view(name, select_sql, description), which records what the view is for"
    elif statement.verb in VERBS[READ]:
        use = "read_query"
    elif statement.verb in VERBS[WRITE] and statement.object != "TRIGGER":
        use = "write_query"
    elif statement.verb in VERBS[DESTRUCTIVE]:
        use = "destructive_query(query, reason), which snapshots the file first"
    else:
        return f"{what} statements are not available through the SQL tools"
    return f"{tool} does not run {what} statements: use {use}"
