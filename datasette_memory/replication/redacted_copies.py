"""Redacted text in older copies: the file's snapshots and its Litestream replica, checked without the text in hand.

A redaction (:mod:`..history.redaction`) rewrites the memory file, but copies
made before it still hold the text: the snapshots beside the file, the
replica's history (every LTX file Litestream uploaded before the redaction
reached it) and Litestream's local state beside the file
(``.<name>-litestream``), which keeps the same files. A ``redact`` event keys
each string that held the text by its sha256, so a copy is checked exactly,
long after the secret is gone from every hand: a copy holds a redacted text
when one of the project's strings (an observation, a string inside an event's
old or new value, this machine's or a peer's) has one of those digests, or
turns into such a string through earlier redactions' maps.

The replica is checked with Litestream itself. The ledger only grows, so the
copies restored at the replica's restore points hold the redaction from one
point on: the earliest is found by a binary search, and the files before it
are the replica's history from before the redaction; the copy just before it
is restored and checked by digest.

Litestream 0.5 can delete nothing from a replica on request, and a replica
emptied under it is refilled from its local state (which holds the old files).
So deleting a replica's history is done with replication stopped, in three
steps: the replica's files are removed (a folder's ``ltx`` tree; a bucket's
objects are removed by the person, as no command here holds the rights to),
Litestream's local state is reset (``litestream reset``), and one short
replication uploads the file as it is now, a fresh snapshot the replica
restores from. Its copies as of earlier moments go with it.
"""

import json
import os
import pathlib
import shutil
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core import redacted
from ..history.file_check import verify_file
from ..history.redaction import RECORDS
from .litestream import Litestream, private_folder, write_config
from .replica_copies import Copy, Replica
from .replica_target import ReplicaTarget, ReplicationError
from .replicator import Replication, take_lock

STATE_SUFFIX = "-litestream"  # Litestream's local state beside the file: .<name>-litestream


@dataclass(frozen=True)
class Redaction:
    """
    A ``redact`` event this file holds: its own (``event N``) or a peer's (``MACHINE#CLOCK``).

    :param key: how people name it: ``event 7``, or the peer's machine (12 characters) and clock
    :param event_id: its id in this file's ledger (None for a peer's)
    :param machine: the machine that made it
    :param clock: its clock there
    :param ts: when it was made
    :param actor: the person who made it
    :param project: the project it redacted from
    :param target: what the person redacted from (an entity's name, or ``event N``)
    :param reason: why
    :param replacements: ``{sha256 of a string that held the text: the string put in its place}``
    :param received_at: when it arrived here (a peer's only)
    """

    key: str
    event_id: int | None
    machine: str
    clock: int
    ts: str | None
    actor: str | None
    project: str
    target: str | None
    reason: str | None
    replacements: Mapping[str, str]
    received_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"redaction": self.key, "own": self.event_id is not None, "event": self.event_id, "machine": self.machine,
                "clock": self.clock, "ts": self.ts, "actor": self.actor, "project": self.project, "target": self.target,
                "reason": self.reason, "texts": len(self.replacements), "received_at": self.received_at}


def redactions(conn: sqlite3.Connection) -> list[Redaction]:
    "Every redaction the file holds, its own first (by id), then its peers' (by arrival)."
    found = []
    for id, machine, clock, ts, actor, project, target, new in conn.execute(
        "SELECT id, machine, clock, ts, actor, project, target, new FROM events WHERE kind = 'redact' ORDER BY id"
    ):
        found.append(Redaction(f"event {id}", id, machine, clock, ts, actor, project, target, reason_of(new),
                               redacted.replacements_of(new)))
    for machine, clock, ts, actor, project, target, new, received_at in conn.execute(
        "SELECT machine, clock, ts, actor, project, target, new, received_at FROM memory_sync_events "
        "WHERE kind = 'redact' AND opaque = 0 ORDER BY received_at, machine, clock"
    ):
        found.append(Redaction(f"{machine[:12]}#{clock}", None, machine, clock, ts, actor, project, target, reason_of(new),
                               redacted.replacements_of(new), received_at))
    return found


