"""The SQL tools as one object: every door (MCP, CLI, tests) calls these methods.

Each method is one audited call: it opens its own connection, runs under
the guard, the deadline and the caps, and writes one ``sql_audit`` row in a
``finally`` block, whether it succeeded, failed or was refused.
"""

import contextlib
import pathlib
import time
from collections.abc import Iterator
from typing import Any

from ..core.database import connect
from ..core.errors import InvalidInput
from ..core.ledger import Caller
from ..core.secrets import mask_secrets, refuse_secrets
from ..core.validation import check_name, check_project
from . import catalog, create_view, read_query, search_text, write_query
from .audit_log import AuditRecord, write_audit
from .connections import open_agent_connection
from .csv_results import escape
from .execute import Call
from .limits import Limits
from .snapshots import BEFORE_DESTRUCTIVE, MANUAL, list_snapshots, rotate, snapshot_folder, take_snapshot

MAX_REASON_CHARS = 2_000


class SqlTools:
    """
    The SQL tools on one memory file, for one caller.

    :param path: the memory file (created and migrated if needed)
    :param project: pin every call to this project's rows in the memory tables; None sees every project
    :param actor: who is calling, recorded in the audit log
    :param session: the caller's session id, recorded in the audit log
    :param limits: the caps; the defaults of :class:`~.limits.Limits` if not given
    :param snapshot_dir: where snapshots go; by default ``<file stem>-snapshots`` next to the file
    :param search_engine: ``auto`` or ``python`` (google-re2 in this process), or ``ripgrep``
    :param allow_secrets: run calls whose text looks like a credential, and keep it unmasked in the audit log
    """

    def __init__(
        self,
        path: str | pathlib.Path,
        project: str | None = None,
        actor: str = "local",
        session: str | None = None,
        limits: Limits | None = None,
        snapshot_dir: str | pathlib.Path | None = None,
        search_engine: str = "auto",
        allow_secrets: bool = False,
    ):
        self.allow_secrets = allow_secrets
        if not allow_secrets:
            refuse_secrets(project, "project")
        self.path = pathlib.Path(path).resolve()
        self.project = check_project(project) if project is not None else None
        self.caller = Caller(check_name(actor, "actor"), session)
        self.limits = limits or Limits()
        self.snapshot_dir = snapshot_folder(self.path, snapshot_dir)
        if search_engine not in ("auto", "ripgrep", "python"):
            raise InvalidInput("search_engine: must be auto, ripgrep or python")
        self.search_engine = search_engine
        connect(self.path).close()

    @contextlib.contextmanager
    def call(self, tool: str, arguments: dict[str, Any], write: bool) -> Iterator[Call]:
        """
        One audited call on a fresh connection: yields its :class:`Call`. Text
        that looks like a credential is refused before anything runs, and the
        audit row keeps it masked.
        """
        record = AuditRecord(tool, arguments)
        started = time.perf_counter()
        try:
            if not self.allow_secrets:
                refuse_credentials(arguments, record)
            agent = open_agent_connection(self.path, self.limits, write, self.project)
            try:
                yield Call(agent, self.limits, record, self.caller.actor)
            finally:
                agent.close()
            record.ok = True
        except BaseException as e:
            record.error = self.masked(str(e) or type(e).__name__)
            raise
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            write_audit(self.path, record, self.caller, self.project, elapsed, self.limits.audit_text_chars)

    def audit_refusal(self, tool: str, arguments: dict[str, Any], error: str) -> None:
        """
        Record a call another layer refused before it reached the tools, such as
        an MCP call with an unknown or mistyped argument.

        :param tool: the tool's name
        :param arguments: the arguments as given
        :param error: why the call was refused
        """
        record = AuditRecord(tool, self.masked(arguments), error=self.masked(error))
        write_audit(self.path, record, self.caller, self.project, 0.0, self.limits.audit_text_chars)

    def masked(self, value: Any) -> Any:
        "``value`` as the audit log keeps it: likely secrets masked, unless secrets are allowed."
        return value if self.allow_secrets else mask_secrets(value)

    def read_query(self, query: Any, limit: Any = None) -> str:
        """
        Run one SELECT, WITH ... SELECT, VALUES, EXPLAIN or read-only PRAGMA.

        :param query: the statement
        :param limit: most rows to return (default ``default_rows``, at most ``max_rows``)
        :return: CSV, then a ``# N rows`` line saying whether and why it was cut
        """
        with self.call("read_query", {"query": query, "limit": limit}, write=False) as call:
            return read_query.read_query(call, query, limit)

    def write_query(self, query: Any) -> str:
        """
        Run one INSERT, UPDATE, upsert, REPLACE, or CREATE TABLE / INDEX / VIRTUAL TABLE (fts5, rtree).

        :param query: the statement
        :return: RETURNING rows as CSV, then ``# N rows affected``
        """
        with self.call("write_query", {"query": query}, write=True) as call:
            return write_query.write_query(call, query)

    def destructive_query(self, query: Any, reason: Any) -> str:
        """
        Snapshot the file, then run one DELETE, DROP, ALTER, CREATE/DROP TRIGGER or unfiltered UPDATE.

        :param query: the statement
        :param reason: why it is needed; kept in the audit log
        """
        with self.call("destructive_query", {"query": query, "reason": reason}, write=True) as call:
            check_reason(reason)
            return write_query.destructive_query(call, query, reason, self.snapshot_dir, self.limits.destructive_snapshots_keep)

    def list_tables(self) -> str:
        "Tables and views as CSV: ``name,type,access``."
        with self.call("list_tables", {}, write=False) as call:
            return catalog.list_tables(call)

    def describe_table(self, table: Any) -> str:
        """
        One table's or view's columns, description, access and indexes.

        :param table: its name
        """
        with self.call("describe_table", {"table": table}, write=False) as call:
            return catalog.describe_table(call, table)

    def get_schema(self, include_system: Any = False) -> str:
        """
        Every table, view, index and trigger, with each view's description.

        :param include_system: also list SQLite's own tables, search-index shadow tables and memory's indexes and triggers
        """
        with self.call("get_schema", {"include_system": include_system}, write=False) as call:
            return catalog.get_schema(call, include_system)

    def create_view(self, name: Any, select_sql: Any, description: Any, replace: Any = False) -> str:
        """
        Save a query as a view, a reusable skill whose description get_schema shows.

        :param name: the view's name
        :param select_sql: one SELECT
        :param description: what it is for
        :param replace: replace an existing view of that name; its old definition stays in the audit log
        """
        arguments = {"name": name, "select_sql": select_sql, "description": description, "replace": replace}
        with self.call("create_view", arguments, write=True) as call:
            return create_view.create_view(call, name, select_sql, description, replace)

    def snapshot(self, reason: Any) -> str:
        """
        Copy the memory file with SQLite's online backup API; the newest ``snapshots_keep`` manual ones are kept.

        :param reason: why, kept in the audit log
        """
        with self.call("snapshot", {"reason": reason}, write=False) as call:
            check_reason(reason)
            path = take_snapshot(self.path, self.snapshot_dir, MANUAL)
            removed = rotate(self.snapshot_dir, self.path.stem, MANUAL, self.limits.snapshots_keep)
            call.record.snapshot = str(path)
            call.record.outcome = f"snapshot written; {len(removed)} old manual snapshots removed"
            return snapshot_report(path, removed, self.snapshot_dir, self.path.stem)

    def search_text(
        self,
        table: Any,
        pattern: Any,
        columns: Any = None,
        where: Any = None,
        key_column: Any = None,
        limit: Any = 20,
        ignore_case: Any = False,
        fixed_strings: Any = False,
        context_chars: Any = 40,
    ) -> str:
        """
        Find a regular expression inside values: ``where`` (SQL) narrows the rows, the pattern matches line by line.

        :param table: the table or view to search
        :param pattern: the regular expression (or text, with ``fixed_strings``)
        :param columns: the columns to search; all by default
        :param where: an SQL expression choosing rows
        :param key_column: the column identifying each row; rowid by default
        :param limit: most matches to return
        :param ignore_case: match case-insensitively
        :param fixed_strings: treat the pattern as plain text
        :param context_chars: characters of context on each side of a match
        :return: CSV ``key,column,match,snippet``, then a ``# N matches`` line
        """
        arguments = {
            "table": table, "pattern": pattern, "columns": columns, "where": where, "key_column": key_column,
            "limit": limit, "ignore_case": ignore_case, "fixed_strings": fixed_strings, "context_chars": context_chars,
        }
        with self.call("search_text", arguments, write=False) as call:
            return search_text.search_text(
                call, table, pattern, columns, where, key_column, limit, ignore_case, fixed_strings, context_chars, self.search_engine
            )


