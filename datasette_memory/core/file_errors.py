"""What SQLite and the operating system say when a file cannot be used, as one line naming the file and what to do.

A full disk, a read-only folder, a lock another process holds too long, a
damaged file or one that is not a database at all: none is a bug to show a
traceback for, and none is the caller's mistake. Every door turns them into
its own kind of error with :func:`file_failure` (the CLI's one line, the MCP
tool error, Datasette's error page), so they read the same everywhere.
SQLite's extended error names (Python 3.11's ``sqlite_errorname``) decide
the kind; an unhelpful "unable to open" or "disk I/O error" is told apart by
looking at the folder: missing, read-only, or out of space.
"""

import errno
import os
import pathlib
import shutil
import sqlite3
from dataclasses import dataclass

from .database import BUSY_TIMEOUT_MS

NOT_A_DATABASE = "not a database"
DAMAGED = "damaged"
READ_ONLY = "read-only"
DISK_FULL = "disk full"
LOCKED = "locked"
MISSING = "missing"
PERMISSION_DENIED = "permission denied"
DISK_ERROR = "disk error"
CANNOT_OPEN = "cannot open"
# below this much free space, a write that failed for want of room failed because the disk is full
NEARLY_FULL_BYTES = 1 << 20
# the most errors followed back through __cause__ and __context__ to find SQLite's or the OS's
CAUSE_DEPTH = 5


@dataclass(frozen=True)
class FileFailure:
    """
    A file that cannot be used, said in one line.

    :param kind: one of the kinds above: failures of a kind are logged together
    :param file: the file (or folder) concerned
    :param what: what is wrong, in a few words
    :param todo: what to do about it
    """

    kind: str
    file: str
    what: str
    todo: str

    @property
    def message(self) -> str:
        "``<file>: <what is wrong>; <what to do>``"
        return f"{self.file}: {self.what}; {self.todo}"


def file_failure(error: BaseException, path: str | pathlib.Path | None = None, shown_as: str | None = None) -> FileFailure | None:
    """
    The failure ``error`` (or an error it was raised from) stands for, or None if
    it is none of a file's or the machine's (a bug, a statement SQLite refused).

    :param error: what was raised
    :param path: the file the caller was using; an OS error naming its own file names that one instead
    :param shown_as: how the message names ``path``, when not by itself (a visitor is told its name only)
    """
    seen: BaseException | None = error
    for _ in range(CAUSE_DEPTH):
        if seen is None:
            return None
        if isinstance(seen, sqlite3.Error):
            found = sqlite_failure(seen, Where(path, shown_as))
        elif isinstance(seen, OSError):
            found = os_failure(seen, Where(seen.filename, None) if seen.filename else Where(path, shown_as))
        else:
            found = None
        if found is not None:
            return found
        seen = seen.__cause__ or seen.__context__
    return None


@dataclass(frozen=True)
class Where:
    """
    The file a failure is about: the path to look at, and how a message names it.

    :param path: the file, if known (its folder is looked at)
    :param shown_as: the name to show, when not the path itself
    """

    path: str | pathlib.Path | None
    shown_as: str | None = None

    @property
    def name(self) -> str:
        return self.shown_as or (str(self.path) if self.path else "the memory file")

    @property
    def folder(self) -> pathlib.Path | None:
        return pathlib.Path(self.path).parent if self.path else None


