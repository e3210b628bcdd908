"""Where a bridge's calls run: core calls (``call``) and SQL tool calls (``sql``), for the caller.

:class:`LocalBackend` is the stdio server's. Every call runs in a thread, off
the event loop, so a slow call holds up no other: writes one at a time on one
write connection (SQLite has one writer), reads each on a read connection of
its own (the file is in WAL mode), so a read waits neither for another read nor
for a write. The Datasette plugin has its own backend for MCP over HTTP, which
does the same with Datasette's read connections and write thread; both run the
SQL tools with :func:`run_sql`.
"""

import asyncio
import pathlib
import queue
import sqlite3
import uuid
from collections.abc import Callable
from typing import Protocol, TypeVar

from datasette_memory import Config, Memory
from datasette_memory.core import witness
from datasette_memory.core.database import connect, read_connection, read_transaction
from datasette_memory.sqltools import SqlTools

from .write_thread import WriteThread

T = TypeVar("T")

# facades kept at most, over every connection and project
MAX_MEMORIES = 256


class Backend(Protocol):
    """What the bridge needs of a backend."""

    config: Config

    def caller(self) -> tuple[str, str | None]: ...

    async def call(self, function: Callable[[Memory], T], project: str, write: bool = False) -> T: ...

    async def sql(self, function: Callable[[SqlTools], T], project: str) -> T: ...


async def run_sql(
    function: Callable[[SqlTools], T], path: str | pathlib.Path, project: str, caller: tuple[str, str | None], config: Config,
    allow_secrets: bool = False,
) -> T:
    """
    Run ``function(sql_tools)`` in a thread (a statement may take up to the time
    limit), on SQL tools with the configured caps and snapshot folder. They open
    connections of their own: each call runs under its own authorizer and deadline.

    :param function: called with the :class:`~datasette_memory.sqltools.SqlTools`
    :param path: the memory file
    :param project: the project the call is pinned to
    :param caller: ``(actor, session)``
    :param config: the door's configuration
    :param allow_secrets: run calls whose text looks like a credential
    """
    actor, session = caller

    def run() -> T:
        tools = SqlTools(
            path, project=project, actor=actor, session=session, limits=config.sql, snapshot_dir=config.snapshot_dir,
            allow_secrets=allow_secrets,
        )
        return function(tools)

    return await asyncio.to_thread(run)


class LocalBackend:
    """
    A memory file served to one agent over stdio: calls run in threads, writes
    one at a time on the write connection ``conn``, reads on read connections.

    :param path: the memory file
    :param actor: who every call is recorded as
    :param allow_secrets: store text that looks like a credential
    :param config: search settings, SQL caps, snapshot folder
    :param check_pages: run SQLite's quick check first and refuse a damaged file (``mcp``
        runs it beside the server's start instead, when the file needs no migration)
    """

    def __init__(
        self, path: str | pathlib.Path, actor: str = "agent", allow_secrets: bool = False, config: Config | None = None,
        check_pages: bool = True,
    ):
        self.conn = connect(path, check_pages=check_pages)
        self.path = pathlib.Path(path).resolve()
        self.actor = actor
        self.session = uuid.uuid4().hex[:12]
        self.allow_secrets = allow_secrets
        self.config = config or Config()
        # one thread for writes: they queue here, never in the threads reads run in
        self.writes = WriteThread("datasette-memory writes")
        self.readers: list[sqlite3.Connection] = []  # every read connection opened, for close()
        self.idle_readers: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        # by (connection, project): a call reuses the facade its connection made for the project
        self.memories: dict[tuple[int, str], Memory] = {}

    def caller(self) -> tuple[str, str | None]:
        "Who is calling: ``(actor, session)``."
        return self.actor, self.session

    async def call(self, function: Callable[[Memory], T], project: str, write: bool = False) -> T:
        """
        Run ``function(memory)`` in a thread: a write after the writes before it,
        as one transaction (:class:`Memory` makes it); a read at once, on a read
        connection that refuses writes.
        """
        if write:
            return await self.writes.run(self.run_write, function, project)
        return await asyncio.to_thread(self.run_read, function, project)

    async def sql(self, function: Callable[[SqlTools], T], project: str) -> T:
        "Run ``function(sql_tools)`` off the event loop."
        return await run_sql(function, self.path, project, self.caller(), self.config, self.allow_secrets)

    def memory(self, conn: sqlite3.Connection, project: str) -> Memory:
        """
        The facade for ``project`` on ``conn``, made once per connection and project
        (checking the project's name and actor, and scanning the name for secrets, once),
        and used by one call at a time: its connection is.
        """
        key = (id(conn), project)  # the backend holds every connection it made until close(): ids stay theirs
        memory = self.memories.get(key)
        if memory is None:
            if len(self.memories) >= MAX_MEMORIES:
                self.memories.clear()  # a caller cycling through projects: start again rather than grow
            memory = self.memories[key] = Memory(conn, project, self.actor, self.session, self.allow_secrets, self.config)
        return memory

    def run_write(self, function: Callable[[Memory], T], project: str) -> T:
        return function(self.memory(self.conn, project))

    def run_read(self, function: Callable[[Memory], T], project: str) -> T:
        # taken and given back in this thread: a read whose caller gave up still owns its connection until it ends
        conn = self.reader()
        try:
            with read_transaction(conn):
                return function(self.memory(conn, project))
        finally:
            self.idle_readers.put(conn)

    def reader(self) -> sqlite3.Connection:
        "An idle read connection, or a new one: two reads in flight never share one."
        try:
            return self.idle_readers.get_nowait()
        except queue.Empty:
            conn = read_connection(self.path)  # a call marked as a read cannot write
            self.readers.append(conn)
            return conn

    def close(self) -> None:
        "Finish the writes asked for, then close every connection; call it once no read is in flight."
        self.writes.shutdown()
        witness.flush()
        self.memories.clear()
        for conn in self.readers:
            conn.close()
        self.conn.close()

