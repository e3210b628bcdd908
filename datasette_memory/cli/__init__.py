"""The ``datasette-memory`` command: each command lives in a module of its own."""

import click

from .backfill import backfill_vectors
from .import_export import export, import_
from .mcp_server import mcp
from .serve import create_token, serve
from .verify import verify


@click.group()
@click.version_option(package_name="datasette-memory")
def cli() -> None:
    "Memory for coding agents in one SQLite file."


for command in (serve, mcp, import_, export, create_token, verify, backfill_vectors):
    cli.add_command(command)
