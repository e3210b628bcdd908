"""``hook``: the commands Claude Code and Codex run at their hook events (see :mod:`datasette_memory.hooks`).

Each reads the event's JSON on stdin and prints the documented output shape,
or nothing. A hook fails open: a missing, busy or damaged memory file, bad
stdin, a bad flag, or any error at all is one line on stderr and exit status 0
with nothing on stdout, so the agent goes on as if there were no hook. (Exit
status 2 would block a prompt or a stop in Claude Code, so no hook uses it.)

The hot path imports neither Datasette nor fastmcp, and searches lexically:
the semantic extra (torch) is never loaded, and a hook's matches are the same
with or without it.
"""

import dataclasses
import os
import pathlib
import sqlite3
import sys
from collections.abc import Callable
from typing import Any

import click

from ..core.evidence import start_line
from ..hooks import payloads, shape
from .options import db_option, resolve, search_settings

BUSY_TIMEOUT_MS = 2000  # a hook waits this long for another writer, then gives up: the agent should not wait
DEFAULT_ACTOR = "agent"
MAX_BUDGET = 64_000


class HookGroup(click.Group):
    "The ``hook`` group: a usage error is one line on stderr and exit status 0, like every other hook failure."

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            say(ctx.invoked_subcommand or "", f"{e.format_message()} (see datasette-memory hook --help)")
            ctx.exit(0)


@click.group(cls=HookGroup)
def hook() -> None:
    """Hooks for Claude Code and Codex: memory at session start, on each prompt, after each tool call.

    Each reads the hook event's JSON on stdin and prints what the agent adds to
    the model's context (or nothing). Any failure is one line on stderr and exit
    status 0: a hook never blocks the agent.
    """


def say(name: str, message: str) -> None:
    "One line on stderr, naming the hook."
    click.echo(f"datasette-memory hook{' ' + name if name else ''}: {' '.join(message.split())}", err=True)


def common_options(function: Callable[..., Any]) -> Callable[..., Any]:
    "``--db``, ``--project`` and ``--actor``, which every hook takes."
    function = click.option("--actor", default=DEFAULT_ACTOR, show_default=True,
                            help="Who the ledger records as writing the hook's events")(function)
    function = click.option("--project", help="The memory project; default: the .datasette-memory file's, else the git "
                            "repository's name, else default (see docs/hooks.md)")(function)
    return db_option(function)


def run(name: str, events: tuple[str, ...], db_path: pathlib.Path | None, project: str | None, actor: str,
        act: Callable[..., dict[str, Any] | None]) -> None:
    """
    Run one hook: read stdin, choose the project, open memory, ``act(memory, payload, choice)``, print its output.
    Every failure is one line on stderr; the exit status is 0 whatever happens. A session id
    holding a credential is left out (it would be on every event), and a project or actor
    holding one refused (:mod:`~datasette_memory.hooks.credentials`).

    :param name: the hook's subcommand, for messages
    :param events: the events it handles
    :param act: what it does; returns the output to print, or None for none
    """
    path = None
    try:
        payload = payloads.read_payload(sys.stdin.buffer.read(), events)
        from ..hooks.credentials import refuse_credential_names, without_credential_session
        from ..hooks.project import choose_project

        payload, notes = without_credential_session(payload)
        choice = choose_project(project, payload.cwd or pathlib.Path.cwd())
        refuse_credential_names(choice.project, actor)
        path = resolve(db_path)
        memory = open_memory(path, choice.project, actor, payload.session_id)
        try:
            ok, line = start_line(memory.conn, f"hook {name}")
            if not ok:  # said on stderr; session-start also puts it in the context, through the resume context
                notes = [*notes, line]
            output = act(memory, payload, choice)
        finally:
            memory.close()
    except Exception as e:  # fail open: whatever it was, the agent goes on
        say(name, failure(e, path))
        return
    for note in notes:
        say(name, note)
    if output is not None:
        click.echo(shape.printed(output))


def open_memory(path: pathlib.Path, project: str, actor: str, session: str | None) -> Any:
    "Memory in ``path`` for one hook: never created by a hook, lexical search, a short wait for the write lock."
    from .. import Config, Memory
    from ..core.database import connect

    if not path.exists():
        raise FileNotFoundError(f"no memory file at {path}: start `datasette-memory mcp` (or serve) once to create it, "
                                "or point --db or $DATASETTE_MEMORY_DB at yours")
    conn = connect(path)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    config = Config(search=dataclasses.replace(search_settings(os.environ), semantic=False))
    return Memory(conn, project=project, actor=actor, session=session, config=config)


