"""write_query and destructive_query: one statement, one transaction, within the caps."""

import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

from . import project_pins
from .change_count import ChangeCounter
from .csv_results import CsvResult, rows_to_csv
from .execute import Call, check_sql, classify, transaction
from .guard import DESTRUCTIVE, WRITE
from .lexer import Statement
from .schema_check import check_schema_change, schema_rows
from .snapshots import BEFORE_DESTRUCTIVE, rotate, take_snapshot
from .sql_errors import SqlLimitExceeded

DATA_VERBS = ("INSERT", "REPLACE", "UPDATE", "DELETE")


def write_query(call: Call, query: Any) -> str:
    """
    Run one INSERT, UPDATE, upsert, REPLACE or CREATE TABLE / INDEX / VIRTUAL TABLE.

    :param call: the call
    :param query: the statement
    :return: RETURNING rows as CSV, then ``# N rows affected``
    """
    query = check_sql(query, "query", call.limits)
    return run_write(call, WRITE, query, classify(query, WRITE))


def destructive_query(call: Call, query: Any, reason: str, snapshot_folder: pathlib.Path, keep: int) -> str:
    """
    Snapshot the file, then run one DELETE, DROP, ALTER, CREATE TRIGGER or unfiltered UPDATE.

    :param call: the call
    :param query: the statement
    :param reason: why, for the audit record
    :param snapshot_folder: where the snapshot goes
    :param keep: how many pre-destructive snapshots to keep
    """
    query = check_sql(query, "query", call.limits)
    found = classify(query, DESTRUCTIVE)
    if found.verb in ("ALTER", "DROP") and call.agent.pinned is not None:
        project_pins.unpin(call.conn)
    precheck(call, query, found)
    taken: list[pathlib.Path] = []
    try:
        result = run_write(call, DESTRUCTIVE, query, found, lambda: taken.append(snapshot(call, snapshot_folder)))
    except BaseException:
        for path in taken:  # the statement was rolled back: its snapshot recovers nothing
            path.unlink(missing_ok=True)
        call.record.snapshot = None
        raise
    rotate(snapshot_folder, call.agent.path.stem, BEFORE_DESTRUCTIVE, keep)
    return result


def precheck(call: Call, query: str, found: Statement) -> None:
    "Compile the statement (as EXPLAIN, so it does not run) to refuse it before any snapshot."
    run = call.run(DESTRUCTIVE, "EXPLAIN " + query, found)
    try:
        run.call(lambda: run.execute().fetchall())
    finally:
        run.done()


def snapshot(call: Call, folder: pathlib.Path) -> pathlib.Path:
    "The pre-destructive snapshot, taken inside the write transaction so nothing can change in between."
    path = take_snapshot(call.agent.path, folder, BEFORE_DESTRUCTIVE)
    call.record.snapshot = str(path)
    call.restart_clock()
    return path


def run_write(call: Call, tool: str, query: str, found: Statement, before: Callable[[], None] | None = None) -> str:
    "The statement in one IMMEDIATE transaction, committed only if every check passes."
    conn = call.conn
    with transaction(conn):
        if before:
            before()
        schema_before = schema_rows(conn)
        counter = ChangeCounter(conn)
        run = call.run(tool, query, found)
        cursor = run.execute()
        result, trailer = run.call(returning, call, cursor)
        run.done()
        affected = conn.execute("SELECT changes()").fetchone()[0] if found.verb in DATA_VERBS else 0
        changed = call.record.rows_changed = run.call(counter.existing_rows_changed)
        check_change_cap(call, tool, changed)
        if run.guard.triggers:
            call.record.detail["triggers"] = sorted(run.guard.triggers)
        if schema_rows(conn) != schema_before:
            run.call(check_schema_change, conn, schema_before, call.agent, call.limits)
        forget_dropped_views(conn, run.guard.dropped_views)
    call.record.outcome = f"{affected} rows affected" + (f"; {trailer}" if trailer else "")
    lines = [f"{affected} {'row' if affected == 1 else 'rows'} affected"]
    # returning() gives a trailer whenever it gives a result; unpacking loses that for mypy
    return (result.text(trailer, *lines) if result else "".join(f"# {line}\n" for line in lines))  # type: ignore[arg-type]


def returning(call: Call, cursor: sqlite3.Cursor) -> tuple[CsvResult, str] | tuple[None, None]:
    "The RETURNING rows as CSV, or ``(None, None)``; the statement is finished either way."
    if cursor.description is None:
        cursor.close()
        return None, None
    limits = call.limits
    result, trailer = rows_to_csv(cursor, limits.max_rows, limits.max_result_bytes, limits.max_cell_chars, noun="returned row")
    cursor.close()
    return result, trailer


def check_change_cap(call: Call, tool: str, changed: int) -> None:
    cap = call.limits.max_changed_rows
    if tool == WRITE and changed > cap:
        raise SqlLimitExceeded(
            f"write_query changes or deletes up to {changed} existing rows (REPLACE conflicts and cascades "
            f"included), over the limit of {cap} per call; nothing was changed. Narrow the statement, or use "
            "destructive_query(query, reason), which snapshots the file first"
        )


def forget_dropped_views(conn: sqlite3.Connection, names: list[str | None]) -> None:
    "A dropped view's description goes with it."
    for name in names:
        conn.execute("DELETE FROM sql_views WHERE name = ? COLLATE NOCASE", [name])
