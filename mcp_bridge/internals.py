"""The private parts of fastmcp and mcp that the stdio transport needs, in one place, checked at import.

:mod:`.stdio` serves MCP over its own transport, and no public API of either
package runs a server on a transport of one's own: it needs fastmcp's server
lifespan (``FastMCP._lifespan_manager``), the low-level server under it
(``FastMCP._mcp_server``) and mcp's context-carrying streams
(``mcp.shared._context_streams``). Private names change without notice, so this
module refuses to load beside a release series other than the one it was read
from (the minor series, which pyproject.toml's ranges also stop at), with an
error naming both, rather than fail later in the middle of a session.
"""

import importlib.metadata
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from datasette_memory.core.errors import MemoryStoreError

# the versions whose private names this module was written against (read from their source)
WRITTEN_FOR = {"fastmcp": "4.2.3", "mcp": "2.3.0"}


class UnsupportedFramework(MemoryStoreError, RuntimeError):
    """The installed fastmcp or mcp is not a version the stdio transport was written for."""


def installed_versions() -> dict[str, str]:
    "The installed versions of the packages in :data:`WRITTEN_FOR` (fastmcp's as fastmcp itself reports it)."
    import fastmcp

    return {"fastmcp": fastmcp.__version__, "mcp": importlib.metadata.version("mcp")}


def check_versions(installed: Mapping[str, str]) -> None:
    """
    Refuse versions other than those this module was written for, naming both.

    :param installed: package name to installed version, as :func:`installed_versions` gives
    """
    if any(series(installed[name]) != series(wanted) for name, wanted in WRITTEN_FOR.items()):
        found = ", ".join(f"{name} {version}" for name, version in installed.items())
        wanted = " ".join(f"'{name}=={version}'" for name, version in WRITTEN_FOR.items())
        raise UnsupportedFramework(
            f"datasette-memory's stdio transport uses private parts of fastmcp and mcp and was written for "
            f"{' and '.join(f'{n} {v}' for n, v in WRITTEN_FOR.items())} (it accepts "
            f"{' and '.join(f'{n} {series(v)}.x' for n, v in WRITTEN_FOR.items())}), but this Python has {found}: "
            f"install those versions (pip install {wanted}) or a datasette-memory release made for yours"
        )


def series(version: str) -> str:
    "A version's major and minor parts: ``4.2`` of ``4.2.3``."
    return ".".join(version.split(".")[:2])


check_versions(installed_versions())

from mcp.shared._context_streams import create_context_streams  # noqa: E402  (only once the versions are known)


def lifespan(server: Any) -> AbstractAsyncContextManager[Any]:
    "The fastmcp server's lifespan: its startup and shutdown around a session."
    return server._lifespan_manager()  # type: ignore[no-any-return]


def low_level_server(server: Any) -> Any:
    "The MCP SDK's low-level server inside a fastmcp server, whose ``run`` serves a pair of streams."
    return server._mcp_server


__all__ = ["WRITTEN_FOR", "UnsupportedFramework", "check_versions", "create_context_streams", "lifespan", "low_level_server"]
