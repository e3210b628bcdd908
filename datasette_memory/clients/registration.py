"""What datasette-memory registers with a coding agent: one MCP server and a hook per event.

Both clients run a hook's command through a shell, with the hook's JSON on
stdin, so a command is one shell-quoted string; an MCP server is a command and
its arguments. Our entries are recognised by their command alone (the
``datasette-memory`` executable, under any path, running ``hook`` or ``mcp``),
so uninstall finds them again without a marker the user could lose.
"""

import dataclasses
import pathlib
import shlex
from collections.abc import Mapping

EXECUTABLE_NAME = "datasette-memory"
DEFAULT_SERVER_NAME = "memory"
# event: the ``datasette-memory hook`` subcommand it runs. Both clients send the
# same JSON on stdin to these events and read hookSpecificOutput.additionalContext
# back; each client module lists the events it has.
HOOK_SUBCOMMANDS = {
    "SessionStart": "session-start",  # startup, resume, /clear and compaction alike: no matcher
    "UserPromptSubmit": "prompt",
    "PostToolUse": "tool",  # Claude Code's matcher names the tools it records (claude_code.RECORDED_TOOLS)
    "PostToolUseFailure": "tool",  # Claude Code's PostToolUse for a call that failed
    "Stop": "stop",
}
# Events installed only when asked for (--with-stop-hook)
OPT_IN_EVENTS = ("Stop",)


@dataclasses.dataclass(frozen=True)
class Registration:
    """
    The entries one install writes.

    :param executable: the ``datasette-memory`` command the client runs, best an absolute path
    :param db: the memory file, or None for the default one
    :param project: the memory project to pin the server and hooks to, or None
    :param with_stop_hook: also register the Stop hook
    :param server_name: the name the MCP server is registered under
    """

    executable: str
    db: pathlib.Path | None = None
    project: str | None = None
    with_stop_hook: bool = False
    server_name: str = DEFAULT_SERVER_NAME

    def flags(self) -> list[str]:
        "The ``--db`` and ``--project`` flags the server and every hook get."
        flags = ["--db", str(self.db)] if self.db else []
        return flags + (["--project", self.project] if self.project else [])

    def mcp_args(self) -> list[str]:
        """
        The MCP server's arguments: without a project, it takes the one the hooks'
        rule gives its starting folder, so the server and the hooks agree.
        """
        return ["mcp", *self.flags(), *([] if self.project else ["--project-from-folder"])]

    def hook_commands(self, events: tuple[str, ...]) -> dict[str, str]:
        """
        Each hook event this registration installs, with its shell command.

        :param events: the events the client has, in :data:`HOOK_SUBCOMMANDS`
        """
        return {
            event: shlex.join([self.executable, "hook", HOOK_SUBCOMMANDS[event], *self.flags()])
            for event in events
            if event not in OPT_IN_EVENTS or self.with_stop_hook
        }


def runs_datasette_memory(words: list[str], subcommand: str) -> bool:
    "Whether a command line is ``<any path>/datasette-memory <subcommand> ...``."
    return len(words) >= 2 and pathlib.PurePath(words[0]).name == EXECUTABLE_NAME and words[1] == subcommand


def is_our_hook(command: object) -> bool:
    """
    Whether a hook handler's command is one of ours.

    :param command: the handler's ``command`` value, of any type
    """
    if not isinstance(command, str):
        return False
    try:
        return runs_datasette_memory(shlex.split(command), "hook")
    except ValueError:  # unbalanced quotes: someone else's command
        return False


def is_our_server(spec: object) -> bool:
    """
    Whether an MCP server entry (``command`` and ``args``) runs ``datasette-memory mcp``.

    :param spec: the server's entry, of any type
    """
    if not isinstance(spec, Mapping) or not isinstance(spec.get("command"), str):
        return False
    args = spec.get("args") or []
    return isinstance(args, list) and runs_datasette_memory([spec["command"], *map(str, args)], "mcp")
