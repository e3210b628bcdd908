"""``restore``: a copy of the replica into a new file, which appears only whole and verified.

The copy is restored into a private folder beside the new file (same file
system), checked with ``verify`` there, and only then linked into place, which
fails rather than replace a file that appeared meanwhile; the folder is removed
whatever happens. So an interrupted, failed or unverified restore leaves
nothing at the path asked for (unless ``keep_unverified``, for a copy that is
better than none).
"""

import contextlib
import os
import pathlib
import shutil
import sqlite3
import tempfile
from typing import Any

from ..core.clock import parse_time
from ..core.database import applied_migrations, connect
from ..core.errors import InvalidInput
from ..core.last_check import record_path
from ..core.migrations import migrations
from ..history.file_check import verify_file
from .litestream import Litestream
from .replica_copies import Copy, Replica
from .replica_target import ReplicaTarget, ReplicationError


def parse_moment(value: str | None) -> tuple[str, Any] | None:
    """
    What ``--as-of`` names: ``("event", id)`` for an event id (``1234`` or ``#1234``),
    ``("time", rfc3339)`` for an ISO 8601 date or time (UTC when it names no offset), None for none.

    :raises ReplicationError: for anything else
    """
    if value is None:
        return None
    text = value.strip()
    if text.lstrip("#").isdigit():
        event_id = int(text.lstrip("#"))
        if event_id < 1:
            raise ReplicationError("--as-of: events are numbered from 1; give an event id such as 1234, or a time")
        return ("event", event_id)
    try:
        moment = parse_time(text, "--as-of")
    except InvalidInput:
        raise ReplicationError(f"--as-of: {text[:64]!r} is neither an event id (such as 1234) nor an ISO 8601 time "
                               "(such as 2025-03-01T09:30:00Z)")
    return ("time", str(moment).replace("+00:00", "Z"))


def check_destination(destination: pathlib.Path) -> None:
    "A restore writes a new file: refuse one that exists (or its SQLite side files), or a folder that does not."
    for path in (destination, pathlib.Path(f"{destination}-wal"), pathlib.Path(f"{destination}-shm")):
        if os.path.lexists(path):
            raise ReplicationError(f"{path}: already exists, and restore never replaces a file; give --to a new path, "
                                   "or move this one away first")
    if not destination.parent.is_dir():
        raise ReplicationError(f"{destination}: the folder {destination.parent} does not exist; create it first")


def restore_file(litestream: Litestream, target: ReplicaTarget, destination: pathlib.Path,
                 as_of: tuple[str, Any] | None = None, keep_unverified: bool = False) -> dict[str, Any]:
    """
    Restore the replica's newest copy, or its copy as of ``as_of``, into the new file ``destination``, verified.

    :param as_of: what :func:`parse_moment` returns
    :param keep_unverified: put a copy that does not verify in place all the same
    :return: ``{file, placed, replica, copy, as_of, verify}``; ``placed`` says whether ``destination`` now exists
    :raises ReplicationError: if the destination exists, or the replica holds no such copy
    """
    destination = destination.expanduser().resolve()
    check_destination(destination)
    folder = pathlib.Path(tempfile.mkdtemp(prefix=f".{destination.name}.restoring-", dir=destination.parent))
    try:
        replica = Replica(litestream, target, folder)
        copy = named(restore_copy(replica, as_of), folder / destination.name)
        settle(copy.path)
        upgraded = upgrade(copy.path)
        report = verify_file(copy.path)
        placed = report["ok"] or keep_unverified
        if placed:
            place(copy.path, destination)
        return {"file": str(destination), "placed": placed, "replica": target.url, "copy": copy.to_dict(),
                "as_of": describe_moment(as_of, copy), "upgraded": upgraded, "verify": {**report, "file": str(destination)}}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def restore_copy(replica: Replica, as_of: tuple[str, Any] | None) -> Copy:
    "The copy ``as_of`` asks for, restored into the replica's private folder."
    if as_of is None:
        newest = replica.newest()
        if newest is None:
            raise ReplicationError(f"{replica.target.describe()} holds no copy yet: it is empty; nothing was restored")
        return newest
    kind, value = as_of
    if kind == "event":
        return replica.as_of_event(value)
    try:
        return replica.restore(timestamp=value)
    except ReplicationError as e:
        if "no matching backup files" not in str(e):
            raise
        uploads = sorted(str(f.get("timestamp")) for f in replica.files())
        oldest = f"its oldest upload is from {uploads[0]}" if uploads else "it is empty"
        raise ReplicationError(f"{replica.target.describe()} holds no copy from before {value}: {oldest}; nothing was restored")


def named(copy: Copy, path: pathlib.Path) -> Copy:
    "``copy`` under the new file's name (in the private folder), so that what verify says of it names the right side files."
    copy.path.rename(path)
    return Copy(path, copy.txid, copy.event_id, copy.event_hash, copy.event_ts)


def describe_moment(as_of: tuple[str, Any] | None, copy: Copy) -> dict[str, Any] | None:
    "What was asked for and what the copy holds, for people."
    if as_of is None:
        return None
    kind, value = as_of
    described: dict[str, Any] = {"asked": value, "kind": kind}
    if kind == "event" and copy.event_id > value:
        described["note"] = (f"no copy ends at event {value}: the earliest that holds it ends at event {copy.event_id} "
                             f"(events {value + 1} to {copy.event_id} reached the replica with it)")
    return described


def settle(path: pathlib.Path) -> None:
    "Fold a write-ahead log the restored copy may have into it, so the file alone holds it."
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def upgrade(path: pathlib.Path) -> list[str]:
    """
    Bring a copy written by an older datasette-memory up to this version's schema, as ``serve``
    does at its start (verify checks a file of its own version only).

    :return: the migrations applied (none for a copy of this version)
    :raises SchemaTooNewError: for a copy written by a newer version
    """
    conn = sqlite3.connect(path)
    try:
        missing = sorted(set(migrations.names()) - applied_migrations(conn))
    finally:
        conn.close()
    connect(path).close()  # refuses a newer schema; a no-op for a current one
    return missing


def place(copy: pathlib.Path, destination: pathlib.Path) -> None:
    """
    Put the verified copy at ``destination`` (and the record of its clean check beside it), never replacing a file.

    :raises ReplicationError: if a file appeared there meanwhile
    """
    wal = pathlib.Path(f"{copy}-wal")
    if wal.exists() and wal.stat().st_size:
        raise ReplicationError(f"the restored copy kept a write-ahead log ({wal.name}); nothing was placed at {destination}")
    try:
        os.link(copy, destination)
    except FileExistsError:
        raise ReplicationError(f"{destination}: a file appeared there during the restore, and restore never replaces a "
                               "file; nothing was placed")
    except OSError:  # a file system without hard links: check, then rename (replaces nothing but in a race)
        if os.path.lexists(destination):
            raise ReplicationError(f"{destination}: a file appeared there during the restore; nothing was placed")
        os.rename(copy, destination)
    record = record_path(copy)
    if record.exists() and not os.path.lexists(record_path(destination)):
        with contextlib.suppress(OSError):
            shutil.copyfile(record, record_path(destination))
    sync_folder(destination.parent)


def sync_folder(folder: pathlib.Path) -> None:
    "Make the new names in ``folder`` durable."
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
