"""A bridge: a backend plus the project rule, which every tool goes through."""

from collections.abc import Callable
from typing import Any, TypeVar

from fastmcp.exceptions import ToolError

from datasette_memory import DEFAULT_PROJECT, Memory, MemoryStoreError
from datasette_memory.core.validation import check_project
from datasette_memory.sqltools import SqlTools

from .backends import Backend

T = TypeVar("T")


class ArgumentRefused(ToolError):
    """The bridge refused a call for its arguments, before the core saw it."""


class Bridge:
    """
    A backend plus the project rule: pinned to one project, or any project by argument.

    :param backend: where calls run (:class:`~mcp_bridge.backends.LocalBackend`, or the plugin's for HTTP)
    :param project: pin every call to this project; None lets calls choose
    """

    def __init__(self, backend: Backend | None, project: str | None = None):
        self.backend = backend
        self.pinned = check_project(project) if project is not None else None

    def project_for(self, requested: Any) -> str:
        "The project a call may use, or :class:`ArgumentRefused` saying why not."
        if requested is None:
            return self.pinned or DEFAULT_PROJECT
        try:
            requested = check_project(requested)
        except MemoryStoreError as e:
            raise ArgumentRefused(str(e))
        if self.pinned is not None and requested != self.pinned:
            raise ArgumentRefused(
                f"project: this server is pinned to project {self.pinned!r} and cannot use {requested!r}; "
                "leave project out, or start another server with --project"
            )
        return requested

    def connected(self) -> Backend:
        if self.backend is None:
            raise ToolError("this bridge has no backend: it only describes the tools")
        return self.backend

    async def read(self, project: Any, function: Callable[[Memory], T]) -> T:
        "Run ``function(memory)`` for a read, in the project the call may use."
        return await self.connected().call(function, self.project_for(project), write=False)

    async def write(self, project: Any, function: Callable[[Memory], T]) -> T:
        "Run ``function(memory)`` for a write: one transaction with its ledger events."
        return await self.connected().call(function, self.project_for(project), write=True)

    async def sql(self, project: Any, function: Callable[[SqlTools], T]) -> T:
        "Run ``function(sql_tools)``: the SQL tools guard, cap and audit the call themselves."
        return await self.connected().sql(function, self.project_for(project))
