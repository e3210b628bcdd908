"""``mcp``: the MCP server over stdio, for one agent.

It answers the client's ``initialize`` while it imports the MCP framework (most
of a second) and builds the server, and a file that needs no migration has its
pages checked meanwhile (a second or more at 100,000 entities); no tool call is
served before both are done.
"""

import pathlib
import sqlite3
import threading
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import click

from mcp_bridge.profiles import DEFAULT_PROFILE, PROFILES

from ..config import Config
from ..core.database import configure, is_current, refuse_damaged
from ..core.errors import MemoryStoreError
from .options import config_options, db_option, resolve, say_witness


@click.command()
@db_option
@click.option("--project", help="Pin every tool to this project: no other project can be read or written")
@click.option(
    "--project-from-folder",
    is_flag=True,
    help="Pin every tool to the project the hooks choose for the folder the server starts in: a .datasette-memory "
    "file's, else the git repository's name, else default",
)
@click.option("--actor", default="agent", show_default=True, help="Who the ledger records as making each change")
@click.option("--allow-secrets", is_flag=True, help="Store text that looks like a credential instead of refusing it")
@click.option(
    "--tools",
    "profile",
    type=click.Choice(PROFILES),
    default=DEFAULT_PROFILE,
    show_default=True,
    help="Which tools to offer: official (the official memory server's nine), memory (those plus search, the ledger "
    "and the governed tier) or all (also the SQL tools)",
)
@config_options
def mcp(
    db_path: pathlib.Path | None, project: str | None, project_from_folder: bool, actor: str, allow_secrets: bool, profile: str,
    config: Config,
) -> None:
    """Run the MCP server over stdio, for one agent.

    `install` registers it with --project-from-folder, so the server and the hooks
    (which choose by the session's folder) use the same project.
    """
    from mcp_bridge.backends import LocalBackend
    from mcp_bridge.opening import SERVER_NAME, Opening, instructions_for
    from mcp_bridge.stdio import serve_stdio

    path = resolve(db_path)
    click.echo(f"Memory file: {path}", err=True)
    if project_from_folder:
        project = folder_project(project)
    current = is_current(path)  # else its pages are checked before it is migrated, as every opener does
    try:
        backend = LocalBackend(path, actor=actor, allow_secrets=allow_secrets, config=config, check_pages=not current)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")
    pages_checked = checking_pages(path) if current else None

    def build() -> Any:
        from mcp_bridge.server import create_server

        try:
            server = create_server(backend, project=project, profile=profile)
            if pages_checked:
                pages_checked()
        except MemoryStoreError as e:
            raise click.ClickException(f"{path}: {e}")
        say_witness(backend.conn, "mcp")
        return server

    opening = Opening(SERVER_NAME, version("datasette-memory"), instructions_for(profile))
    try:
        serve_stdio(build, max_request_bytes=config.max_request_bytes, opening=opening)
    finally:
        backend.close()


def checking_pages(path: pathlib.Path) -> Callable[[], None]:
    """
    Run SQLite's quick check of the file at ``path`` in a thread of its own, on a
    connection of its own.

    :return: a function that waits for it, and raises :class:`~..core.errors.DamagedFile` if it found damage
    """
    failed: list[BaseException] = []

    def check() -> None:
        try:
            conn = sqlite3.connect(str(path), check_same_thread=False)
            try:
                configure(conn)
                refuse_damaged(conn, path)
            finally:
                conn.close()
        except BaseException as e:  # raised where the server waits for it
            failed.append(e)

    thread = threading.Thread(target=check, name="datasette-memory page check", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failed:
            raise failed[0]

    return wait


def folder_project(given: str | None) -> str:
    "The project the hooks' rule chooses for this process's folder, said on stderr; a usage error beside --project."
    from ..hooks.project import ProjectFileError, choose_project

    if given is not None:
        raise click.UsageError("--project and --project-from-folder choose the project two ways: give one")
    try:
        chosen = choose_project(None, pathlib.Path.cwd())
    except (ProjectFileError, MemoryStoreError) as e:
        raise click.ClickException(str(e))
    click.echo(f"Project: {chosen.project} ({chosen.rule})", err=True)
    return chosen.project
