"""``mcp``: the MCP server over stdio, for one agent."""

import pathlib

import click

from mcp_bridge.profiles import DEFAULT_PROFILE, PROFILES

from ..config import Config
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
    from mcp_bridge.server import create_server
    from mcp_bridge.stdio import serve_stdio

    path = resolve(db_path)
    click.echo(f"Memory file: {path}", err=True)
    if project_from_folder:
        project = folder_project(project)
    try:
        backend = LocalBackend(path, actor=actor, allow_secrets=allow_secrets, config=config)
        server = create_server(backend, project=project, profile=profile)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")
    say_witness(backend.conn, "mcp")
    try:
        serve_stdio(server, max_request_bytes=config.max_request_bytes)
    finally:
        backend.close()


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
