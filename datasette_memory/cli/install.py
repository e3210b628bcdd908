"""``install`` and ``uninstall``: register the MCP server and the hooks with Claude Code or Codex.

Every change is planned before any file is written, so a malformed settings file
stops the command before it has changed anything; see :mod:`datasette_memory.clients`.
Backups, and the record of the folders install made, are kept in the user's state
folder, never in their repository (:mod:`datasette_memory.clients.install_state`).
"""

import datetime
import os
import pathlib
import shlex
import shutil
import sys
from collections.abc import Callable
from typing import Any

import click

from ..clients import SCOPES, AgentClient, FileChange, InstallState, Places, Registration, SettingsFileError, agent_clients, apply
from ..clients.registration import DEFAULT_SERVER_NAME, EXECUTABLE_NAME
from .options import db_option

CODEX_HOME_ENV = "CODEX_HOME"
STATE_HOME_ENV = "XDG_STATE_HOME"


def this_executable() -> str:
    """
    The ``datasette-memory`` command being run, as an absolute path, so the
    client finds it without this virtualenv on its ``PATH``. Not resolved: a
    symlink such as pipx's ``~/.local/bin/datasette-memory`` outlives upgrades.
    """
    invoked = pathlib.Path(sys.argv[0])
    beside_python = pathlib.Path(sys.executable).parent / EXECUTABLE_NAME
    on_path = shutil.which(EXECUTABLE_NAME)
    for candidate in (invoked if invoked.name == EXECUTABLE_NAME else None, beside_python, on_path):
        if candidate and pathlib.Path(candidate).is_file():
            return os.path.abspath(candidate)
    raise click.ClickException(f"cannot find the {EXECUTABLE_NAME} executable to register; pass --executable PATH")


def place_options(function: Callable[..., Any]) -> Callable[..., Any]:
    "The options saying which client and which files: shared by install and uninstall."
    for option in reversed([
        click.argument("client", metavar="CLIENT", callback=known_client),
        click.option("--scope", type=click.Choice(SCOPES), default="project", show_default=True,
                     help="project: files in the project folder, for everyone who checks it out; user: files in your home folder, "
                     "for every project"),
        click.option("--folder", type=click.Path(file_okay=False, path_type=pathlib.Path), default=".",
                     help="The project folder, for --scope project  [default: the current folder]"),
        click.option("--codex-home", type=click.Path(file_okay=False, path_type=pathlib.Path), envvar=CODEX_HOME_ENV,
                     help=f"Codex's folder, for --scope user  [default: ${CODEX_HOME_ENV}, else ~/.codex]"),
        click.option("--name", "server_name", default=DEFAULT_SERVER_NAME, show_default=True,
                     callback=checked_server_name, help="The name the MCP server is registered under"),
        click.option("--dry-run", is_flag=True, help="Print what would change, as a diff of each file, and write nothing"),
    ]):
        function = option(function)
    return function


def known_client(ctx: click.Context, param: click.Parameter, value: str) -> AgentClient:
    "The client named on the command line: a built-in one or one a plugin registered (read only when a command runs)."
    clients = agent_clients()
    if value not in clients:
        raise click.BadParameter(f"{value!r} is not a client datasette-memory knows; use one of: {', '.join(clients)} "
                                 "(a plugin can add others)")
    return clients[value]


def checked_server_name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    "A server name both clients accept as it is: letters, digits, _ and -."
    if not value or not all(c.isascii() and (c.isalnum() or c in "_-") for c in value):
        raise click.BadParameter(f"{value!r}: use letters, digits, _ and - only")
    return value


def places(scope: str, folder: pathlib.Path, codex_home: pathlib.Path | None) -> Places:
    home = pathlib.Path.home()
    return Places(scope, folder.absolute(), home, (codex_home or home / ".codex").expanduser().absolute())


def install_state() -> InstallState:
    "The state folder: ``$XDG_STATE_HOME/datasette-memory``, else ``~/.local/state/datasette-memory``."
    state_home = os.environ.get(STATE_HOME_ENV) or str(pathlib.Path.home() / ".local" / "state")
    return InstallState(pathlib.Path(state_home).expanduser().absolute() / "datasette-memory")