def reason_of(value: str | None) -> str | None:
    "The reason a ``redact`` event's value gives."
    reason = redacted.decoded_value(value).get("reason")
    return reason if isinstance(reason, str) else None


# checking a copy by digest


def project_strings(conn: sqlite3.Connection, project: str) -> Iterable[str]:
    """
    Every string ``project`` keeps where a redaction reaches: its observations, the governed tier's
    records, and the strings inside its events' old and new values (its own and its peers').
    """
    for (content,) in conn.execute(
        "SELECT o.content FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.project = ?", [project]
    ):
        if isinstance(content, str):
            yield content
    for table, (columns, rows) in RECORDS.items():
        for values in conn.execute(f"SELECT {', '.join(columns)} FROM {table} WHERE {rows}", {"project": project}):
            yield from (value for value in values if isinstance(value, str))
    for table, whole in (("events", ""), ("memory_sync_events", " AND opaque = 0")):
        for old, new in conn.execute(
            f"SELECT old, new FROM {table} WHERE project = ? AND kind != 'redact'{whole} AND (old IS NOT NULL OR new IS NOT NULL)",
            [project],
        ):
            for value in (old, new):
                yield from json_strings(value)


def json_strings(value: Any) -> Iterable[str]:
    "The strings inside a stored JSON value (none for a value that is not JSON)."
    if not isinstance(value, str):
        return
    try:
        decoded = json.loads(value)
    except ValueError:
        return
    yield from redacted.strings(decoded)


def texts_held(conn: sqlite3.Connection, wanted: list[Redaction], known: list[Redaction]) -> dict[str, int]:
    """
    How many strings of the file behind ``conn`` hold a text each redaction in ``wanted`` removed: ``{key: count}``.

    :param known: every redaction the file holds now (a string that later redactions changed in turn is
        followed through their maps, so a copy from before an earlier redaction is found too)
    """
    later = {digest: text for redaction in known for digest, text in redaction.replacements.items()}
    counts = {redaction.key: 0 for redaction in wanted}
    for project in {redaction.project for redaction in wanted}:
        mine = [redaction for redaction in wanted if redaction.project == project]
        for text in project_strings(conn, project):
            for key in matching(text, mine, later):
                counts[key] += 1
    return counts


def matching(text: str, wanted: list[Redaction], later: Mapping[str, str]) -> set[str]:
    "The redactions of ``wanted`` whose map names ``text``, or what earlier redactions turned it into."
    found: set[str] = set()
    for _ in range(redacted.MAX_STEPS):
        digest = redacted.text_digest(text)
        found.update(redaction.key for redaction in wanted if digest in redaction.replacements)
        if digest not in later:
            break
        text = later[digest]
    return found


def check_file(path: pathlib.Path, wanted: list[Redaction], known: list[Redaction]) -> dict[str, Any]:
    """
    A copy of the memory file (a snapshot, a restored copy) checked read-only by digest.

    :return: ``{held: {key: count}}``, or ``{error}`` for a file SQLite cannot read as a memory file
    """
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as e:
        return {"error": f"cannot be opened ({e})"}
    try:
        return {"held": texts_held(conn, wanted, known)}
    except sqlite3.DatabaseError as e:
        return {"error": f"cannot be read as a memory file ({e})"}
    finally:
        conn.close()


# the file's snapshots


def snapshots_holding(snapshots: list[pathlib.Path], found: list[Redaction]) -> list[dict[str, Any]]:
    """
    Each snapshot, checked by digest for every redaction: ``[{path, bytes, held: {key: count}, holds}]``
    (``error`` instead of ``held`` for one that cannot be read; such a snapshot counts as holding, to be safe).
    """
    checked = []
    for path in snapshots:
        result = check_file(path, found, found)
        holds = bool(result.get("error")) or any(result["held"].values())
        checked.append({"path": str(path), "bytes": path.stat().st_size, **result, "holds": holds, "deleted": False})
    return checked


def delete_snapshots(checked: list[dict[str, Any]]) -> None:
    "Delete the snapshots that hold a redacted text (or cannot be read), marking them deleted."
    for snapshot in checked:
        if snapshot["holds"]:
            pathlib.Path(snapshot["path"]).unlink(missing_ok=True)
            snapshot["deleted"] = True


