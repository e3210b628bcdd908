"""The head witness: what the ledger and the SQL audit log held, recorded outside the memory file, only ever extended.

After every commit that appended events or SQL audit rows, both heads (the
newest event's id and hash, the newest audit row's id and hash) are handed to a
background thread, which writes them to a small side file beside the memory
file (``memory.db`` → ``memory.db.head.json``) a moment after the commit
returns (at most one write per file every 10 ms, so a stream of small commits
shares writes; :func:`flush` waits for it, and runs at exit).

What the witness records only extends. Right after each such commit, the
committing connection looks the heads the witness holds up in the file (one
indexed lookup per log, on a connection that is already open): the same id
must still hold the same hash. If not, the log was rewound or rewritten behind
the witness's back; the writer thread leaves that head where it was and records
the divergence, which stays in the witness (never overwritten or dropped) and makes
every later check fail until a person acknowledges it with a reason
(:func:`acknowledge`, through Datasette; the ledger records the act). So no
later ordinary write can make a tampered file look clean again.

The witness protects against a writer of the database file who does not also
rewrite the side file. It does not protect against someone who rewrites both
(any process running as the same user can): that needs a copy out of their
reach (the replica). A witness lost or left behind by a crash (head moves are
written without fsync) only makes checks report less, never a false break: a
witness behind the head is normal. Divergences and acknowledgements are written
with fsync.

Writers of one file in several processes take turns through an advisory lock
on ``memory.db.side-files.lock``, so none overwrites what another recorded.
"""

import atexit
import contextlib
import json
import os
import pathlib
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from . import last_check
from .atomic_files import locked, write_atomically
from .clock import now
from .log_heads import LOGS, against, as_problem, current_heads, file_machine

SUFFIX = ".head.json"
FORMAT = 2  # 1: heads only; 2: heads and divergences
SEEN_BY = "the witness"
ACKNOWLEDGE_KIND = "acknowledge_divergence"  # the ledger event of a person's acknowledgement


@dataclass
class Pending:
    """
    What a file's writer thread has to write: the newest heads this process
    committed, and what the newest commit found when it compared the file with
    the witness as it was then (``seen``).

    :param heads: the newest heads committed (``event_id``, ``hash``, ``audit_row``, ``audit_hash``)
    :param machine: the file's machine id, if an event was committed (only an event starts a witness)
    :param seen: the witness the newest commit compared the file with, or None if there was none
    :param outcomes: that comparison (of :func:`.log_heads.against`); with no witness, the last clean check's
    :param broken: every comparison of these commits that did not agree, to record
    """

    heads: dict[str, Any]
    machine: str | None
    seen: dict[str, Any] | None
    outcomes: list[dict[str, Any]]
    broken: list[dict[str, Any]] = field(default_factory=list)


