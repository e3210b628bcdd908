"""Claude Code: its MCP server list and its hooks, at project or user scope.

Where Claude Code keeps them (its documentation: https://code.claude.com/docs/en/mcp,
https://code.claude.com/docs/en/settings and https://code.claude.com/docs/en/hooks):

- project scope: MCP servers in ``<project>/.mcp.json`` (``mcpServers``, the file
  ``claude mcp add --scope project`` writes, meant to be checked in; Claude Code
  asks each person to approve its servers once), hooks in ``<project>/.claude/settings.json``;
- user scope: MCP servers at the top of ``~/.claude.json`` (``claude mcp add --scope
  user``; the file also holds Claude Code's own state, which is kept as it is),
  hooks in ``~/.claude/settings.json``.

Hooks are ``{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": ...}]}]}}``;
a SessionStart group without a matcher runs at startup, resume, ``/clear`` and compaction;
the tool hook's groups match only the tools whose calls it records.
"""

import pathlib
from collections.abc import Callable

from ..core.hookspecs import hookimpl
from .agent_clients import AgentClient
from .json_entries import drop_hooks, drop_server, put_hooks, put_server
from .places import Places
from .registration import Registration
from .setting_files import FileChange, edit_json

NAME = "Claude Code"
NEXT_STEP = "Start a new Claude Code session (or run /mcp and /hooks in one) to pick this up."
# the events our hooks run at (Claude Code sends a failed tool call as PostToolUseFailure, not PostToolUse)
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop")
# The tools whose calls the tool hook records (they change files or run commands): Read, Grep,
# Glob, web and MCP tools start no process. Anchored, so a version reading matchers as unanchored
# regular expressions still does not match BashOutput; claude-plugin/hooks/hooks.json has the same.
RECORDED_TOOLS = "^(Edit|MultiEdit|Write|NotebookEdit|Bash)$"
HOOK_MATCHERS = {"PostToolUse": RECORDED_TOOLS, "PostToolUseFailure": RECORDED_TOOLS}


def mcp_file(places: Places) -> pathlib.Path:
    "The file holding the MCP servers at this scope."
    return places.folder / ".mcp.json" if places.scope == "project" else places.home / ".claude.json"


def hooks_file(places: Places) -> pathlib.Path:
    "The settings file holding the hooks at this scope."
    return (places.folder if places.scope == "project" else places.home) / ".claude" / "settings.json"


def server_entry(registration: Registration) -> dict[str, object]:
    "Our ``mcpServers`` entry, as ``claude mcp add`` writes a stdio server."
    return {"type": "stdio", "command": registration.executable, "args": registration.mcp_args()}


def install_changes(registration: Registration, places: Places) -> list[FileChange]:
    """
    The changes that register the MCP server and the hooks.

    :param registration: what to register
    :param places: where
    :raises SettingsFileError: if a file is malformed or the server's name is taken
    """
    mcp, hooks = mcp_file(places), hooks_file(places)
    return [
        edit_json(mcp, lambda data: put_server(data, server_entry(registration), registration.server_name, mcp)),
        edit_json(hooks, lambda data: put_hooks(data, registration.hook_commands(HOOK_EVENTS), hooks, HOOK_MATCHERS)),
    ]


def uninstall_changes(server_name: str, places: Places) -> list[FileChange]:
    """
    The changes that remove our MCP server and every hook of ours.

    :param server_name: the name the server was registered under
    :param places: where
    :raises SettingsFileError: if a file is malformed
    """
    mcp, hooks = mcp_file(places), hooks_file(places)
    return [
        edit_json(mcp, lambda data: drop_server(data, server_name)),
        edit_json(hooks, drop_hooks),
    ]


@hookimpl
def register_agent_clients(register: Callable[[AgentClient], None]) -> None:
    register(AgentClient("claude-code", NAME, install_changes, uninstall_changes, NEXT_STEP))
