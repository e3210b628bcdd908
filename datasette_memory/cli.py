"""The ``datasette-memory`` command."""

import io
import json
import pathlib

import click
import yaml

from .database import ENV_VAR, connect, default_db_path
from .errors import SchemaTooNewError
from .ledger import verify_chain
from .resources import resource_path


def db_option(function):
    "The ``--db`` option every command shares."
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=pathlib.Path),
        help=f"The memory file. Default: ${ENV_VAR}, else {default_db_path()}",
    )(function)


def open_db(db_path):
    "Open and migrate the memory file, or exit with the reason it cannot be."
    path = (db_path or default_db_path()).expanduser().resolve()
    try:
        return path, connect(path)
    except SchemaTooNewError as e:
        raise click.ClickException(f"{path}: {e}")


@click.group()
@click.version_option(package_name="datasette-memory")
def cli():
    "Memory for coding agents in one SQLite file."


@cli.command()
@db_option
@click.option("-h", "--host", default="127.0.0.1", show_default=True, help="Host to listen on")
@click.option("-p", "--port", default=8001, show_default=True, type=int, help="Port to listen on")
@click.pass_context
def serve(ctx, db_path, host, port):
    "Serve the memory file in Datasette, creating and migrating it if needed."
    from datasette.cli import serve as datasette_serve

    path, conn = open_db(db_path)
    conn.close()
    click.echo(f"Memory file: {path}", err=True)
    ctx.invoke(
        datasette_serve,
        files=(str(path),),
        host=host,
        port=port,
        config=io.StringIO(json.dumps(datasette_config("datasette.yaml", path.stem))),
        metadata=io.StringIO(json.dumps(datasette_config("metadata.yml", path.stem))),
        settings=(("plugins.datasette-memory.database", path.stem),),
    )


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


@cli.command()
@db_option
def verify(db_path):
    "Check the ledger's hash chain: exit 0 if intact, 1 naming the first broken event."
    path, conn = open_db(db_path)
    status = verify_chain(conn)
    conn.close()
    click.echo(f"{path}: {status.summary()}")
    if not status.ok:
        raise SystemExit(1)
