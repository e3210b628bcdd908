"""The MCP bridge's backend for MCP over HTTP: calls through Datasette, as the token's actor."""

from collections.abc import Callable
from typing import TypeVar

from fastmcp.server.dependencies import get_http_request

from mcp_bridge.backends import run_sql

from ..memory import Memory
from ..sqltools import SqlTools
from .connection import call_memory, memory_config, memory_database

T = TypeVar("T")


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
        self.config = memory_config(datasette)

    @property
    def path(self) -> str:
        "The memory file Datasette serves: a tool error about the file names it."
        return memory_database(self.datasette).path

    def caller(self) -> tuple[str, str | None]:
        "Who is calling: the actor of the request's API token, and its MCP session."
        request = get_http_request()
        return request.scope["actor"]["id"], request.headers.get("mcp-session-id")

    async def call(self, function: Callable[[Memory], T], project: str, write: bool = False) -> T:
        actor, session = self.caller()
        return await call_memory(
            self.datasette, function, write, project=project, actor=actor, session=session, allow_secrets=self.allow_secrets
        )

    async def sql(self, function: Callable[[SqlTools], T], project: str) -> T:
        "Run ``function(sql_tools)`` on the file Datasette serves, off the event loop."
        path = memory_database(self.datasette).path
        return await run_sql(function, path, project, self.caller(), self.config, self.allow_secrets)
