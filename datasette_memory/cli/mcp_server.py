"""``mcp``: the MCP server over stdio, for one agent."""

import pathlib

import click

from mcp_bridge.profiles import DEFAULT_PROFILE, PROFILES

from ..config import Config
from ..core.errors import MemoryStoreError
from .options import config_options, db_option, resolve


@click.command()
@db_option
@click.option("--project", help="Pin every tool to this project: no other project can be read or written")
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
def mcp(db_path: pathlib.Path | None, project: str | None, actor: str, allow_secrets: bool, profile: str, config: Config) -> None:
    "Run the MCP server over stdio, for one agent."
    from mcp_bridge.backends import LocalBackend
    from mcp_bridge.server import create_server
    from mcp_bridge.stdio import serve_stdio

    path = resolve(db_path)
    click.echo(f"Memory file: {path}", err=True)
    try:
        backend = LocalBackend(path, actor=actor, allow_secrets=allow_secrets, config=config)
        server = create_server(backend, project=project, profile=profile)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")
    try:
        serve_stdio(server, max_request_bytes=config.max_request_bytes)
    finally:
        backend.close()