# Connections (by id) that appended to a log in their open transaction: the
# newest row each appended ({heads}), and the file's machine id if it appended an event
_appended: dict[int, tuple[dict[str, Any], str | None]] = {}
# What the writer thread has to write, by file path
_pending: dict[str, Pending] = {}
_pending_changed = threading.Condition()
_writing = 0
_writer: threading.Thread | None = None
# the writer's pause between two writes, so a stream of small commits shares
# one write per pause instead of one each
PAUSE_SECONDS = 0.01
# the witness each file's side file held when last read, by path: ((inode, mtime, size), witness)
_read_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any] | None]] = {}


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
    After ``conn`` committed: compare the file with its witness (a few indexed
    lookups on ``conn``) and hand the heads it appended, with what the comparison
    found, to the writer thread, which writes the witness in the background (the
    newest heads of each file, so a burst of commits costs one write); :func:`flush`
    waits for it. Audit rows alone move a witness on but do not start one: a
    file's witness starts with its first event.
    """
    appended_heads = _appended.pop(id(conn), None)
    if appended_heads is None:
        return
    path = database_path(conn)
    if not path:
        return
    heads, machine = appended_heads
    seen = cached_read(path)
    try:
        outcomes = against(conn, seen, SEEN_BY) if seen else last_check.compare(conn, path)
    except sqlite3.Error:
        return  # the write stands; the witness catches up with a later one
    broken = [outcome for outcome in outcomes if outcome["status"] != "agrees"]
    global _writer
    with _pending_changed:
        waiting = _pending.get(path)
        merged = newest(waiting.heads, heads) if waiting else heads
        _pending[path] = Pending(merged, machine or (waiting.machine if waiting else None), seen, outcomes,
                                 (waiting.broken if waiting else []) + broken)
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=write_pending, name="datasette-memory witness", daemon=True)
            _writer.start()
        _pending_changed.notify_all()


def newest(*all_heads: dict[str, Any]) -> dict[str, Any]:
    "For each log, the newest head among ``all_heads`` (heads this process committed)."
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
    """
    The witness of the memory file at ``memory_path`` (``{format, machine, event_id,
    hash, audit_row, audit_hash, divergences}``), or None if there is none (or it is unreadable).
    """
    try:
        witness = json.loads(witness_path(memory_path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(witness, dict) or not isinstance(witness.get("event_id"), int) or not isinstance(witness.get("hash"), str):
        return None
    if not isinstance(witness.get("audit_row", 0), int) or not isinstance(witness.get("audit_hash", ""), str):
        return None
    if not isinstance(witness.setdefault("divergences", []), list):
        return None
    return witness


def unacknowledged(witness: dict[str, Any] | None) -> list[dict[str, Any]]:
    "The divergences ``witness`` recorded that no person has acknowledged yet."
    return [d for d in (witness or {}).get("divergences", []) if isinstance(d, dict) and not d.get("acknowledged")]


def cached_read(path: str) -> dict[str, Any] | None:
    "The witness of the file at ``path`` (not to be changed), parsed again only when its side file changed (each write replaces it)."
    try:
        stat = os.stat(witness_path(path))
    except OSError:
        return None
    key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    cached = _read_cache.get(path)
    if cached is None or cached[0] != key:
        cached = _read_cache[path] = (key, read(path))
    return cached[1]


def write_pending() -> None:
    "The writer thread: write each file's pending witness, then pause, for as long as the process runs."
    global _writing
    while True:
        with _pending_changed:
            while not _pending:
                _pending_changed.wait()
            path, pending = _pending.popitem()
            _writing += 1
        try:
            write(path, pending)
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


atexit.register(flush)


def write(path: str, pending: Pending) -> None:
    """
    Extend the witness of the file at ``path`` with ``pending``: each log's head
    moves on only if the commit found the head the witness held still in the file;
    what it found otherwise is recorded and the head stays. If the witness changed
    since that comparison (another process wrote it), only the divergences are
    recorded: a later commit compares with the new one. Without a witness yet,
    only an event's heads (which carry the machine id) start one, with what the
    comparison with the last clean check found. A folder that cannot take the
    side file (read-only, full) loses the witness write, never the committed write.
    """
    with contextlib.suppress(OSError), locked(last_check.lock_path(path)):
        current = read(path)
        if current is None and pending.seen is None:
            if pending.machine is not None:
                started = {"format": FORMAT, "machine": pending.machine, **newest(pending.heads), "divergences": []}
                recorded = [add_divergence(started, outcome, "a write") for outcome in pending.broken]
                save(path, started, durable=any(recorded))
            return
        if current is None:
            return  # the witness was removed since the commit looked: the next commit starts one
        extended = {**current, "format": FORMAT, "divergences": list(current["divergences"])}
        recorded = [add_divergence(extended, outcome, "a write") for outcome in pending.broken]
        if same_heads(current, pending.seen):
            move_heads(extended, pending)
        if extended != current:
            save(path, extended, durable=any(recorded))


def same_heads(witness: dict[str, Any], seen: dict[str, Any] | None) -> bool:
    "Whether ``witness`` holds the heads ``seen`` held (the commit compared the file with the witness as it is)."
    keys = [key for id_key, hash_key, _ in LOGS.values() for key in (id_key, hash_key)] + ["machine"]
    return seen is not None and all(witness.get(key) == seen.get(key) for key in keys)


def move_heads(witness: dict[str, Any], pending: Pending) -> None:
    "Move each log's head in ``witness`` on to the committed one, where the commit found the witnessed head in the file."
    agreeing = {outcome["log"] for outcome in pending.outcomes if outcome["status"] == "agrees"}
    for log, (id_key, hash_key, _) in LOGS.items():
        committed_id = pending.heads.get(id_key)
        if not isinstance(committed_id, int):
            continue
        if not isinstance(witness.get(id_key), int) or (log in agreeing and committed_id >= witness[id_key]):
            witness[id_key], witness[hash_key] = committed_id, pending.heads[hash_key]


def add_divergence(witness: dict[str, Any], outcome: dict[str, Any], noticed_by: str) -> bool:
    """
    Record ``outcome`` (of :func:`.log_heads.against`: a log that no longer holds
    what a record saw) in ``witness``, unless a record of the same head is there
    already: not yet acknowledged, or acknowledged (a comparison made before the
    acknowledgement, reaching the writer after it, names a head the witness no
    longer holds).

    :return: whether it was added
    """
    key = (outcome["log"], outcome["row"], outcome["hash"])
    if any(isinstance(d, dict) and (d.get("log"), d.get("row"), d.get("hash")) == key for d in witness["divergences"]):
        return False
    witness["divergences"].append({
        "log": outcome["log"], "row": outcome["row"], "hash": outcome["hash"], "status": outcome["status"],
        "detail": outcome["detail"], "noticed_at": now(), "noticed_by": noticed_by, "acknowledged": None,
    })
    return True


def check(conn: sqlite3.Connection, memory_path: str | pathlib.Path, noticed_by: str | None = None) -> dict[str, Any]:
    """
    Compare the ledger and the SQL audit log with their witness: the heads it
    holds now, and every divergence it recorded that no person acknowledged.

    :param noticed_by: record what is found wrong now in the witness, as found by this
        (so that the evidence outlives the check); None to record nothing
    :return: ``{status, ok, detail, problems, acknowledged}``; status is ``agrees``,
        ``no witness``, ``shorter``, ``diverges``, ``other file`` or ``diverged``
        (a divergence recorded earlier stands); each problem ``{table, row, expected, found}``;
        ``acknowledged`` lists the divergences a person acknowledged
    """
    seen = read(memory_path)
    if seen is None:
        return {"status": "no witness", "ok": True, "problems": [], "acknowledged": [],
                "detail": f"no head witness beside the file ({witness_path(memory_path).name})"}
    outcomes = against(conn, seen, SEEN_BY)
    broken = [outcome for outcome in outcomes if outcome["status"] != "agrees"]
    if broken and noticed_by:
        seen = record(memory_path, conn, broken, noticed_by) or seen
    now_broken = {(o["log"], o["row"], o["hash"]) for o in broken}
    earlier = [d for d in unacknowledged(seen) if (d.get("log"), d.get("row"), d.get("hash")) not in now_broken]
    acknowledged = [d for d in seen["divergences"] if isinstance(d, dict) and d.get("acknowledged")]
    problems = [as_problem(o, SEEN_BY) for o in broken]
    problems += [as_problem({**d, "status": "diverged", "detail": earlier_detail(d)}, SEEN_BY) for d in earlier]
    problems += acknowledgement_problems(conn, acknowledged)
    if not problems:
        detail = "; ".join(o["detail"] for o in outcomes)
        if acknowledged:
            detail += f"; {len(acknowledged)} earlier divergence{'s' if len(acknowledged) != 1 else ''} acknowledged by a person"
        return {"status": "agrees", "ok": True, "problems": [], "detail": detail, "acknowledged": acknowledged}
    details = [o["detail"] for o in broken] + [earlier_detail(d) for d in earlier]
    return {"status": broken[0]["status"] if broken else "diverged", "ok": False, "problems": problems,
            "acknowledged": acknowledged, "detail": "; ".join(details) or "an acknowledgement the witness recorded is not in the ledger"}


def earlier_detail(divergence: dict[str, Any]) -> str:
    "A recorded divergence, for people: what was found, when and by what; it stands until a person acknowledges it."
    return (f"{divergence.get('detail')} (noticed {divergence.get('noticed_at')} by {divergence.get('noticed_by')}; "
            "it stands until a person acknowledges it)")


def acknowledgement_problems(conn: sqlite3.Connection, acknowledged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    "Acknowledgements the witness recorded whose event is not in the ledger as recorded."
    problems = []
    marks = sorted({(d["acknowledged"].get("event_id"), d["acknowledged"].get("hash")) for d in acknowledged}, key=str)
    for event_id, event_hash in marks:
        row = conn.execute("SELECT hash, kind FROM events WHERE id = ?", [event_id]).fetchone()
        if row is None or (row[0], row[1]) != (event_hash, ACKNOWLEDGE_KIND):  # a tuple, or Datasette's sqlite3.Row
            problems.append(as_problem({"log": "events", "row": event_id, "hash": event_hash, "status": "diverges",
                                        "detail": f"the acknowledgement (event {event_id}) the witness recorded is not in the ledger"}, SEEN_BY))
    return problems


def record(memory_path: str | pathlib.Path, conn: sqlite3.Connection, outcomes: list[dict[str, Any]], noticed_by: str) -> dict[str, Any] | None:
    """
    Record each of ``outcomes`` (of :func:`.log_heads.against`: the witness's
    own, or the last clean check's) in the witness of ``memory_path``, starting
    one at the file's heads if there is none.

    :return: the witness as recorded, or None if the folder cannot take it
    """
    try:
        with locked(last_check.lock_path(memory_path)):
            seen = read(memory_path) or {"format": FORMAT, "machine": file_machine(conn), **current_heads(conn), "divergences": []}
            witnessed = {**seen, "divergences": list(seen["divergences"])}
            added = [add_divergence(witnessed, outcome, noticed_by) for outcome in outcomes]
            if any(added) or not witness_path(memory_path).exists():
                save(memory_path, witnessed, durable=True)
            return witnessed
    except OSError:
        return None


def acknowledge(
    memory_path: str | pathlib.Path, conn: sqlite3.Connection, event: dict[str, Any], reason: str, divergences: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """
    After a person's acknowledgement (``event``, of kind :data:`ACKNOWLEDGE_KIND`,
    committed): mark ``divergences`` acknowledged by it (the records stay; one
    recorded meanwhile is not among them and stands), and move the witness's
    heads to the file's heads now.

    :return: the divergences it marked
    :raises OSError: if the witness cannot be written
    """
    with locked(last_check.lock_path(memory_path)):
        seen = read(memory_path) or {"divergences": []}
        marked = {"event_id": event["id"], "hash": event["hash"], "actor": event["actor"], "reason": reason, "at": event["ts"]}
        acknowledged = [d for d in unacknowledged(seen) if d in divergences]
        records = [{**d, "acknowledged": marked} if d in acknowledged else d for d in seen["divergences"]]
        save(memory_path, {**seen, "format": FORMAT, "machine": file_machine(conn), **current_heads(conn),
                           "divergences": records}, durable=True)
    return acknowledged


def save(memory_path: str | pathlib.Path, witness: dict[str, Any], durable: bool) -> None:
    "Write the witness whole or not at all; with fsync when ``durable`` (a divergence or an acknowledgement)."
    write_atomically(witness_path(memory_path), json.dumps(witness, ensure_ascii=False), sync=durable)


def remove_leftovers(memory_path: str | pathlib.Path) -> list[str]:
    """
    Remove the temporary copies of the side files (the witness, the last clean
    check's record) that a process killed part way through writing one left
    behind; the lock keeps a live writer's out of reach.

    :return: the names removed
    """
    memory_path = pathlib.Path(memory_path)
    prefixes = tuple(f"{memory_path.name}{suffix}." for suffix in (SUFFIX, last_check.SUFFIX))
    removed = []
    with contextlib.suppress(OSError), locked(last_check.lock_path(memory_path)):
        for leftover in memory_path.parent.iterdir():
            if leftover.name.endswith(".tmp") and leftover.name.lstrip(".").startswith(prefixes):
                leftover.unlink(missing_ok=True)
                removed.append(leftover.name)
    return removed
