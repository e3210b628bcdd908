"""The head witness: the heads of the ledger and of the SQL audit log, recorded outside the memory file.

After every commit that appended events or SQL audit rows, both heads (the
newest event's id and hash, the newest audit row's id and hash) are written to
a small side file beside the memory file (``memory.db`` →
``memory.db.head.json``), atomically (a temporary file renamed over it), by a
background thread a moment after the commit returns (at most one write per
file every 10 ms, so a stream of small commits shares writes; :func:`flush`
waits for it, and runs at exit).
Someone who rewrites the database file alone, say deleting the newest events
or audit rows with the triggers dropped, cannot rewind the witness with it;
``verify`` then reports a log shorter than, or diverging from, what the witness
saw. (A hash chain alone cannot: what is left of it still verifies.)

The witness protects against a writer of the database file who does not also
rewrite the side file. It does not protect against someone who rewrites both,
and a witness lost or left behind by a crash (it is written after the commit,
without fsync) only makes ``verify`` report less, never a false break: a
witness behind the head is normal.
"""

import atexit
import contextlib
import json
import os
import pathlib
import sqlite3
import threading
import time
from typing import Any

GENESIS_HASH = "0" * 64  # as the ledger's (which imports this module)

SUFFIX = ".head.json"
FORMAT = 1

# Connections (by id) that appended to a log in their open transaction: the
# newest row each appended ({heads}), and the file's machine id if it appended an event
_appended: dict[int, tuple[dict[str, Any], str | None]] = {}
# Heads waiting for the writer thread: file path -> (heads, machine or None)
_pending: dict[str, tuple[dict[str, Any], str | None]] = {}
_pending_changed = threading.Condition()
_writing = 0
_writer: threading.Thread | None = None
# the writer's pause between two writes, so a stream of small commits shares
# one write per pause instead of one each
PAUSE_SECONDS = 0.01
# log table -> (the witness's keys for its head id and hash, what a row is called)
LOGS = {"events": ("event_id", "hash", "event"), "sql_audit": ("audit_row", "audit_hash", "row")}


def appended(conn: sqlite3.Connection, log: str, row_id: int, row_hash: str, machine: str | None = None) -> None:
    """
    Note that ``conn`` appended row ``row_id`` (hash ``row_hash``) to ``log``
    (``events`` or ``sql_audit``) in its open transaction.

    :param machine: the file's machine id (an event carries it)
    """
    heads, known = _appended.get(id(conn), ({}, None))
    id_key, hash_key, _ = LOGS[log]
    heads.update({id_key: row_id, hash_key: row_hash})
    _appended[id(conn)] = (heads, machine or known)


def committed(conn: sqlite3.Connection) -> None:
    """
    After ``conn`` committed: hand the heads it appended to the writer thread,
    which writes them to the witness in the background (the newest heads of each
    file, so a burst of commits costs one write); :func:`flush` waits for it.
    Audit rows alone move a witness on but do not start one: a file's witness
    starts with its first event.
    """
    appended_heads = _appended.pop(id(conn), None)
    if appended_heads is None:
        return
    path = database_path(conn)
    if not path:
        return
    heads, machine = appended_heads
    global _writer
    with _pending_changed:
        waiting_heads, waiting_machine = _pending.get(path, ({}, None))
        _pending[path] = (newest(waiting_heads, heads), machine or waiting_machine)
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=write_pending, name="datasette-memory witness", daemon=True)
            _writer.start()
        _pending_changed.notify_all()


def newest(*all_heads: dict[str, Any]) -> dict[str, Any]:
    "For each log, the newest head among ``all_heads`` (each a witness or part of one)."
    merged: dict[str, Any] = {}
    for heads in all_heads:
        for id_key, hash_key, _ in LOGS.values():
            if isinstance(heads.get(id_key), int) and heads[id_key] >= merged.get(id_key, -1):
                merged[id_key], merged[hash_key] = heads[id_key], heads.get(hash_key)
    return merged


def rolled_back(conn: sqlite3.Connection) -> None:
    "After ``conn`` rolled back: nothing it appended stands."
    _appended.pop(id(conn), None)


def witness_path(memory_path: str | pathlib.Path) -> pathlib.Path:
    "Where the witness of the memory file at ``memory_path`` lives."
    return pathlib.Path(f"{memory_path}{SUFFIX}")


def database_path(conn: sqlite3.Connection) -> str:
    "The file behind ``conn``'s main database; empty for an in-memory one."
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return file or ""
    return ""