def failure(error: BaseException, path: pathlib.Path | None) -> str:
    "What went wrong, in one line for stderr: a file's failures as every command says them, a busy file as a hook must."
    from ..core.errors import MemoryStoreError
    from ..core.file_errors import LOCKED, file_failure
    from ..hooks.credentials import CredentialError
    from ..hooks.project import ProjectFileError

    if isinstance(error, (payloads.HookInputError, ProjectFileError, CredentialError)):
        return f"{error}; memory was not used"
    if isinstance(error, click.ClickException):  # the file's place, as every command checks it (resolve)
        return error.format_message()
    if isinstance(error, FileNotFoundError) and path and not path.exists():
        return str(error.args[0] if error.args else error)
    found = file_failure(error, path)
    if found is not None and found.kind == LOCKED:
        return (f"{found.file}: busy: another process held the write lock for over {BUSY_TIMEOUT_MS / 1000:g} s; "
                "this hook recorded nothing and the agent goes on")
    if found is not None:
        return found.message
    where = f"{path}: " if path else ""
    if isinstance(error, MemoryStoreError):
        return f"{where}{error}"
    return f"{where}unexpected {type(error).__name__}: {error}; memory was not used (please report it)"


@hook.command("session-start")
@common_options
@click.option("--budget", type=click.IntRange(shape.SESSION_START_LEAST, MAX_BUDGET), default=shape.SESSION_START_BUDGET, show_default=True,
              help="Most bytes printed: the checkpoint, the last sessions' activity, facts, claims and events, in that order")
def session_start(db_path: pathlib.Path | None, project: str | None, actor: str, budget: int) -> None:
    """SessionStart (startup, resume, clear, compact): where to pick up.

    Prints the latest checkpoint, the last sessions' activity, the facts that hold
    now, how many claims wait for review and the events since the checkpoint, as
    stored data, and records the session's start in the ledger.
    """

    def act(memory: Any, payload: payloads.Payload, choice: Any) -> dict[str, Any]:
        from ..hooks import session_start as starting

        try:
            for note in starting.record_start(memory, payload, choice):
                say("session-start", note)
        except sqlite3.OperationalError as e:  # a busy file still reads (WAL): carry on without the record
            say("session-start", f"the session's start was not recorded ({e}); carrying on")
        return starting.session_context(memory, payload, choice, budget)

    run("session-start", (payloads.SESSION_START,), db_path, project, actor, act)


@hook.command("prompt")
@common_options
@click.option("--budget", type=click.IntRange(shape.PROMPT_LEAST, MAX_BUDGET), default=shape.PROMPT_BUDGET, show_default=True,
              help="Most bytes printed")
def prompt(db_path: pathlib.Path | None, project: str | None, actor: str, budget: int) -> None:
    """UserPromptSubmit: memory's confident matches for the prompt, or nothing.

    Searches the prompt's words (matches only, never entities only similar in
    meaning) and prints nothing at all unless a match is confident.
    """

    def act(memory: Any, payload: payloads.Payload, choice: Any) -> dict[str, Any] | None:
        from ..hooks.recall import recall_context

        return recall_context(memory, payload.prompt or "", budget)

    run("prompt", (payloads.PROMPT,), db_path, project, actor, act)


@hook.command("tool")
@common_options
@click.option("--tools", help="Record only these tools, comma-separated (Edit,Write,Bash); default: the .datasette-memory "
              "file's tools setting, else every tool")
@click.option("--budget", type=click.IntRange(shape.EVENT_LEAST, MAX_BUDGET), default=shape.EVENT_BUDGET, show_default=True,
              help="Most bytes of one event")
def tool(db_path: pathlib.Path | None, project: str | None, actor: str, tools: str | None, budget: int) -> None:
    """PostToolUse (and Claude Code's PostToolUseFailure): record the call as an activity event.

    Records the tool, the files it touched, a command with its exit status and a
    test run's counts, without text inside <private>...</private> or anything
    that looks like a credential. Prints nothing.
    """

    def act(memory: Any, payload: payloads.Payload, choice: Any) -> None:
        from ..core.hook_kinds import ACTIVITY
        from ..hooks.capture import capture
        from ..hooks.project import parse_tools

        chosen = parse_tools(tools) if tools is not None else choice.tools
        if chosen is not None and not recorded(payload.tool_name, chosen):
            return None
        found = capture(payload, budget)
        for note in found.notes:
            say("tool", note)
        memory.append_event(found.content(), kind=ACTIVITY)
        return None

    run("tool", (payloads.TOOL, payloads.TOOL_FAILURE), db_path, project, actor, act)


def recorded(tool_name: str | None, tools: tuple[str, ...]) -> bool:
    "Whether ``tools`` asks for this tool; naming Edit or Write also names Codex's apply_patch, as Codex's matchers do."
    return tool_name in tools or (tool_name == "apply_patch" and bool({"Edit", "Write"} & set(tools)))


@hook.command("stop")
@common_options
def stop(db_path: pathlib.Path | None, project: str | None, actor: str) -> None:
    """Stop (opt-in): ask the agent once for a checkpoint when the session changed memory without one.

    Prints {"decision": "block", "reason": ...} at most once in a row (never when
    stop_hook_active is true), recorded in the ledger; otherwise nothing.
    """

    def act(memory: Any, payload: payloads.Payload, choice: Any) -> dict[str, Any] | None:
        from ..hooks.stop import stop_output

        return stop_output(memory, payload)

    run("stop", (payloads.STOP,), db_path, project, actor, act)
