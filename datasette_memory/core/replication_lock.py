"""The lock a replication of a memory file holds while it runs (``memory.db.replication.lock``; Litestream inherits it).

Taken by :mod:`datasette_memory.replication.replicator`; read here too by what
must not checkpoint the file's log under a running Litestream (a redaction's purge).
"""

import fcntl
import os
import pathlib

SUFFIX = ".replication.lock"


def lock_path(memory_path: str | pathlib.Path) -> pathlib.Path:
    "The replication lock of the memory file at ``memory_path``."
    return pathlib.Path(f"{memory_path}{SUFFIX}")


def replicating(memory_path: str | pathlib.Path) -> bool:
    "Whether a replication of the memory file at ``memory_path`` holds its lock now."
    path = lock_path(memory_path)
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # closing releases a lock taken here
    return False