def sqlite_failure(error: sqlite3.Error, where: Where) -> FileFailure | None:
    "The failure behind one of SQLite's errors, by its extended error name (or, without one, its message)."
    name = getattr(error, "sqlite_errorname", "") or ""
    message = str(error)
    said = f"SQLite: {message}"
    file = where.name
    if name == "SQLITE_NOTADB" or message == "file is not a database":
        return FileFailure(NOT_A_DATABASE, file, f"not a SQLite database ({said})",
                           "nothing was written to it. Check that the path names the memory file, "
                           "or move this file aside to start a new one")
    if name.startswith("SQLITE_CORRUPT") or "malformed" in message:
        return FileFailure(DAMAGED, file, f"the file is damaged ({said})",
                           "nothing was written to it. `datasette-memory verify` lists what is wrong; "
                           "restore it from a snapshot or a backup")
    if name == "SQLITE_FULL" or message == "database or disk is full":
        return full(where)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or message in ("database is locked", "database table is locked"):
        return FileFailure(LOCKED, file, f"another process held its write lock longer than the {BUSY_TIMEOUT_MS // 1000} s "
                           "SQLite waits", "the write that waited did not happen. Try again when that process is done, "
                           f"or stop it (`fuser {file}` names it)")
    if name.startswith("SQLITE_READONLY") or "readonly database" in message:
        return read_only(where)
    if name == "SQLITE_PERM":
        return denied(where)
    if name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")) or message in ("disk I/O error", "unable to open database file"):
        return unusable_folder(where) or FileFailure(
            CANNOT_OPEN if "CANTOPEN" in name or "unable to open" in message else DISK_ERROR, file,
            f"SQLite cannot use the file ({said})",
            "check that it and its folder exist and this user can read and write both, and that the disk is sound "
            "(then run `datasette-memory verify`)",
        )
    return None


def os_failure(error: OSError, where: Where) -> FileFailure | None:
    "The failure behind an error the operating system reported, by its errno."
    code = error.errno
    if code in (errno.ENOSPC, errno.EDQUOT):
        return full(where)
    if code == errno.EROFS:
        return read_only(where)
    if code in (errno.EACCES, errno.EPERM):
        return denied(where)
    if code == errno.ENOENT:
        return missing_folder(where) or FileFailure(MISSING, where.name, "it does not exist", "check the path")
    if code == errno.EIO:
        return FileFailure(DISK_ERROR, where.name, f"the disk reported an I/O error ({error.strerror})",
                           "check the disk, then run `datasette-memory verify`")
    return None


def unusable_folder(where: Where) -> FileFailure | None:
    "Why a file SQLite could not open or write is unusable, judged by its folder: missing, read-only or full."
    folder = where.folder
    if folder is None:
        return None
    if not folder.is_dir():
        return missing_folder(where)
    if read_only_folder(folder):
        return read_only(where)
    if free_bytes(folder) < NEARLY_FULL_BYTES:
        return full(where)
    if where.path and os.path.exists(where.path) and not os.access(where.path, os.R_OK | os.W_OK):
        return denied(where)
    return None


def read_only_folder(folder: pathlib.Path) -> bool:
    "Whether ``folder`` cannot be written: a read-only file system, or no write permission."
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
    except OSError:
        return False


def free_bytes(folder: pathlib.Path) -> int:
    "Bytes free for this user on ``folder``'s disk (a very large number if that cannot be told)."
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 1 << 62


def missing_folder(where: Where) -> FileFailure | None:
    folder = where.folder
    if folder is None or folder.is_dir():
        return None
    return FileFailure(MISSING, where.name, f"its folder {where.shown_as and folder.name or folder} does not exist",
                       "create the folder, or give a path in one that exists")


def full(where: Where) -> FileFailure:
    folder = where.folder
    room = f" ({free_bytes(folder) // 1024} KiB free in {folder})" if folder and not where.shown_as else ""
    return FileFailure(DISK_FULL, where.name, f"the disk is full{room}",
                       "no write was left half-done. Free some space there, then try again")


def read_only(where: Where) -> FileFailure:
    folder = f" ({where.folder})" if where.folder and not where.shown_as else ""
    return FileFailure(READ_ONLY, where.name, f"the file or its folder{folder} is read-only",
                       "SQLite writes the file and its -wal and -shm files beside it: make the folder writable, "
                       "or copy the file to a folder that is")


def denied(where: Where) -> FileFailure:
    return FileFailure(PERMISSION_DENIED, where.name, "permission denied",
                       "give this user read and write access to it and its folder, or run as the user who owns it")
