"""The coding agents ``install`` and ``uninstall`` know: Claude Code and Codex built in, more from plugins.

Each is an :class:`AgentClient`, registered through the ``register_agent_clients``
hook; the built-in two are its default implementations (``claude_code`` and
``codex``). A plugin's client plans its changes with the same parts, so it gets
the dry run, the backups and the undo for nothing.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

from ..core.plugins import built_from_hooks
from .places import Places
from .registration import Registration
from .setting_files import FileChange


@dataclasses.dataclass(frozen=True)
class AgentClient:
    """
    One coding agent that install can register datasette-memory with.

    :param name: the name on the command line, such as ``claude-code`` (letters, digits and -)
    :param title: the name people know it by, such as ``Claude Code``
    :param install_changes: ``(registration, places) -> [FileChange]``: the changes that register the server and hooks
    :param uninstall_changes: ``(server_name, places) -> [FileChange]``: the changes that remove them
    :param next_step: what to do after an install for the agent to pick it up
    """

    name: str
    title: str
    install_changes: Callable[[Registration, Places], list[FileChange]]
    uninstall_changes: Callable[[str, Places], list[FileChange]]
    next_step: str = ""

    def __post_init__(self) -> None:
        if not self.name or not all(c.isascii() and (c.isalnum() or c == "-") for c in self.name):
            raise ValueError(f"AgentClient name {self.name!r}: use letters, digits and - only, as on a command line")


def agent_clients() -> dict[str, AgentClient]:
    "Every client, by its name on the command line: the built-in ones, then those plugins registered."
    return built_from_hooks("register_agent_clients", collect_agent_clients)


def collect_agent_clients(manager: Any) -> dict[str, AgentClient]:
    found: dict[str, AgentClient] = {}

    def register(client: AgentClient) -> None:
        if not isinstance(client, AgentClient):
            raise TypeError(f"register_agent_clients: register an AgentClient, not {client!r}")
        if client.name in found and found[client.name] != client:
            raise ValueError(f"register_agent_clients: two plugins register a client named {client.name!r}")
        found[client.name] = client

    manager.hook.register_agent_clients(register=register)
    return dict(sorted(found.items()))
