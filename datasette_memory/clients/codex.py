"""Codex: its MCP servers in ``config.toml`` and its hooks in ``hooks.json``, at project or user scope.

Where Codex keeps them (its documentation: https://developers.openai.com/codex/config-reference,
https://developers.openai.com/codex/config-advanced#hooks and https://developers.openai.com/codex/hooks):

- user scope: ``$CODEX_HOME`` (default ``~/.codex``): ``config.toml``
  (``[mcp_servers.<name>]`` with ``command`` and ``args``) and ``hooks.json``;
- project scope: ``<project>/.codex/config.toml`` and ``<project>/.codex/hooks.json``,
  which Codex loads only once the project is trusted.

``hooks.json`` has Claude Code's shape (``{"hooks": {"SessionStart": [...]}}``), and
Codex sends hooks the same JSON on stdin. Hooks are behind ``[features] codex_hooks = true``
in older versions; newer ones run them unless ``[features] hooks = false``.
"""

import pathlib
from collections.abc import Callable

from ..core.hookspecs import hookimpl
from .agent_clients import AgentClient
from .json_entries import drop_hooks, put_hooks
from .places import Places
from .registration import Registration
from .setting_files import FileChange, edit_json
from .toml_entries import drop_hooks_feature, drop_server, edit_toml, enable_hooks_feature, put_server

NAME = "Codex"
NEXT_STEP = "Start a new Codex session to pick this up (Codex reads a project's .codex/ folder only once you trust the project)."
# the events our hooks run at (Codex has no PostToolUseFailure)
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")


def codex_folder(places: Places) -> pathlib.Path:
    "Codex's folder at this scope."
    return places.folder / ".codex" if places.scope == "project" else places.codex_home


def install_changes(registration: Registration, places: Places) -> list[FileChange]:
    """
    The changes that register the MCP server, turn hooks on and add the hooks.

    :param registration: what to register
    :param places: where
    :raises SettingsFileError: if a file is malformed or the server's name is taken
    """
    config, hooks = codex_folder(places) / "config.toml", codex_folder(places) / "hooks.json"
    server = put_server(registration.server_name, registration.executable, registration.mcp_args(), config)
    return [
        edit_toml(config, [enable_hooks_feature(config), server]),
        edit_json(hooks, lambda data: put_hooks(data, registration.hook_commands(HOOK_EVENTS), hooks)),
    ]


def uninstall_changes(server_name: str, places: Places) -> list[FileChange]:
    """
    The changes that remove our MCP server, our feature line and every hook of ours.

    :param server_name: the name the server was registered under
    :param places: where
    :raises SettingsFileError: if a file is malformed
    """
    config, hooks = codex_folder(places) / "config.toml", codex_folder(places) / "hooks.json"
    return [
        edit_toml(config, [drop_server(server_name), drop_hooks_feature()]),
        edit_json(hooks, drop_hooks),
    ]


@hookimpl
def register_agent_clients(register: Callable[[AgentClient], None]) -> None:
    register(AgentClient("codex", NAME, install_changes, uninstall_changes, NEXT_STEP))