# the replica


def holds_redaction(copy: Copy, redaction: Redaction) -> bool:
    "Whether the restored ``copy`` holds the ``redact`` event itself (its own ledger's, or a peer's as received)."
    conn = sqlite3.connect(f"file:{copy.path}?mode=ro", uri=True, isolation_level=None)
    try:
        if redaction.event_id is not None:
            row = conn.execute("SELECT 1 FROM events WHERE id = ? AND kind = 'redact'", [redaction.event_id]).fetchone()
        else:
            row = conn.execute("SELECT 1 FROM memory_sync_events WHERE machine = ? AND clock = ? AND kind = 'redact'",
                               [redaction.machine, redaction.clock]).fetchone()
        return row is not None
    finally:
        conn.close()


class ReplicaHistory:
    """
    A replica's restore points, each restored at most once, and the redactions' places among them.

    :param replica: the replica, read through Litestream
    """

    def __init__(self, replica: Replica):
        self.replica = replica
        self.files = replica.files()
        self.points = sorted({str(f["max_txid"]) for f in self.files if f.get("max_txid")})
        self.damaged: dict[str, str] = {}  # restore point: why its copy cannot be read
        self.unrestorable: set[str] = set()  # restore points compacted away (no longer restorable on their own)

    def restore(self, point: str) -> Copy | None:
        "The copy at ``point``, or None if Litestream cannot restore it or it cannot be read (then noted in :attr:`damaged`)."
        try:
            copy = self.replica.restore(txid=point)
        except ReplicationError as e:
            if "no matching backup files" in str(e):
                self.unrestorable.add(point)
            else:
                self.damaged[point] = str(e)
            return None
        try:
            sqlite3.connect(f"file:{copy.path}?mode=ro", uri=True).execute("PRAGMA quick_check").fetchall()
        except sqlite3.DatabaseError as e:
            self.damaged[point] = f"its copy cannot be read ({e})"
            copy.path.unlink(missing_ok=True)
            return None
        return copy

    def arrival(self, test: Callable[[Copy], bool]) -> str | None:
        "The earliest restore point whose copy passes ``test`` (which the ledger keeps true from then on), or None."
        points = [point for point in self.points if point not in self.damaged and point not in self.unrestorable]
        found = None
        low, high = 0, len(points) - 1
        while low <= high:
            middle = (low + high) // 2
            copy = self.restore(points[middle])
            if copy is None:
                del points[middle]
                high -= 1
                continue
            passed = test(copy)
            copy.path.unlink(missing_ok=True)
            if passed:
                found, high = points[middle], middle - 1
            else:
                low = middle + 1
        return found

    def before(self, point: str | None) -> list[dict[str, Any]]:
        "The LTX files made before restore point ``point`` (all of them if the redaction has not reached the replica)."
        return sorted((f for f in self.files if point is None or str(f["max_txid"]) < point),
                      key=lambda f: (str(f["max_txid"]), f["level"]))

    def earlier(self, point: str | None) -> list[str]:
        "The restore points before ``point`` (all if None), newest first."
        return [p for p in reversed(self.points) if point is None or p < point]


def replica_holding(history: ReplicaHistory, redaction: Redaction, known: list[Redaction]) -> dict[str, Any]:
    """
    Where ``redaction`` reached the replica, and whether the replica's history from before it holds a text it removed.

    :return: ``{reached, files, checked_at, held, holds}``: ``reached`` is the restore point of the
        first copy holding the redaction (None if none does yet), ``files`` the LTX files before it,
        ``held`` how many strings the newest copy before it holds (by digest, restored with Litestream)
    """
    reached = history.arrival(lambda copy: holds_redaction(copy, redaction))
    files = history.before(reached)
    checked_at, held, error = None, 0, None
    for point in history.earlier(reached) if files else []:
        copy = history.restore(point)
        if copy is None:
            continue  # not restorable (or damaged, noted): the next older point is tried
        result = check_file(copy.path, [redaction], known)
        copy.path.unlink(missing_ok=True)
        checked_at, held, error = point, result.get("held", {}).get(redaction.key, 0), result.get("error")
        break
    return {"reached": reached, "files": [describe_file(f) for f in files], "checked_at": checked_at, "held": held,
            "error": error, "holds": bool(held) or bool(error)}


