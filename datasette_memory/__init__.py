"""datasette-memory: memory for coding agents in one SQLite file.

Where things live (each package says more in its own docstring):

- :mod:`.core`: the file, its migrations, the ledger, checkpoints, input checks, errors
- :mod:`.graph`: entities, observations and relations, as the official memory server has them
- :mod:`.governed`: claims and facts, the human gate, context packs
- :mod:`.search`: ranked search and its abstention rules
- :mod:`.vectors`: the optional semantic arm's side file and background embedding
- :mod:`.sqltools`: SQL as the agent's tool, with the safety in the server
- :mod:`.memory`: :class:`Memory`, the one API every door calls; :mod:`.config`, what the doors configure
- :mod:`.plugin` and :mod:`.cli`: the Datasette plugin and the command line (with :mod:`mcp_bridge`, the doors)
"""

from typing import Any

from .config import Config
from .core.errors import InvalidInput, MemoryStoreError, NotFound, SchemaTooNewError
from .core.validation import DEFAULT_PROJECT
from .memory import Memory
from .search.settings import SearchSettings
from .sqltools.limits import Limits

__all__ = [
    "DEFAULT_PROJECT",
    "Config",
    "InvalidInput",
    "Limits",
    "Memory",
    "MemoryStoreError",
    "NotFound",
    "SchemaTooNewError",
    "SearchSettings",
    "hookimpl",
]


def __getattr__(name: str) -> Any:
    "``hookimpl``, the marker plugins implement hooks with, imported when first asked for (pluggy is not needed before)."
    if name == "hookimpl":
        from .core.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
