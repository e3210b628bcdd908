"""Where a bridge's calls run: core calls (``call``) and SQL tool calls (``sql``), for the caller.

:class:`LocalBackend` is the stdio server's: one connection of its own. The
Datasette plugin has its own backend for MCP over HTTP, calling through
Datasette's connections; both run the SQL tools with :func:`run_sql`.
"""

import asyncio
import pathlib
import uuid
from collections.abc import Callable
from typing import Protocol, TypeVar

from datasette_memory import Config, Memory
from datasette_memory.core import witness
from datasette_memory.core.database import connect
from datasette_memory.sqltools import SqlTools

T = TypeVar("T")


class Backend(Protocol):
    """What the bridge needs of a backend."""

    config: Config

    def caller(self) -> tuple[str, str | None]: ...

    async def call(self, function: Callable[[Memory], T], project: str, write: bool = False) -> T: ...

    async def sql(self, function: Callable[[SqlTools], T], project: str) -> T: ...


async def run_sql(function: Callable[[SqlTools], T], path: str | pathlib.Path, project: str, caller: tuple[str, str | None], config: Config) -> T:
    """
    Run ``function(sql_tools)`` in a thread (a statement may take up to the time
    limit), on SQL tools with the configured caps and snapshot folder. They open
    connections of their own: each call runs under its own authorizer and deadline.

    :param function: called with the :class:`~datasette_memory.sqltools.SqlTools`
    :param path: the memory file
    :param project: the project the call is pinned to
    :param caller: ``(actor, session)``
    :param config: the door's configuration
    """
    actor, session = caller

    def run() -> T:
        return function(SqlTools(path, project=project, actor=actor, session=session, limits=config.sql, snapshot_dir=config.snapshot_dir))

    return await asyncio.to_thread(run)


class LocalBackend:
    """
    One connection to a memory file, for a bridge serving one agent over stdio.

    :param path: the memory file
    :param actor: who every call is recorded as
    :param allow_secrets: store text that looks like a credential
    :param config: search settings, SQL caps, snapshot folder
    """

    def __init__(self, path: str | pathlib.Path, actor: str = "agent", allow_secrets: bool = False, config: Config | None = None):
        self.conn = connect(path, check_pages=True)
        self.path = pathlib.Path(path).resolve()
        self.actor = actor
        self.session = uuid.uuid4().hex[:12]
        self.allow_secrets = allow_secrets
        self.config = config or Config()

    def caller(self) -> tuple[str, str | None]:
        "Who is calling: ``(actor, session)``."
        return self.actor, self.session

    async def call(self, function: Callable[[Memory], T], project: str, write: bool = False) -> T:
        "Run ``function(memory)``; :class:`Memory` makes each write one transaction."
        return function(Memory(self.conn, project, self.actor, self.session, self.allow_secrets, self.config))

    async def sql(self, function: Callable[[SqlTools], T], project: str) -> T:
        "Run ``function(sql_tools)`` off the event loop."
        return await run_sql(function, self.path, project, self.caller(), self.config)

    def close(self) -> None:
        witness.flush()
        self.conn.close()