def describe_file(info: dict[str, Any]) -> dict[str, Any]:
    return {"level": info.get("level"), "min_txid": str(info.get("min_txid")), "max_txid": str(info.get("max_txid")),
            "timestamp": info.get("timestamp"), "size": info.get("size")}


def local_state(memory_path: pathlib.Path) -> dict[str, Any]:
    "Litestream's local state beside the file: ``{path, files, bytes}`` (no files if there is none)."
    folder = memory_path.parent / f".{memory_path.name}{STATE_SUFFIX}"
    files = [f for f in folder.rglob("*.ltx") if f.is_file()] if folder.is_dir() else []
    return {"path": str(folder), "files": len(files), "bytes": sum(f.stat().st_size for f in files)}


# deleting the replica's history


def start_anew(litestream: Litestream, target: ReplicaTarget, memory_path: pathlib.Path,
               say: Callable[[str], None]) -> dict[str, Any]:
    """
    Remove the replica's history and start it anew from the file as it is: the replica's files
    removed (a folder's; a bucket must already be empty), Litestream's local state reset, and the
    file uploaded by one short replication. Replication must be stopped.

    :return: ``{removed, reset, replica_event}``
    :raises ReplicationError: if a replication of the file runs, the file does not verify, or a bucket
        still holds files (naming what to delete and how)
    """
    report = verify_file(memory_path, since_checkpoint=True)
    if not report["ok"]:
        raise ReplicationError(f"{memory_path} does not verify; the replica starts anew only from a file that verifies: "
                               "run `datasette-memory verify` for the whole report; nothing was deleted")
    lock = take_lock(memory_path)  # refuses while a replication of the file runs
    try:
        with private_folder() as folder:
            remaining = Replica(litestream, target, folder).files()
        if remaining and target.scheme != "file":
            raise ReplicationError(bucket_refusal(target, len(remaining)))
        reset_local_state(litestream, target, memory_path)  # first: a replica emptied under old local state is refilled from it
        removed = remove_replica_files(target, remaining)
    finally:
        os.close(lock)
    try:
        replication = Replication(litestream, target, memory_path, say, report_every=3600)
        replication.start()
        state = replication.stop()
    except ReplicationError as e:
        raise ReplicationError(f"the replica's old files were removed, but the file could not be uploaded ({e}); "
                               "run `datasette-memory replicate` to upload it")
    return {"removed": removed, "reset": True, "replica_event": state["replica_event"]}


def reset_local_state(litestream: Litestream, target: ReplicaTarget, memory_path: pathlib.Path) -> None:
    "Remove Litestream's local LTX files for the file (``litestream reset``), so its next replication starts with a fresh snapshot."
    with private_folder() as folder:
        config = write_config(folder, str(memory_path), target)
        litestream.run(["reset", "-config", str(config), "-no-expand-env", str(memory_path)],
                       "reset Litestream's local state for the file replicated to", target, timeout=60)


def remove_replica_files(target: ReplicaTarget, remaining: list[dict[str, Any]]) -> int:
    """
    Remove the replica's LTX files: a folder's ``ltx`` tree. A bucket is emptied by the person.

    :return: how many files were removed
    :raises ReplicationError: for a bucket that still holds files, naming what to delete and how
    """
    if not remaining:
        return 0
    if target.scheme != "file":
        raise ReplicationError(bucket_refusal(target, len(remaining)))
    tree = pathlib.Path(target.path) / "ltx"
    if not tree.is_dir():
        return 0
    count = sum(1 for f in tree.rglob("*") if f.is_file())
    shutil.rmtree(tree)
    return count


def bucket_refusal(target: ReplicaTarget, files: int) -> str:
    "What to do when a bucket replica's history must go: Litestream 0.5 deletes nothing on request."
    endpoint = f" --endpoint-url {target.endpoint}" if target.endpoint else ""
    return (f"{target.describe()} still holds {files} LTX files, and Litestream 0.5 cannot delete a bucket's files on "
            f"request; nothing was deleted there. With replication stopped, delete every object under "
            f"s3://{target.bucket}/{target.path}/ (for example: aws s3 rm --recursive s3://{target.bucket}/{target.path}/"
            f"{endpoint}), then run this command again with --delete-older: it finds the replica empty, resets "
            "Litestream's local state (which holds the same files) and uploads the file as it is now")


