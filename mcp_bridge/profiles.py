"""Tool profiles: which tools a server offers, so an agent pays in context only for the tools it needs.

Every tool declares the smallest profile it belongs to (``profile`` on
:class:`~.tooling.ToolSpec`); each profile holds the ones before it:

- ``official``: the official memory server's nine tools;
- ``memory``: those, plus ranked search, the ledger (events, checkpoints, resume,
  verify, diffs, provenance) and the governed tier's propose-and-read tools;
- ``all``: everything, the SQL tools included.

A tool outside a server's profile is not registered at all: calling it is an
unknown tool, exactly as for a name that does not exist. This module imports
nothing heavy, so the CLI can offer the choices without loading fastmcp.
"""

from datasette_memory.core.errors import InvalidInput

PROFILES = ("official", "memory", "all")
# what the doors (``mcp --tools`` and the HTTP endpoint) offer unless told otherwise: why, in docs/tools.md
DEFAULT_PROFILE = "memory"


def check_profile(name: object, field: str = "tools") -> str:
    """
    ``name`` if it is a profile, else :class:`InvalidInput` naming ``field`` and the choices.

    :param name: the profile asked for
    :param field: what the door calls it, for the error
    """
    if name not in PROFILES:
        raise InvalidInput(f"{field}: must be one of {', '.join(PROFILES)}, got {name!r}")
    return str(name)


def offers(profile: str, tool_profile: str) -> bool:
    """
    Whether a server with ``profile`` offers a tool declared in ``tool_profile``.

    :param profile: the server's profile
    :param tool_profile: the smallest profile the tool belongs to
    """
    return PROFILES.index(tool_profile) <= PROFILES.index(check_profile(profile))
