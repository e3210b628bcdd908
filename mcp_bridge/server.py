"""The MCP server: a profile's tools on one bridge, and the prompts (its instructions are :mod:`.opening`'s).

Tool modules (``graph_tools``, ``search_tools``, ...) each list their tools in
``TOOLS``: typed async functions declared with :func:`~.tooling.bridge_tool`,
each in the smallest profile that offers it (:mod:`.profiles`). A server
registers only its profile's tools; :mod:`.prompts` are offered in every profile.
"""

from collections.abc import Callable, Coroutine
from importlib.metadata import version
from types import ModuleType
from typing import Any

from fastmcp import FastMCP

from datasette_memory import Config

from . import governed_tools, graph_tools, history_tools, ledger_tools, prompts, search_tools, sql_tools
from .backends import Backend
from .bridge import Bridge
from .opening import SERVER_NAME, instructions_for
from .profiles import check_profile, offers
from .prompts import build_prompt
from .tooling import BridgeTool, build_tool

TOOL_MODULES: list[ModuleType] = [graph_tools, search_tools, ledger_tools, history_tools, governed_tools, sql_tools]


def build_tools(bridge: Bridge, config: Config, profile: str = "all") -> list[BridgeTool]:
    """
    The tools ``profile`` offers, bound to ``bridge``, in the order the server lists them.

    :param bridge: where calls go (a bridge without a backend only describes the tools)
    :param config: the configuration the descriptions show
    :param profile: ``official``, ``memory`` or ``all`` (:mod:`.profiles`)
    """
    check_profile(profile, "profile")
    return [
        build_tool(function, bridge, config)
        for module in TOOL_MODULES
        for function in module.TOOLS
        if offers(profile, function.spec.profile)
    ]


def create_server(backend: Backend, project: str | None = None, profile: str = "all") -> FastMCP:
    """
    An MCP server offering ``profile``'s tools, and the prompts, on ``backend``.

    :param backend: where calls run; its ``config`` sets the caps the descriptions show
    :param project: pin every call to this project
    :param profile: ``official``, ``memory`` or ``all`` (:mod:`.profiles`); a tool outside it is not registered at all.
        The doors (``mcp --tools``, ``/-/memory/mcp?tools=``) default to :data:`~.profiles.DEFAULT_PROFILE`.
    """
    bridge = Bridge(backend, project)
    tools = build_tools(bridge, backend.config, profile)
    offered = {tool.name for tool in tools}
    server = FastMCP(
        SERVER_NAME,
        instructions=instructions_for(profile),
        version=version("datasette-memory"),
        strict_input_validation=True,
    )
    for tool in tools:
        server.add_tool(tool)
    for function in prompts.PROMPTS:
        server.add_prompt(build_prompt(function, bridge, offered))
    for module in TOOL_MODULES:
        for uri, (name, description, reader) in getattr(module, "RESOURCES", {}).items():
            add_resource(server, bridge, uri, name, description, reader)
        for middleware in getattr(module, "MIDDLEWARE", []):
            server.add_middleware(middleware(bridge))
    return server


def add_resource(
    server: FastMCP, bridge: Bridge, uri: str, name: str, description: str, reader: Callable[[Bridge], Coroutine[Any, Any, str]]
) -> None:
    "Offer ``reader(bridge)``'s text at ``uri``, scoped to the server's project."

    @server.resource(uri, name=name, description=description, mime_type="application/json")
    async def read() -> str:
        return await reader(bridge)
