"""The ``datasette-memory`` command."""

import asyncio
import io
import json
import os
import pathlib
import secrets
import sys

import click
import yaml

from .actions import APPROVE_ACTION
from .cli_options import sql_limit_options
from .database import ENV_VAR, connect, default_db_path
from .errors import MemoryStoreError
from .jsonl import export_lines, import_lines
from .memory import DEFAULT_PROJECT, Memory
from .resources import resource_path


def db_option(function):
    "The ``--db`` option every command shares."
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=pathlib.Path),
        help=f"The memory file. Default: ${ENV_VAR}, else memory.db in "
        "$XDG_DATA_HOME/datasette-memory (~/.local/share/datasette-memory)",
    )(function)


def resolve(db_path) -> pathlib.Path:
    "The memory file a command uses: ``--db``, else the default."
    return (db_path or default_db_path()).expanduser().resolve()


def open_db(db_path):
    "Open and migrate the memory file, or exit with the reason it cannot be."
    path = resolve(db_path)
    try:
        return path, connect(path)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")


@click.group()
@click.version_option(package_name="datasette-memory")
def cli():
    "Memory for coding agents in one SQLite file."


@cli.command()
@db_option
@click.option("-h", "--host", default="127.0.0.1", show_default=True, help="Host to listen on")
@click.option("-p", "--port", default=8001, show_default=True, type=int, help="Port to listen on")
@click.option(
    "--approver",
    "approvers",
    multiple=True,
    help="Grant memory-approve to this signed-in actor id (repeatable); tokens never carry it",
)
@click.option("--root", is_flag=True, help="Print a URL that signs you in as root, who may approve")
@sql_limit_options
@click.pass_context
def serve(ctx, db_path, host, port, approvers, root):
    "Serve the memory file in Datasette, creating and migrating it if needed."
    from datasette.cli import serve as datasette_serve

    path, conn = open_db(db_path)
    conn.close()
    click.echo(f"Memory file: {path}", err=True)
    config = datasette_config("datasette.yaml", path.stem)
    if approvers:
        config.setdefault("permissions", {})[APPROVE_ACTION] = {"id": list(approvers)}
    ctx.invoke(
        datasette_serve,
        files=(str(path),),
        host=host,
        port=port,
        config=io.StringIO(json.dumps(config)),
        metadata=io.StringIO(json.dumps(datasette_config("metadata.yml", path.stem))),
        settings=(("plugins.datasette-memory.database", path.stem),),
        secret=token_secret(path),
        root=root,
    )


def token_secret(path: pathlib.Path) -> str:
    """
    The secret that signs API tokens for this memory file: ``$DATASETTE_SECRET``,
    else one kept beside the file (created on first use, readable by its owner
    only), so tokens outlive a restart.

    :param path: the memory file
    """
    if os.environ.get("DATASETTE_SECRET"):
        return os.environ["DATASETTE_SECRET"]
    secret_file = path.with_name(path.name + ".secret")
    if not secret_file.exists():
        descriptor = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as f:
            f.write(secrets.token_hex(32))
    return secret_file.read_text().strip()


@cli.command(name="create-token")
@click.argument("actor")
@db_option
@click.option("--expires-after", type=int, help="Seconds until the token expires; default never")
def create_token(actor, db_path, expires_after):
    """Create a Datasette API token for ACTOR, for MCP over HTTP and the JSON API.

    The token works with `datasette-memory serve` on the same memory file. Tokens
    never carry memory-approve: governance needs a signed-in person.
    """
    from datasette.app import Datasette

    path, conn = open_db(db_path)
    conn.close()
    datasette = Datasette(secret=token_secret(path))
    click.echo(asyncio.run(datasette.create_token(actor, expires_after=expires_after)))


def datasette_config(name: str, database: str) -> dict:
    """
    A top-level config file with its ``databases.memory`` block renamed to the
    served file's database name, which Datasette takes from the file name.

    :param name: ``datasette.yaml`` or ``metadata.yml``
    :param database: the memory database's name in Datasette
    """
    config = yaml.safe_load(resource_path(name).read_text())
    databases = config.get("databases", {})
    if "memory" in databases:
        databases[database] = databases.pop("memory")
    return config