# the whole survey, as the command asks for it


def survey(memory_path: pathlib.Path, snapshots: list[pathlib.Path], litestream: Litestream | None = None,
           target: ReplicaTarget | None = None, delete: bool = False,
           say: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """
    The file's redactions, and for each the older copies that still hold a text it removed: the
    snapshots and, with ``target``, the replica's history from before it; with ``delete``, those removed.

    :param snapshots: the file's snapshots (:func:`~..sqltools.snapshots.list_snapshots`)
    :param litestream: the binary, needed with ``target``
    :param say: where a replication started anew says what it does
    :return: ``{file, redactions: [{..., snapshots, replica}], snapshots, replica, local_state}``
    :raises ReplicationError: if the replica cannot be read, or its history cannot be deleted now (a
        replication runs, a bucket still holds files): then nothing at all is deleted
    """
    conn = sqlite3.connect(f"file:{memory_path}?mode=ro", uri=True, isolation_level=None)
    try:
        found = redactions(conn)
    finally:
        conn.close()
    checked = snapshots_holding(snapshots, found)
    listed = [{**redaction.to_dict(), "snapshots": [s["path"] for s in checked if s.get("error") or s["held"].get(redaction.key)]}
              for redaction in found]
    result: dict[str, Any] = {"file": str(memory_path), "redactions": listed, "snapshots": checked, "replica": None,
                              "local_state": local_state(memory_path)}
    if target is not None and litestream is not None:
        result["replica"] = replica_survey(litestream, target, found, listed, result["local_state"])
    if not delete:
        return result
    replica = result["replica"]
    if replica is None or not replica["to_delete"] or litestream is None or target is None:
        delete_snapshots(checked)
        return result
    deletable(memory_path, target, replica["files"])  # refuses before anything is deleted
    delete_snapshots(checked)
    replica["started_anew"] = start_anew(litestream, target, memory_path, say)
    replica["newest"] = newest_check(litestream, target, found)
    return result


def replica_survey(litestream: Litestream, target: ReplicaTarget, found: list[Redaction], listed: list[dict[str, Any]],
                   state: dict[str, Any]) -> dict[str, Any]:
    "The replica's part of :func:`survey`: ``{url, files, damaged, holds, to_delete, started_anew, newest}``."
    with private_folder() as folder:
        history = ReplicaHistory(Replica(litestream, target, folder))
        for redaction, entry in zip(found, listed):
            entry["replica"] = replica_holding(history, redaction, found)
    holds = any(entry["replica"]["holds"] for entry in listed) or bool(history.damaged)
    emptied = bool(found) and not history.files and state["files"] > 0  # a bucket the person emptied
    return {"url": target.url, "files": len(history.files), "damaged": history.damaged, "holds": holds,
            "to_delete": holds or emptied, "started_anew": None, "newest": None}


def deletable(memory_path: pathlib.Path, target: ReplicaTarget, files: int) -> None:
    """
    Refuse, before anything is deleted, a deletion that cannot be completed.

    :raises ReplicationError: if a replication of the file runs, or a bucket still holds files
    """
    os.close(take_lock(memory_path))
    if target.scheme != "file" and files:
        raise ReplicationError(bucket_refusal(target, files))


def newest_check(litestream: Litestream, target: ReplicaTarget, found: list[Redaction]) -> dict[str, Any]:
    "The replica's newest copy, restored with Litestream and checked by digest: ``{txid, event, files, held: {key: count}}``."
    with private_folder() as folder:
        replica = Replica(litestream, target, folder)
        copy = replica.newest()
        if copy is None:
            raise ReplicationError(f"{target.describe()} is empty after it was started anew; run `datasette-memory replicate` "
                                   "to upload the file")
        return {"txid": copy.txid, "event": copy.event_id, "files": len(replica.files()), **check_file(copy.path, found, found)}