def registration_options(ignored: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    "What install registers: ``--db``, ``--project``, ``--with-stop-hook``, ``--executable`` (uninstall takes and ignores them)."
    note = " (ignored here: taken so that an install command undoes with install changed to uninstall)" if ignored else ""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed([
            db_option,
            click.option("--project", help="Pin the MCP server and the hooks to this memory project" + note),
            click.option("--with-stop-hook", is_flag=True, help="Also run `datasette-memory hook stop` when the agent finishes a turn" + note),
            click.option("--executable", metavar="PATH",
                         help="The datasette-memory command the client runs  [default: the absolute path of this one]" + note),
        ]):
            function = option(function)
        return function

    return decorate


@click.command()
@place_options
@registration_options(ignored=False)
def install(client: AgentClient, scope: str, folder: pathlib.Path, codex_home: pathlib.Path | None, server_name: str, dry_run: bool,
            db_path: pathlib.Path | None, project: str | None, with_stop_hook: bool, executable: str | None) -> None:
    """Register the MCP server and the hooks with CLIENT (claude-code, codex, or one a plugin adds).

    Merges its entries into the client's settings and keeps everything else in
    them. A file that changes is backed up first, in your state folder
    ($XDG_STATE_HOME/datasette-memory/backups, else ~/.local/state/...), never
    in the project. Running it again changes nothing; run it with other options
    to change ours.
    """
    registration = Registration(
        executable=executable or this_executable(),
        db=db_path.expanduser().absolute() if db_path else None,
        project=project,
        with_stop_hook=with_stop_hook,
        server_name=server_name,
    )
    where = places(scope, folder, codex_home)
    run(client, where, lambda: client.install_changes(registration, where), dry_run)
    if not dry_run:
        if client.next_step:
            click.echo(client.next_step)
        click.echo("Undo with: " + shlex.join(undo_command(client, where, server_name)))


def undo_command(client: AgentClient, where: Places, server_name: str) -> list[str]:
    "The uninstall command that undoes an install made with these options."
    words = ["datasette-memory", "uninstall", client.name]
    if where.scope == "user":
        words += ["--scope", "user"]
    elif where.folder != pathlib.Path.cwd():
        words += ["--folder", str(where.folder)]
    return words + (["--name", server_name] if server_name != DEFAULT_SERVER_NAME else [])


@click.command()
@place_options
@registration_options(ignored=True)
def uninstall(client: AgentClient, scope: str, folder: pathlib.Path, codex_home: pathlib.Path | None, server_name: str,
              dry_run: bool, **ignored: Any) -> None:
    """Remove the MCP server and every datasette-memory hook from CLIENT's settings.

    Only our entries go (the server, if it runs datasette-memory mcp; hooks
    that run datasette-memory hook); a file that changes is backed up first,
    and a folder install made (.claude/, .codex/) goes once nothing else is in it.
    It takes install's options, so an install command undoes with one word changed.
    """
    where = places(scope, folder, codex_home)
    changes = run(client, where, lambda: client.uninstall_changes(server_name, where), dry_run)
    for made, removed in install_state().remove_made_folders([change.path for change in changes] if not dry_run else []):
        click.echo(f"  {made}: " + ("removed the folder, which install had made" if removed else
                                    "kept the folder install made: something else is in it now"))


def run(client: AgentClient, where: Places, plan: Callable[[], list[FileChange]], dry_run: bool) -> list[FileChange]:
    "Plan every change, then print and (unless a dry run) write each; the changes planned."
    try:
        changes = plan()
    except SettingsFileError as e:
        raise click.ClickException(str(e))
    in_place = f" ({where.folder})" if where.scope == "project" else ""
    click.echo(f"{client.title}, {where.scope} scope{in_place}{': dry run, nothing written' if dry_run else ''}")
    now, state = datetime.datetime.now(), install_state()
    for change in changes:
        backup = None if dry_run else apply(change, now, state)
        click.echo(f"  {change.path}: {status(change, backup, dry_run)}")
        for note in change.notes:
            click.echo(f"    {note}")
        if dry_run and change.changed:
            click.echo("".join(f"    {line}" for line in change.diff().splitlines(keepends=True)), nl=False)
    return changes


def status(change: FileChange, backup: pathlib.Path | None, dry_run: bool) -> str:
    "What happened to one file."
    if not change.changed:
        return "unchanged"
    verb = "created" if change.before is None else "removed, nothing else was in it" if change.after is None else "changed"
    if dry_run:
        return f"would be {verb}" if verb != "changed" else "would change"
    return verb + (f" (backup: {backup})" if backup else "")
