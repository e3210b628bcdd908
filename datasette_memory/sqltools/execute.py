"""Running one agent statement under the guard and the deadline, and naming what went wrong."""

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ..core.database import write_transaction
from ..core.errors import InvalidInput
from ..core.file_errors import READ_ONLY, file_failure
from ..core.validation import check_text
from .audit_log import AuditRecord
from .connections import AgentConnection
from .guard import ATTACH_REFUSED, Guard
from .lexer import Statement, statement
from .limits import Deadline, Limits
from .sql_errors import SqlError, SqlLimitExceeded, SqlRefused
from .verbs import check_verb

T = TypeVar("T")


def check_sql(value: Any, field: str, limits: Limits) -> str:
    """
    Require SQL text: a string, no NUL, within the size cap.

    :param value: the argument
    :param field: its name, for the error
    :param limits: the caps
    """
    check_text(value, field, max_bytes=None)
    size = len(value.encode("utf-8"))
    if size > limits.max_query_bytes:
        raise InvalidInput(f"{field}: {size} bytes is over the limit of {limits.max_query_bytes} bytes; split the work into smaller statements")
    return value


def classify(sql: str, tool: str) -> Statement:
    "What ``sql`` is, refused unless ``tool`` runs that kind of statement."
    found = statement(sql)
    check_verb(tool, found)
    return found


class Run:
    """
    One statement of one call: its guard, and translating SQLite's errors.

    :param agent: the call's connection
    :param tool: the guard's tool
    :param sql: the statement
    :param found: what the statement is (see :func:`classify`)
    :param deadline: the call's deadline, installed on the connection
    :param limits: the caps
    """

    def __init__(self, agent: AgentConnection, tool: str, sql: str, found: Statement, deadline: Deadline, limits: Limits):
        self.agent = agent
        self.sql = sql
        self.guard = Guard(tool, found, agent.pinned, agent.scope_views, agent.shadow_tables, sql, limits.max_name_chars)
        self.deadline = deadline
        self.limits = limits
        self.write = tool != "read_query"

    def execute(self) -> sqlite3.Cursor:
        "Compile and start the statement under the guard; the guard stays on until :meth:`done`."
        self.guard.install(self.agent.conn)
        return self.call(self.agent.conn.execute, self.sql)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        "Call ``function`` (executing or fetching), turning SQLite's errors into ours; a failure removes the guard."
        try:
            return function(*args)
        except (sqlite3.Error, sqlite3.Warning) as e:
            self.done()
            raise self.translate(e) from None
        except BaseException:
            self.done()
            raise

    def done(self) -> None:
        Guard.remove(self.agent.conn)

    def translate(self, error: sqlite3.Error | sqlite3.Warning) -> SqlError:
        "The error to show for ``error``: the guard's reason, the limit hit, or SQLite's message."
        message = str(error)
        undone = "; its changes were rolled back" if self.write else ""
        if self.guard.refusal:
            return SqlRefused(self.guard.refusal)
        if self.deadline.expired or message == "interrupted":
            return SqlLimitExceeded(
                f"the statement ran longer than the {self.limits.timeout_ms} ms time limit and was stopped{undone}; "
                "narrow it, add a LIMIT, or add an index"
            )
        if "string or blob too big" in message:
            size = self.limits.max_value_bytes if self.write else self.limits.max_read_value_bytes
            return SqlLimitExceeded(f"a value would be larger than the {size}-byte limit{undone}; make smaller values")
        if "too many columns" in message:
            return SqlLimitExceeded(f"over the limit of {self.limits.max_columns} columns: select or create fewer columns")
        if "too many attached databases" in message:
            return SqlRefused(ATTACH_REFUSED)
        if "one statement at a time" in message:
            return SqlRefused("one statement per call: remove everything after the first statement's ';'")
        failure = file_failure(error, self.agent.path) if isinstance(error, sqlite3.Error) else None
        # the file, not the statement: full, locked, damaged (a read's connection is read-only by design)
        if failure is not None and (self.write or failure.kind != READ_ONLY):
            return SqlError(failure.message + undone)
        return SqlError(f"SQLite could not run the statement: {message}")


class Call:
    """
    What a tool's logic gets: the call's connection, deadline, caps and audit record.

    :param agent: the connection, opened for this call
    :param limits: the caps
    :param record: the call's audit record, to fill in
    :param actor: who is calling
    """

    def __init__(self, agent: AgentConnection, limits: Limits, record: AuditRecord, actor: str):
        self.agent = agent
        self.conn = agent.conn
        self.limits = limits
        self.record = record
        self.actor = actor
        self.deadline = Deadline(limits.timeout_ms / 1000)
        self.deadline.install(self.conn)

    def run(self, tool: str, sql: str, found: Statement) -> Run:
        "A :class:`Run` of ``sql`` on this call's connection."
        return Run(self.agent, tool, sql, found, self.deadline, self.limits)

    def restart_clock(self) -> None:
        "Give the statement the whole time limit (after a snapshot, say)."
        self.deadline = Deadline(self.limits.timeout_ms / 1000)
        self.deadline.install(self.conn)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """
    One write transaction for the call (:func:`~datasette_memory.core.database.write_transaction`),
    rolled back on any error. The guard refuses transaction control, so it is
    removed before the transaction commits or rolls back.

    :param conn: the call's write connection
    """
    with write_transaction(conn):
        try:
            yield conn
        finally:
            Guard.remove(conn)
