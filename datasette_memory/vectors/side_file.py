"""The side file beside a memory file (``<memory file>.vectors``) and this process's connections to it."""

import collections
import contextlib
import pathlib
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from ..core.database import write_transaction
from . import loads_extensions
from .embedding import chosen_model

SIDE_FILE_SUFFIX = ".vectors"
BUSY_TIMEOUT_MS = 30_000
OPEN_SIDE_FILES = 8  # side files a process keeps open, least recently used closed first

side_lock = threading.RLock()  # held while a side file connection is in use
side_files: collections.OrderedDict[pathlib.Path, Any] = collections.OrderedDict()

SIDE_FILE_SCHEMA = """
CREATE TABLE IF NOT EXISTS entity_digests (
    entity_id INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    UNIQUE (project, name)
);
CREATE VIRTUAL TABLE IF NOT EXISTS entity_vectors USING vec0(
    entity_id INTEGER PRIMARY KEY,
    project TEXT PARTITION KEY,
    embedding FLOAT[{dimensions}] distance_metric=cosine
);
-- how far through the memory file's ledger the vectors are: every event up to this id is embedded
CREATE TABLE IF NOT EXISTS index_progress (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    embedded_through INTEGER NOT NULL
);
"""


def side_file_path_for(memory_path: str | pathlib.Path) -> pathlib.Path:
    "Where the vectors of the memory file at ``memory_path`` are kept."
    return pathlib.Path(str(memory_path) + SIDE_FILE_SUFFIX)


def memory_file_path(conn: sqlite3.Connection) -> pathlib.Path | None:
    "The file a connection has open, or None for an in-memory database."
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return pathlib.Path(file) if file else None
    return None


@contextlib.contextmanager
def side_file(conn: sqlite3.Connection, create: bool = True) -> Iterator[Any]:
    """
    Use the side file of ``conn``'s memory file: yields its connection, or
    None for an in-memory database or, unless ``create``, a missing side file.
    The connection is this process's one for that file, used by one thread at a time.

    :param conn: a connection to a memory file
    :param create: create the side file if it does not exist
    """
    memory_path = memory_file_path(conn)
    path = side_file_path_for(memory_path) if memory_path else None
    with side_lock:
        if path is not None and path not in side_files and (create or path.exists()):
            side_files[path] = open_side_file(path)
            while len(side_files) > OPEN_SIDE_FILES:
                side_files.popitem(last=False)[1].close()
        if path is not None and path in side_files:
            side_files.move_to_end(path)
        yield side_files.get(path) if path is not None else None


def connect_loading_extensions(path: pathlib.Path) -> Any:
    """
    A connection in autocommit mode that can load SQLite extensions: the standard
    library's where this Python was built with extension loading, else apsw's
    (its wheels bundle a SQLite that can). Both are used through the same calls
    (``execute`` with a list of parameters, ``fetchone``, ``fetchall``, ``in_transaction``).

    :param path: the file to open, created if missing
    """
    if loads_extensions():
        return sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    import apsw

    return apsw.Connection(str(path))


def open_side_file(path: pathlib.Path) -> Any:
    "Open (creating if needed) a side file, with sqlite-vec loaded and its tables present."
    import sqlite_vec

    conn = connect_loading_extensions(path)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # derived data: a lost last commit is re-embedded
    conn.execute("PRAGMA secure_delete = ON")  # a forgotten vector's bytes are overwritten
    schema = SIDE_FILE_SCHEMA.format(dimensions=int(chosen_model().dimensions))  # the embedding_model hook's model
    getattr(conn, "executescript", conn.execute)(schema)  # apsw's execute runs every statement
    return conn


def close_side_files() -> None:
    "Close every open side file (tests, and processes that delete memory files)."
    with side_lock:
        while side_files:
            side_files.popitem()[1].close()


def embedded_through(side: Any) -> int | None:
    "The id of the last ledger event whose changes the side file holds, or None if it has not recorded one."
    row = side.execute("SELECT embedded_through FROM index_progress WHERE id = 1").fetchone()
    return row[0] if row else None


def record_progress(side: Any, event_id: int) -> None:
    "Record that every ledger event up to ``event_id`` is embedded (never moving backwards)."
    with write_transaction(side):
        side.execute(
            "INSERT INTO index_progress (id, embedded_through) VALUES (1, ?) "
            "ON CONFLICT (id) DO UPDATE SET embedded_through = max(embedded_through, excluded.embedded_through)",
            [event_id],
        )
