"""The record of the last clean ``verify``, beside the memory file (``memory.db.verified.json``).

It holds the heads of both logs that check saw and the newest checkpoint it
covered, where ``verify --since-checkpoint`` starts next time. Like the head
witness, it only extends: every check compares the file with it, and a clean
check records a new one only if the file still holds the heads of the one
before, so a file rewritten after a clean check never becomes the anchor of the
next (the lock of :mod:`.witness`'s side files keeps writers in turn).
"""

import json
import pathlib
import sqlite3
from typing import Any

from .atomic_files import locked, write_atomically
from .clock import now
from .log_heads import GENESIS_HASH, against, current_heads, file_machine

SUFFIX = ".verified.json"
SEEN_BY = "the last clean check"


def record_path(memory_path: str | pathlib.Path) -> pathlib.Path:
    "Where the record of the last clean check of the memory file at ``memory_path`` lives."
    return pathlib.Path(f"{memory_path}{SUFFIX}")


def read(memory_path: str | pathlib.Path) -> dict[str, Any] | None:
    """
    The record of the last clean check (``{machine, anchor_event, anchor_hash,
    event_id, hash, audit_row, audit_hash, verified_at}``), or None if there is
    none or it cannot be read. Records of older versions name the ledger's head
    ``head_event`` and ``head_hash``.
    """
    try:
        record = json.loads(record_path(memory_path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    if "event_id" not in record and "head_event" in record:
        record["event_id"], record["hash"] = record.get("head_event"), record.get("head_hash")
    return record


def compare(conn: sqlite3.Connection, memory_path: str | pathlib.Path) -> list[dict[str, Any]]:
    """
    The heads the last clean check saw, against the file behind ``conn``:
    ``[{log, row, hash, status, detail}]`` (see :func:`.log_heads.against`); empty without a record.
    """
    record = read(memory_path)
    return against(conn, record, SEEN_BY) if record else []


def anchor(conn: sqlite3.Connection, memory_path: str | pathlib.Path) -> dict[str, Any] | None:
    "The last clean check's record, if it belongs to this file and names a checkpoint to start the next check from."
    record = read(memory_path)
    if record is None or record.get("machine") != file_machine(conn) or not isinstance(record.get("anchor_event"), int):
        return None
    return record


def remember(conn: sqlite3.Connection, memory_path: str | pathlib.Path, head: tuple[int, str]) -> str | None:
    """
    Record a clean check of the file up to event ``head`` (id, hash): the newest
    checkpoint it covered is where the next ``--since-checkpoint`` starts.
    Nothing is recorded if the file no longer holds the heads of the record
    before (a check is clean only if it compared them, but another process may
    have recorded a newer one meanwhile).

    :return: the record's path, or None if nothing was recorded (or the folder cannot take it)
    """
    checkpoint = conn.execute(
        "SELECT id, hash FROM events WHERE kind = 'checkpoint' AND id <= ? ORDER BY id DESC LIMIT 1", [head[0]]
    ).fetchone() or head
    audit = conn.execute("SELECT id, hash FROM sql_audit ORDER BY id DESC LIMIT 1").fetchone() or (0, GENESIS_HASH)
    record = {"machine": file_machine(conn), "anchor_event": checkpoint[0], "anchor_hash": checkpoint[1],
              "event_id": head[0], "hash": head[1], "audit_row": audit[0], "audit_hash": audit[1], "verified_at": now()}
    return save_if_extending(conn, memory_path, record)


def reanchor(conn: sqlite3.Connection, memory_path: str | pathlib.Path, acknowledgement: dict[str, Any]) -> None:
    """
    After a person acknowledged a divergence (the ledger's event ``acknowledgement``):
    the file as it is now is the one later checks compare with. The record names
    no checkpoint, so the next ``--since-checkpoint`` check is a full one.
    """
    record = {"machine": file_machine(conn), **current_heads(conn), "acknowledged_by_event": acknowledgement["id"],
              "verified_at": None}
    with locked(lock_path(memory_path)):
        write_atomically(record_path(memory_path), json.dumps(record))


def save_if_extending(conn: sqlite3.Connection, memory_path: str | pathlib.Path, record: dict[str, Any]) -> str | None:
    "Write ``record`` if the file still holds what the record before it saw; its path, or None."
    try:
        with locked(lock_path(memory_path)):
            if any(outcome["status"] != "agrees" for outcome in compare(conn, memory_path)):
                return None
            write_atomically(record_path(memory_path), json.dumps(record))
    except OSError:
        return None
    return str(record_path(memory_path))


def lock_path(memory_path: str | pathlib.Path) -> str:
    "The lock the writers of a memory file's side files (this record, the head witness) take turns through."
    return f"{memory_path}.side-files.lock"