def project_option(help_text: str):
    return click.option("--project", default=DEFAULT_PROJECT, show_default=True, help=help_text)


@cli.command()
@db_option
@click.option("--project", help="Pin every tool to this project: no other project can be read or written")
@click.option("--actor", default="agent", show_default=True, help="Who the ledger records as making each change")
@click.option("--allow-secrets", is_flag=True, help="Store text that looks like a credential instead of refusing it")
@sql_limit_options
def mcp(db_path, project, actor, allow_secrets):
    "Run the MCP server over stdio, for one agent."
    from mcp_bridge.backends import LocalBackend
    from mcp_bridge.server import create_server

    path = resolve(db_path)
    click.echo(f"Memory file: {path}", err=True)
    try:
        backend = LocalBackend(path, actor=actor, allow_secrets=allow_secrets)
        server = create_server(backend, project=project)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")
    server.run(show_banner=False, log_level="WARNING")


@cli.command(name="import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@db_option
@project_option("The project to import into")
@click.option("--actor", default="import", show_default=True, help="Who the ledger records as making the changes")
@click.option("--allow-secrets", is_flag=True, help="Import text that looks like a credential instead of skipping its line")
def import_(file, db_path, project, actor, allow_secrets):
    """Import the official memory server's JSONL file (FILE, or - for stdin).

    Importing the same file again changes nothing; bad lines are reported by
    number and everything else is kept.
    """
    path, conn = open_db(db_path)
    memory = Memory(conn, project=project, actor=actor, allow_secrets=allow_secrets)
    lines = file.read().splitlines()
    with click.progressbar(length=len(lines), label="Importing", file=sys.stderr) as bar:
        report = import_lines(memory, lines, progress=bar.update)
    for number, reason in report.bad_lines:
        click.echo(f"line {number}: {reason}", err=True)
    click.echo(f"{path} [{project}]: {report.summary()}", err=True)


@cli.command()
@db_option
@project_option("The project to export")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-", help="Write here instead of stdout")
def export(db_path, project, output):
    "Export a project as the official memory server's JSONL file."
    path, conn = open_db(db_path)
    output.write("\n".join(export_lines(Memory(conn, project=project))))


@cli.command()
@db_option
def verify(db_path):
    """Check the ledger's hash chain, and claims and facts against it.

    Exits 0 with a one-line summary if all is intact, 1 naming the first broken
    event and every claim or fact the ledger does not account for.
    """
    path, conn = open_db(db_path)
    memory = Memory(conn)
    status, governed = memory.verify_chain(), memory.verify_governed()
    memory.close()
    click.echo(f"{path}: {status.summary()}")
    for problem in governed["problems"]:
        click.echo(f"{path}: {problem}")
    if not (status.ok and governed["ok"]):
        raise SystemExit(1)


# ---- the optional semantic arm


@cli.command(name="backfill-vectors")
@db_option
def backfill_vectors(db_path):
    """Embed every entity for semantic search, and forget deleted ones.

    Needs the optional extra: pip install 'datasette-memory[vectors]'. New
    writes are embedded as they happen; run this once after installing the
    extra, or to repair the vectors kept beside the memory file.
    """
    from . import vectors

    if not vectors.vectors_available():
        reason = f"${vectors.NO_VECTORS_ENV} is set" if vectors.extra_installed() else "the vectors extra is not installed"
        raise click.ClickException(f"semantic search is off: {reason}. Install it with: {vectors.INSTALL_HINT}")
    path, conn = open_db(db_path)
    with click.progressbar(length=vectors.entity_count(conn), label="Embedding entities", file=sys.stderr) as bar:
        counts = vectors.backfill(conn, progress=bar.update)
    conn.close()
    click.echo(
        f"{path}: {counts['entities']} entities, {counts['embedded']} embedded, "
        f"{counts['forgotten']} deleted ones forgotten; vectors in {vectors.side_file_path_for(path)}",
        err=True,
    )
