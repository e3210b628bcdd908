"""The heads of memory's two append-only logs, and whether a log still holds a head recorded before.

The ledger (``events``) and the SQL audit log (``sql_audit``) are hash chains.
Records kept outside the file (the head witness, the last clean check) hold a
head of each, a row id and its hash; the file still holds what they saw if that
row is there with that hash. One indexed lookup per log.
"""

import sqlite3
from typing import Any

GENESIS_HASH = "0" * 64  # the hash before a log's first row

# log table -> (the keys of its head's id and hash in a record, what a row is called)
LOGS = {"events": ("event_id", "hash", "event"), "sql_audit": ("audit_row", "audit_hash", "row")}
LOG_NAMES = {"events": "the ledger", "sql_audit": "the SQL audit log"}


def file_machine(conn: sqlite3.Connection) -> str:
    "The machine id of the memory file behind ``conn``, made when the file was created."
    return str(conn.execute("SELECT value FROM memory_meta WHERE key = 'machine_id'").fetchone()[0])


def current_heads(conn: sqlite3.Connection) -> dict[str, Any]:
    "The head of each log in the file behind ``conn``: ``{event_id, hash, audit_row, audit_hash}``."
    heads: dict[str, Any] = {}
    for log, (id_key, hash_key, _) in LOGS.items():
        row = conn.execute(f"SELECT id, hash FROM {log} ORDER BY id DESC LIMIT 1").fetchone() or (0, GENESIS_HASH)
        heads[id_key], heads[hash_key] = row
    return heads


def log_against(
    conn: sqlite3.Connection, log: str, row: int, row_hash: str, seen_by: str, found: tuple[str | None] | None = None
) -> dict[str, str]:
    """
    Whether ``log`` still holds row ``row`` with hash ``row_hash``, as ``seen_by`` saw it.

    :param seen_by: who recorded the head, for the detail: ``its witness``, ``the last clean check``
    :param found: the hash row ``row`` holds, as ``(hash,)`` (``(None,)`` if there is no such row), when already looked up
    :return: ``{status, detail}``; status ``agrees``, ``shorter`` (the log now ends
        before that row) or ``diverges`` (the row holds another hash, or is missing)
    """
    _, _, noun = LOGS[log]
    name = LOG_NAMES[log]
    if not row:
        found = (GENESIS_HASH,)
    elif found is None:
        found = conn.execute(f"SELECT hash FROM {log} WHERE id = ?", [row]).fetchone() or (None,)
    if found[0] == row_hash:
        return {"status": "agrees", "detail": f"{name} contains the head {seen_by} saw ({noun} {row})"}
    if found[0] is None:
        end = conn.execute(f"SELECT coalesce(max(id), 0) FROM {log}").fetchone()[0]
        if end < row:
            return {"status": "shorter", "detail": f"{name} ends at {noun} {end}, but {seen_by} saw {noun} {row}: "
                                                   f"{noun}s were removed from the end of {name}"}
    return {"status": "diverges", "detail": f"{noun} {row} of {name} is not the one {seen_by} saw "
                                            f"(hash {row_hash[:12]}): {name} was rewritten"}


def against(conn: sqlite3.Connection, record: dict[str, Any], seen_by: str) -> list[dict[str, Any]]:
    """
    Each log ``record`` (the witness, the last clean check) holds a head of,
    against the file behind ``conn``: ``[{log, row, hash, status, detail}]``; a
    record of another file (another machine id) is ``other file`` for each.
    The machine id and each head's row are looked up in one statement (it runs after every commit).
    """
    heads = [(log, record[id_key], str(record.get(hash_key, GENESIS_HASH)))
             for log, (id_key, hash_key, _) in LOGS.items() if isinstance(record.get(id_key), int)]
    lookups = "".join(f", (SELECT hash FROM {log} WHERE id = ?)" for log, _, _ in heads)
    machine, *found = conn.execute(
        f"SELECT (SELECT value FROM memory_meta WHERE key = 'machine_id'){lookups}", [row for _, row, _ in heads]
    ).fetchone()
    machine = file_machine(conn) if machine is None else str(machine)
    outcomes = []
    for (log, row, row_hash), row_found in zip(heads, found):
        outcome: dict[str, Any] = {"log": log, "row": row, "hash": row_hash}
        if record.get("machine") != machine:
            outcome.update(status="other file", detail=(f"{seen_by} belongs to another memory file (machine "
                                                        f"{record.get('machine')}, this file is {machine})"))
        else:
            outcome.update(log_against(conn, log, row, row_hash, seen_by, (row_found,)))
        outcomes.append(outcome)
    return outcomes


def as_problem(outcome: dict[str, Any], seen_by: str) -> dict[str, Any]:
    "An outcome of :func:`against` that is not ``agrees``, as ``verify`` lists differences: ``{table, row, expected, found}``."
    noun = LOGS.get(outcome["log"], ("", "", "row"))[2]
    return {"table": outcome["log"], "row": outcome["row"] or None,
            "expected": f"the {noun} {seen_by} saw (hash {str(outcome['hash'])[:12]})",
            "found": f"{outcome['status']}: {outcome['detail']}"}
