"""Snapshots of the memory file with SQLite's online backup API.

Snapshots go to a folder next to the file (``<stem>-snapshots``), or to
the folder the door configured. There are two kinds, rotated apart: the
newest N manual snapshots are kept, and separately the newest M taken before
a destructive statement, so no number of manual snapshots can rotate away the
copy that recovers from a destructive statement.
"""

import contextlib
import datetime
import os
import pathlib
import re
import sqlite3

from ..core.errors import MemoryStoreError
from ..core.file_errors import DISK_FULL, PERMISSION_DENIED, READ_ONLY, file_failure

MANUAL = "manual"
BEFORE_DESTRUCTIVE = "before-destructive"
KINDS = (MANUAL, BEFORE_DESTRUCTIVE)
# what to do when a snapshot cannot be written, by the kind of failure
ADVICE = {
    DISK_FULL: "Free some space there",
    READ_ONLY: "Make the folder writable",
    PERMISSION_DENIED: "Give this user write access to the folder",
}


class SnapshotFailed(MemoryStoreError):
    """A snapshot could not be written (a full disk, a read-only folder); nothing was left behind or changed."""


def snapshot_folder(db_path: str | pathlib.Path, configured: str | pathlib.Path | None = None) -> pathlib.Path:
    """
    Where snapshots of ``db_path`` go.

    :param db_path: the memory file
    :param configured: the folder the door configured, if any
    """
    if configured:
        return pathlib.Path(configured).expanduser()
    db_path = pathlib.Path(db_path)
    return db_path.parent / f"{db_path.stem}-snapshots"


def snapshot_pattern(stem: str) -> re.Pattern[str]:
    return re.compile(rf"{re.escape(stem)}-(\d{{8}}T\d{{12}}Z)-({'|'.join(KINDS)})\.db")


def list_snapshots(folder: pathlib.Path, stem: str, kind: str | None = None) -> list[pathlib.Path]:
    "Snapshots of the file named ``stem`` in ``folder``, oldest first."
    if not folder.is_dir():
        return []
    pattern = snapshot_pattern(stem)
    found = []
    for path in folder.iterdir():
        match = pattern.fullmatch(path.name)
        if match and kind in (None, match.group(2)):
            found.append((match.group(1), path))
    return [path for _, path in sorted(found)]


def new_snapshot_path(folder: pathlib.Path, stem: str, kind: str) -> pathlib.Path:
    "A name no snapshot has yet: the UTC time to the microsecond."
    while True:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"{stem}-{stamp}-{kind}.db"
        if not path.exists():
            return path


def take_snapshot(db_path: str | pathlib.Path, folder: pathlib.Path, kind: str) -> pathlib.Path:
    """
    Copy the memory file's committed state into ``folder``.

    The copy is written under a temporary name in ``folder`` and renamed when
    complete, so a half-written snapshot never looks like one; on any failure
    (a full disk included) the temporary file is removed. Rotation is the
    caller's next step (see :func:`rotate`), once the snapshot has served its purpose.

    :param db_path: the memory file
    :param folder: the snapshot folder, created if missing
    :param kind: MANUAL or BEFORE_DESTRUCTIVE
    :return: the snapshot's path
    :raises SnapshotFailed: saying why, if the snapshot could not be written
    """
    db_path = pathlib.Path(db_path)
    path = new_snapshot_path(folder, db_path.stem, kind)
    temporary = folder / f".{path.name}.{os.getpid()}.tmp"  # no snapshot's name: never listed, never rotated
    try:
        folder.mkdir(parents=True, exist_ok=True)
        copy_database(db_path, temporary)
        os.replace(temporary, path)
    except (sqlite3.Error, OSError) as e:
        raise snapshot_failed(folder, e) from e
    finally:
        for leftover in (temporary, temporary.with_name(temporary.name + "-journal")):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
    return path


def copy_database(db_path: pathlib.Path, target: pathlib.Path) -> None:
    "Copy the committed state of ``db_path`` to a new file ``target`` with SQLite's online backup API."
    source = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        copy = sqlite3.connect(str(target))
        try:
            source.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
    finally:
        source.close()


def snapshot_failed(folder: pathlib.Path, error: BaseException) -> SnapshotFailed:
    "The error saying why a snapshot into ``folder`` could not be written, and what to do."
    failure = file_failure(error, folder / "snapshot")
    reason = failure.what if failure else f"{type(error).__name__}: {error}"
    advice = ADVICE.get(failure.kind if failure else "", "Check the folder")
    return SnapshotFailed(
        f"{folder}: the snapshot could not be written ({reason}); no partial snapshot was left and nothing was changed. "
        f"{advice}, or set another snapshot folder (--snapshot-dir)"
    )


def rotate(folder: pathlib.Path, stem: str, kind: str, keep: int) -> list[pathlib.Path]:
    "Remove the oldest snapshots of ``kind`` beyond ``keep``; other kinds are never touched."
    snapshots = list_snapshots(folder, stem, kind)
    removed = snapshots[: max(0, len(snapshots) - keep)]
    for path in removed:
        path.unlink()
    return removed
