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
the witness's back; that head stays where it was and the divergence is
recorded, which stays in the witness (never overwritten or dropped) and makes
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

Each process keeps the witness as its own commits extended it (written or
not yet), so a commit is compared with the newest heads the process knows of.
The writer thread writes it only over the witness it grew from; if another
process (or ``verify``, or a person's acknowledgement) wrote the side file
meanwhile, it keeps that one's heads, adds its own divergences, and the next
commit compares with the merged witness. Writers of one file in several
processes take turns through an advisory lock on ``memory.db.side-files.lock``,
so none overwrites what another recorded.
"""

import atexit
import contextlib
import json
import pathlib
import sqlite3
import threading
import time
from typing import Any

from . import last_check
from .atomic_files import locked, write_atomically
from .clock import now
from .log_heads import LOGS, against, as_problem, current_heads, file_machine

SUFFIX = ".head.json"
FORMAT = 2  # 1: heads only; 2: heads and divergences
SEEN_BY = "the witness"
ACKNOWLEDGE_KIND = "acknowledge_divergence"  # the ledger event of a person's acknowledgement


# Connections (by id) that appended to a log in their open transaction: the
# newest row each appended ({heads}), and the file's machine id if it appended an event
_appended: dict[int, tuple[dict[str, Any], str | None]] = {}
# By file path: the witness as this process's commits extended it, written or not; the side file's
# witness it grew from (as this process last read or wrote it); and the files it has yet to write
_projected: dict[str, dict[str, Any]] = {}
_grown_from: dict[str, dict[str, Any] | None] = {}
_unwritten: set[str] = set()
_changed = threading.Condition()
_writing = 0
_writer: threading.Thread | None = None
# the writer's pause between two writes, so a stream of small commits shares
# one write per pause instead of one each
PAUSE_SECONDS = 0.01


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
    After ``conn`` committed: compare the file with the newest witness this
    process knows of (a few indexed lookups on ``conn``), extend it with the heads
    ``conn`` appended or record what no longer agrees, and leave it to the writer
    thread, which writes it in the background (a burst of commits costs one
    write); :func:`flush` waits for it. Audit rows alone move a witness on but do
    not start one: a file's witness starts with its first event.
    """
    appended_heads = _appended.pop(id(conn), None)
    if appended_heads is None:
        return
    path = database_path(conn)
    if not path:
        return
    heads, machine = appended_heads
    global _writer
    with _changed:
        try:
            extended = project(conn, path, heads, machine)
        except sqlite3.Error:
            return  # the write stands; the witness catches up with a later one
        if extended is None:
            return
        _projected[path] = extended
        _unwritten.add(path)
        if _writer is None or not _writer.is_alive():
            _writer = threading.Thread(target=write_pending, name="datasette-memory witness", daemon=True)
            _writer.start()
        _changed.notify_all()


def project(conn: sqlite3.Connection, path: str, heads: dict[str, Any], machine: str | None) -> dict[str, Any] | None:
    """
    The witness of ``path`` extended with ``heads`` just committed on ``conn``:
    the one this process projected, else the side file's. Without either, a
    witness starts (only with an event) after comparing the file with the last
    clean check's record. None if there is nothing to start.
    """
    if path not in _projected:
        on_file = _grown_from[path] = read(path)
        if on_file is not None:
            _projected[path] = on_file
    seen = _projected.get(path)
    if seen is not None:
        return extend(conn, seen, heads, "a write")
    if machine is None:
        return None
    started = {"format": FORMAT, "machine": machine, **newest(heads), "divergences": []}
    for outcome in last_check.compare(conn, path):
        if outcome["status"] != "agrees":
            add_divergence(started, outcome, "a write")
    return started


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


def write_pending() -> None:
    "The writer thread: write each file's projected witness, then pause, for as long as the process runs."
    global _writing
    while True:
        with _changed:
            while not _unwritten:
                _changed.wait()
            path = _unwritten.pop()
            projected, grown_from = _projected[path], _grown_from.get(path)
            _writing += 1
        try:
            written = write(path, projected, grown_from)
        finally:
            with _changed:
                _writing -= 1
                if written is not None:
                    settle(path, projected, written)
                _changed.notify_all()
        time.sleep(PAUSE_SECONDS)


def flush(timeout: float | None = 10.0) -> bool:
    """
    Wait until the witness holds every head this process committed.

    :return: False if ``timeout`` seconds passed first
    """
    with _changed:
        return _changed.wait_for(lambda: not _unwritten and not _writing, timeout)


atexit.register(flush)


def write(path: str, projected: dict[str, Any], grown_from: dict[str, Any] | None) -> dict[str, Any] | None:
    """
    Write ``projected`` as the witness of the file at ``path``, if the side file
    still holds the witness it grew from (or none: one removed meanwhile is
    written again). If another process, ``verify`` or an acknowledgement wrote it
    since, keep what they wrote and add the divergences ``projected`` recorded:
    its heads were checked against another witness. A folder that cannot take the
    side file (read-only, full) loses the witness write, never the committed write.

    :return: the witness the side file holds now, or None if it could not be written
    """
    try:
        with locked(last_check.lock_path(path)):
            current = read(path)
            written = projected if current is None or current == grown_from else with_divergences(current, projected)
            if written != current:
                added = len(written["divergences"]) != len((current or {}).get("divergences", []))
                save(path, written, durable=added)
            return written
    except OSError:
        return None


def settle(path: str, projected: dict[str, Any], written: dict[str, Any]) -> None:
    """
    After the writer wrote ``written`` for ``projected``: commits since extended a
    projection that grew from what is now written, unless another writer's witness
    was merged in, whose heads they were never compared with: then only their
    divergences carry over, and the next commit compares with the merged witness.
    """
    _grown_from[path] = written
    newer = _projected.get(path)
    if written is projected or newer is None:  # None: an acknowledgement since; the next commit reads the side file
        return
    _projected[path] = written if newer is projected else with_divergences(written, newer)
    if _projected[path] != written:
        _unwritten.add(path)


def with_divergences(witness: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    "``witness`` with each divergence ``other`` recorded that it does not hold (by the head it names)."
    merged = {**witness, "format": FORMAT, "divergences": list(witness.get("divergences", []))}
    held = {divergence_key(d) for d in merged["divergences"]}
    merged["divergences"] += [d for d in other.get("divergences", []) if divergence_key(d) not in held]
    return merged


def divergence_key(divergence: dict[str, Any]) -> tuple[Any, Any, Any]:
    "What a divergence is of: the log, and the row and hash a record saw there."
    return divergence.get("log"), divergence.get("row"), divergence.get("hash")


def extend(conn: sqlite3.Connection, seen: dict[str, Any], heads: dict[str, Any], noticed_by: str) -> dict[str, Any]:
    """
    ``seen`` (a witness) with each log's head moved on to ``heads`` where the
    head ``seen`` holds is still in the file behind ``conn``; where it is not, the
    head stays and the divergence is added (once). A log ``seen`` holds no head of
    takes ``heads``' own.

    :param heads: the newest heads a writer appended (``event_id``, ``hash``, ``audit_row``, ``audit_hash``)
    :param noticed_by: what found a divergence, as the record names it
    """
    extended = {**seen, "format": FORMAT, "divergences": list(seen["divergences"])}
    agreeing = set()
    for outcome in against(conn, seen, SEEN_BY):
        if outcome["status"] == "agrees":
            agreeing.add(outcome["log"])
        else:
            add_divergence(extended, outcome, noticed_by)
    for log, (id_key, hash_key, _) in LOGS.items():
        committed_id = heads.get(id_key)
        fresh = not isinstance(seen.get(id_key), int)
        if isinstance(committed_id, int) and (fresh or (log in agreeing and committed_id >= seen[id_key])):
            extended[id_key], extended[hash_key] = committed_id, heads[hash_key]
    return extended


def add_divergence(witness: dict[str, Any], outcome: dict[str, Any], noticed_by: str) -> bool:
    """
    Record ``outcome`` (of :func:`.log_heads.against`: a log that no longer holds
    what a record saw) in ``witness``, unless a record of the same head is there
    already: not yet acknowledged, or acknowledged (a comparison made before the
    acknowledgement, reaching the writer after it, names a head the witness no
    longer holds).

    :return: whether it was added
    """
    if any(isinstance(d, dict) and divergence_key(d) == divergence_key(outcome) for d in witness["divergences"]):
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
    with _changed:  # this process's next commit starts from the witness as acknowledged, which replaces any write queued
        _projected.pop(str(memory_path), None)
        _unwritten.discard(str(memory_path))
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
