"""Embedding off the write path: one thread per memory file catches its side file up with the ledger.

A write commits and returns; then it asks this file's :class:`Indexer` to catch
up, and the thread re-embeds what the new ledger events name while the writer
goes on. Progress is kept in the side file, so whatever a process leaves
undone (the model failed, the process was killed) is picked up by the next
catch-up any process asks for; a search that finds the index behind asks for one.

A process that ends (a command, a stdio server whose client left) first
finishes the catch-ups it was asked for, as it did when writes embedded their
changes themselves (see :func:`finish_at_exit`). An idle thread ends after
:data:`IDLE_S` seconds; the next request starts another.
"""

import logging
import pathlib
import sqlite3
import threading
from typing import Any

from ..core.database import configure
from .index import catch_up, pending_changes, start_from
from .side_file import memory_file_path

log = logging.getLogger(__name__)
IDLE_S = 5.0  # an indexer's thread ends after this long with nothing to do


class Indexer:
    """
    Catches one memory file's side file up with its ledger, in a thread of its own.

    :param path: the memory file
    """

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.changed = threading.Condition()
        self.requested = 0  # catch-ups asked for
        self.completed = 0  # catch-ups run (the last one run covers every one asked before it started)
        self.thread: threading.Thread | None = None

    def request(self) -> None:
        "Ask for a catch-up, starting the thread if it is not running."
        finish_at_exit.register()
        with self.changed:
            self.requested += 1
            self.changed.notify_all()
            if not self.running():
                self.thread = threading.Thread(target=self.run, name=f"datasette-memory vectors: {self.path.name}", daemon=True)
                self.thread.start()

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def run(self) -> None:
        while (target := self.next_request()) is not None:
            try:
                self.catch_up()
            except Exception as e:
                log.warning(
                    "semantic index not updated (%s); it is retried on the next write or search, "
                    "or run datasette-memory backfill-vectors", e
                )
            with self.changed:
                self.completed = target
                self.changed.notify_all()

    def next_request(self) -> int | None:
        "Wait for a catch-up to be asked for: the number asked so far, or None after :data:`IDLE_S` idle seconds."
        with self.changed:
            if not self.changed.wait_for(lambda: self.completed < self.requested, IDLE_S):
                self.thread = None  # the next request starts a new thread
                return None
            return self.requested

    def catch_up(self) -> None:
        conn = sqlite3.connect(self.path.as_uri() + "?mode=rw", uri=True)  # never creates a file that is gone
        try:
            configure(conn)
            catch_up(conn)
        finally:
            conn.close()

    def wait(self, timeout: float | None = None) -> bool:
        """
        Wait until every catch-up asked for so far has run; False if ``timeout`` seconds passed first.

        :param timeout: seconds, or None to wait as long as it takes
        """
        with self.changed:
            target = self.requested
            return self.changed.wait_for(lambda: self.completed >= target or not self.running(), timeout)


indexers: dict[pathlib.Path, Indexer] = {}
indexers_lock = threading.Lock()


def indexer_for(conn: sqlite3.Connection) -> Indexer | None:
    "The indexer of ``conn``'s memory file, or None for an in-memory database."
    path = memory_file_path(conn)
    if path is None:
        return None
    with indexers_lock:
        if path not in indexers:
            indexers[path] = Indexer(path)
        return indexers[path]


def after_write(conn: sqlite3.Connection, since: int) -> None:
    """
    A write on ``conn`` committed: catch its changes up in the background.
    Returns at once; a side file made now starts from the write's changes.

    :param conn: the connection that wrote
    :param since: the ledger head before the write
    """
    indexer = indexer_for(conn)
    if indexer is not None:
        start_from(conn, since)
        indexer.request()


def index_lag(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """
    What the semantic index lacks of memory, as search reports it: None when it
    holds every change. An index that is behind is asked to catch up.

    :param conn: a connection to the memory file
    :return: None, ``{state: behind, changes_pending, note}`` or ``{state: not built, note}``
    """
    pending = pending_changes(conn)
    if pending is None:
        return {
            "state": "not built",
            "note": "no entity is embedded yet: writes from now on are embedded as they happen, "
            "and datasette-memory backfill-vectors embeds what was stored before",
        }
    if not pending:
        return None
    indexer = indexer_for(conn)
    if indexer is not None:
        indexer.request()
    return {
        "state": "behind",
        "changes_pending": pending,
        "note": "the semantic index is catching up with recent changes: results similar in meaning to them may be missing",
    }


def wait_until_current(conn: sqlite3.Connection, timeout: float | None = None) -> bool:
    """
    Wait until the semantic index of ``conn``'s memory file has caught up with
    every change asked for so far; False if ``timeout`` seconds passed first.

    :param conn: a connection to the memory file
    :param timeout: seconds, or None to wait as long as it takes
    """
    indexer = indexer_for(conn)
    return True if indexer is None else indexer.wait(timeout)


class FinishAtExit:
    """
    When the interpreter begins to shut down, wait for every indexer to finish
    what it was asked: a process's last writes are embedded before it ends.

    It must run before ``concurrent.futures`` stops its thread pools (the
    model's libraries use them), so it is registered with the same hook they
    use, which runs hooks in reverse order, after importing those modules. Once
    shutting down, the interpreter refuses new hooks: the libraries' imports in
    a catch-up find them already registered.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.registered = False

    def register(self) -> None:
        with self.lock:
            if not self.registered:
                import concurrent.futures.process  # noqa: F401
                import concurrent.futures.thread  # noqa: F401

                threading._register_atexit(self)  # type: ignore[attr-defined]
                self.registered = True

    def __call__(self) -> None:
        with indexers_lock:
            running = list(indexers.values())
        for indexer in running:
            indexer.wait()


finish_at_exit = FinishAtExit()
