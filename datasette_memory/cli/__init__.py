"""The ``datasette-memory`` command: each command lives in a module of its own."""

import click

from .backfill import backfill_vectors
from .failures import FailureReportingGroup, debug_option
from .hook import hook
from .import_export import export, import_
from .install import install, uninstall
from .mcp_server import mcp
from .serve import create_token, serve
from .verify import verify


@click.group(cls=FailureReportingGroup)
@click.version_option(package_name="datasette-memory")
@debug_option
def cli(debug: bool) -> None:
    """Memory for coding agents in one SQLite file.

    A failure (a full disk, a read-only folder, a damaged file...) is one line
    naming the file and what to do, and a non-zero exit; --debug shows its
    traceback instead.
    """


for command in (serve, mcp, import_, export, create_token, verify, backfill_vectors, install, uninstall, hook):
    cli.add_command(command)
