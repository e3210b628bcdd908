"""The audit record: one ``sql_audit`` row per SQL tool call, refused calls included.

Rows are written on a connection of their own after the call's transaction
has ended, so a rolled-back call still leaves its row. The table is
append-only (triggers refuse UPDATE, DELETE and overwrites), hash-chained
like the ledger (``verify`` walks the chain; the head witness, once the ledger
has started it, keeps the newest row too, so rows removed from the end are
found), and read-only to the SQL tools;
``query_errors`` lists the failed calls newest first.
"""

import json
import logging
import pathlib
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ..core import witness
from ..core.clock import now
from ..core.database import configure, inserted_id, write_transaction
from ..core.ledger import GENESIS_HASH, Caller, chained_hash
from ..core.migrations import AUDIT_HASHED

logger = logging.getLogger(__name__)


@dataclass
class AuditRecord:
    """
    What one call did, filled in as it runs.

    :param tool: the tool's name
    :param arguments: the arguments as given
    """

    tool: str
    arguments: dict[str, Any]
    ok: bool = False
    error: str | None = None
    outcome: str | None = None
    rows_changed: int | None = None
    snapshot: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def cut(value: Any, max_chars: int) -> Any:
    "Long strings cut to ``max_chars``, marked with their full length; other values as JSON allows."
    if isinstance(value, str):
        if len(value) > max_chars:
            return f"{value[:max_chars]}…[cut: {len(value)} characters in all]"
        return value
    if isinstance(value, (list, tuple)):
        return [cut(v, max_chars) for v in value[:100]]
    if isinstance(value, dict):
        return {str(k): cut(v, max_chars) for k, v in list(value.items())[:100]}
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return cut(repr(value), max_chars)


def storable(value: Any) -> str | None:
    "Text SQLite can store (lone surrogates escaped), or None for anything else."
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def write_audit(
    path: str | pathlib.Path, record: AuditRecord, caller: Caller, project: str | None, duration_ms: float, max_chars: int
) -> None:
    """
    Append the call's row to ``sql_audit``, on a connection of its own.

    A failure to write it is logged, never raised: it must not hide the
    call's own result or error.

    :param path: the memory file
    :param record: what the call did
    :param caller: who called
    :param project: the project the call was pinned to, or None
    :param duration_ms: how long the call took
    :param max_chars: the longest argument text kept
    """
    row = {
        "ts": now(),
        "actor": caller.actor,
        "session": caller.session,
        "project": project,
        "tool": record.tool,
        "arguments": json.dumps(cut(record.arguments, max_chars)),
        "reason": storable(cut(record.arguments.get("reason"), max_chars)),
        "ok": int(record.ok),
        "error": storable(cut(record.error, max_chars)),
        "outcome": record.outcome,
        "rows_changed": record.rows_changed,
        "snapshot": record.snapshot,
        "detail": json.dumps(cut(record.detail, max_chars)) if record.detail else None,
        "duration_ms": round(duration_ms, 3),
    }
    try:
        conn = sqlite3.connect(str(path))
        try:
            configure(conn)
            with write_transaction(conn):
                append_audit_row(conn, row)
        finally:
            conn.close()
    except Exception:
        logger.exception("could not write the SQL audit row for %s", record.tool)


def append_audit_row(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    "Insert ``row`` (the fields of ``AUDIT_HASHED``) chained to the newest row; call inside a write transaction."
    newest = conn.execute("SELECT hash FROM sql_audit ORDER BY id DESC LIMIT 1").fetchone()
    prev_hash = newest[0] if newest else GENESIS_HASH
    chained = {**row, "prev_hash": prev_hash, "hash": chained_hash(row, prev_hash)}
    cursor = conn.execute(
        f"INSERT INTO sql_audit ({', '.join(chained)}) VALUES ({', '.join(':' + k for k in chained)})", chained
    )
    witness.appended(conn, "sql_audit", inserted_id(cursor), chained["hash"])


def audit_chain_problems(conn: sqlite3.Connection, after: tuple[int, str] = (0, GENESIS_HASH)) -> list[dict[str, Any]]:
    """
    Walk the SQL audit log's hash chain and report the first row that was
    edited, deleted, reordered or inserted out of turn.

    :param after: ``(row id, its hash)`` to start after, known good; the start by default
    :return: ``[{table, row, expected, found}]``, empty when the chain holds
    """
    start, prev_hash = after
    if start and conn.execute("SELECT hash FROM sql_audit WHERE id = ?", [start]).fetchone() != (prev_hash,):
        return [{"table": "sql_audit", "row": start, "expected": f"the row checked before (hash {prev_hash[:12]})",
                 "found": "another row, or none"}]
    for id, stored_prev, stored_hash, *values in conn.execute(
        f"SELECT id, prev_hash, hash, {', '.join(AUDIT_HASHED)} FROM sql_audit WHERE id > ? ORDER BY id", [start]
    ):
        if stored_prev != prev_hash:
            problem = "its prev_hash does not match the previous row (a row was deleted, inserted or reordered)"
        elif chained_hash(dict(zip(AUDIT_HASHED, values)), prev_hash) != stored_hash:
            problem = "its hash does not match its contents (the row was edited)"
        else:
            prev_hash = stored_hash
            continue
        return [{"table": "sql_audit", "row": id, "expected": "the next row of the chain", "found": problem}]
    return []
