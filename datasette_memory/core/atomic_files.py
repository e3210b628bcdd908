"""Writing a small file whole or not at all: a temporary file in the same folder, renamed into place.

A crash, a full disk or a read-only folder part way through then leaves the
old file (or none), never a half-written or empty one, and the temporary file
is removed on any failure. Processes that read a file, change it and write it
back take turns through :func:`locked`.
"""

import contextlib
import fcntl
import os
import pathlib
import secrets
from collections.abc import Iterator


def write_atomically(
    target: str | pathlib.Path, text: str, mode: int = 0o644, replace: bool = True, sync: bool = True
) -> bool:
    """
    Write ``text`` to ``target`` whole or not at all.

    :param target: the file
    :param text: its content, written as UTF-8
    :param mode: the permissions of a new file (the umask applies)
    :param replace: replace an existing file; if False, an existing one is kept
        (another process made it first) and nothing is written
    :param sync: flush the text to the disk before the rename (a file that may
        be lost in a crash, to be written again, need not wait for it)
    :return: whether ``target`` now holds ``text``
    :raises OSError: naming ``target``, if it cannot be written; nothing is left behind
    """
    target = pathlib.Path(target)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            if sync:
                file.flush()
                os.fsync(file.fileno())
        if replace:
            os.replace(temporary, target)
            return True
        try:
            os.link(temporary, target)  # fails if the file exists: two processes never both create it
        except FileExistsError:
            return False
        return True
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(target)) from e
    finally:
        with contextlib.suppress(OSError):  # gone after a replace; a read-only folder refuses the unlink too
            temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def locked(lock_file: str | pathlib.Path) -> Iterator[None]:
    """
    Hold an exclusive advisory lock on ``lock_file`` (created if missing), so
    processes that read, change and write back the same small files take turns.

    :raises OSError: if the lock file cannot be opened
    """
    descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