def read(memory_path: str | pathlib.Path) -> dict[str, Any] | None:
    "The witness of the memory file at ``memory_path``, or None if there is none (or it is unreadable)."
    try:
        witness = json.loads(witness_path(memory_path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(witness, dict) or not isinstance(witness.get("event_id"), int) or not isinstance(witness.get("hash"), str):
        return None
    if not isinstance(witness.get("audit_row", 0), int) or not isinstance(witness.get("audit_hash", ""), str):
        return None
    return witness


def write_pending() -> None:
    "The writer thread: write each file's newest heads, then pause, for as long as the process runs."
    global _writing
    while True:
        with _pending_changed:
            while not _pending:
                _pending_changed.wait()
            path, (heads, machine) = _pending.popitem()
            _writing += 1
        try:
            write(path, heads, machine)
        finally:
            with _pending_changed:
                _writing -= 1
                _pending_changed.notify_all()
        time.sleep(PAUSE_SECONDS)


def flush(timeout: float | None = 10.0) -> bool:
    """
    Wait until every head handed to the writer thread is written.

    :return: False if ``timeout`` seconds passed first
    """
    with _pending_changed:
        return _pending_changed.wait_for(lambda: not _pending and not _writing, timeout)


def write(path: str, heads: dict[str, Any], machine: str | None) -> None:
    """
    Merge ``heads`` into the witness of the file at ``path`` and write it
    atomically (a temporary file renamed over it): each log keeps the newer
    head (another process may have written a newer one meanwhile). Without a
    witness yet, only an event's heads (which carry the machine id) start one.
    """
    seen = read(path)
    if seen is None and machine is None:
        return
    merged = newest(seen or {}, heads)
    if seen is not None and all(merged.get(key) == seen.get(key) for key in merged):
        return
    target = witness_path(path)
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps({"format": FORMAT, "machine": (seen or {}).get("machine", machine), **merged}))
        os.replace(temporary, target)
    except OSError:
        # A folder that cannot take the side file (read-only, full) loses the
        # witness, not the write: verify then reports a witness behind the head
        with contextlib.suppress(OSError):  # a read-only file system refuses the unlink too
            temporary.unlink(missing_ok=True)


atexit.register(flush)


def check(conn: sqlite3.Connection, memory_path: str | pathlib.Path) -> dict[str, Any]:
    """
    Compare the ledger and the SQL audit log with their witness.

    :return: ``{status, ok, detail, problems}``; status is ``agrees``, ``no witness``,
        ``shorter`` (a log lost entries the witness saw), ``diverges`` (the entry
        the witness saw has another hash) or ``other file`` (the witness belongs
        to another memory file); each problem ``{table, row, expected, found}``
    """
    seen = read(memory_path)
    if seen is None:
        return {"status": "no witness", "ok": True, "problems": [],
                "detail": f"no head witness beside the file ({witness_path(memory_path).name})"}
    machine = conn.execute("SELECT value FROM memory_meta WHERE key = 'machine_id'").fetchone()[0]
    if seen.get("machine") != machine:
        detail = f"the head witness belongs to another memory file (machine {seen.get('machine')}, this file is {machine})"
        return {"status": "other file", "ok": False, "detail": detail,
                "problems": [{"table": "events", "row": None, "expected": "the head the witness saw", "found": f"other file: {detail}"}]}
    outcomes = [log_against_witness(conn, table, seen) for table in LOGS if LOGS[table][0] in seen]
    broken = [outcome for outcome in outcomes if outcome["status"] != "agrees"]
    if not broken:
        return {"status": "agrees", "ok": True, "problems": [], "detail": "; ".join(o["detail"] for o in outcomes)}
    return {"status": broken[0]["status"], "ok": False, "detail": "; ".join(o["detail"] for o in broken),
            "problems": [o["problem"] for o in broken]}


def log_against_witness(conn: sqlite3.Connection, table: str, seen: dict[str, Any]) -> dict[str, Any]:
    "One log (``events`` or ``sql_audit``) against the head its witness saw: ``{status, detail, problem}``."
    id_key, hash_key, noun = LOGS[table]
    name = "the ledger" if table == "events" else "the SQL audit log"
    seen_id, seen_hash = seen[id_key], seen.get(hash_key, GENESIS_HASH)
    head = conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
    if head < seen_id:
        status, detail = "shorter", (f"{name} ends at {noun} {head}, but its witness saw {noun} {seen_id}: "
                                     f"{noun}s were removed from the end of {name}")
    else:
        row = conn.execute(f"SELECT hash FROM {table} WHERE id = ?", [seen_id]).fetchone() or ((GENESIS_HASH,) if seen_id == 0 else None)
        if row is None or row[0] != seen_hash:
            status, detail = "diverges", (f"{noun} {seen_id} of {name} is not the one the witness saw "
                                          f"(hash {seen_hash[:12]}): {name} was rewritten")
        else:
            return {"status": "agrees", "detail": f"{name} contains the head its witness saw ({noun} {seen_id})"}
    return {"status": status, "detail": detail,
            "problem": {"table": table, "row": seen_id or None, "expected": f"the {noun} the witness saw (hash {seen_hash[:12]})",
                        "found": f"{status}: {detail}"}}