def refuse_credentials(arguments: dict[str, Any], record: AuditRecord) -> None:
    "Refuse a call whose arguments hold a likely credential, its audit record keeping them masked (one scan when they do not)."
    try:
        for name, value in arguments.items():
            refuse_secrets(value, name)
    except InvalidInput:
        record.arguments = mask_secrets(arguments)
        raise


def check_reason(reason: Any) -> None:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidInput("reason: must say why (a non-empty string); it is kept in the audit log")
    if len(reason) > MAX_REASON_CHARS:
        raise InvalidInput(f"reason: {len(reason)} characters is over the limit of {MAX_REASON_CHARS}")
    if "\x00" in reason:
        raise InvalidInput("reason: must not contain NUL characters")


def snapshot_report(path: pathlib.Path, removed: list[pathlib.Path], folder: pathlib.Path, stem: str) -> str:
    manual = len(list_snapshots(folder, stem, MANUAL))
    kept = len(list_snapshots(folder, stem, BEFORE_DESTRUCTIVE))
    lines = [
        f"snapshot written: {path}",
        f"kept: {manual} manual, {kept} taken before destructive statements (manual snapshots never remove those)",
    ]
    lines += [f"removed old manual snapshot: {p.name}" for p in removed]
    return "".join(f"# {escape(line)}\n" for line in lines)
