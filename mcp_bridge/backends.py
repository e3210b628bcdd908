"""Where a bridge's calls run: its own connection (stdio), or Datasette's (HTTP)."""

import pathlib
import uuid

from fastmcp.server.dependencies import get_http_request

from datasette_memory import Memory
from datasette_memory.database import connect
from datasette_memory.plugin.connection import call_memory, memory_database


class LocalBackend:
    """
    One connection to a memory file, for a bridge serving one agent over stdio.

    :param path: the memory file
    :param actor: who every call is recorded as
    :param allow_secrets: store text that looks like a credential
    """

    def __init__(self, path, actor: str = "agent", allow_secrets: bool = False):
        self.conn = connect(path)
        self.path = pathlib.Path(path).resolve()
        self.actor = actor
        self.session = uuid.uuid4().hex[:12]
        self.allow_secrets = allow_secrets

    def caller(self):
        "Who is calling: ``(actor, session)``."
        return self.actor, self.session

    async def call(self, function, project: str, write: bool = False):
        "Run ``function(memory)``; :class:`Memory` makes each write one transaction."
        return function(Memory(self.conn, project, self.actor, self.session, self.allow_secrets))


class DatasetteBackend:
    """
    Calls through Datasette: reads on its read connections, writes on its write
    thread, recorded as the actor whose API token authenticated the request.

    :param datasette: the Datasette instance serving the memory file
    :param allow_secrets: store text that looks like a credential
    """

    def __init__(self, datasette, allow_secrets: bool = False):
        self.datasette = datasette
        self.allow_secrets = allow_secrets

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(memory_database(self.datasette).path)

    def caller(self):
        "Who is calling: the actor of the request's API token, and its MCP session."
        request = get_http_request()
        return request.scope["actor"]["id"], request.headers.get("mcp-session-id")

    async def call(self, function, project: str, write: bool = False):
        actor, session = self.caller()
        return await call_memory(
            self.datasette,
            function,
            write,
            project=project,
            actor=actor,
            session=session,
            allow_secrets=self.allow_secrets,
        )
