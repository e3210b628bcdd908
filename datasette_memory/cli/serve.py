"""``serve`` and ``create-token``: the memory file in Datasette, and tokens for scripts and MCP over HTTP."""

import asyncio
import io
import json
import os
import pathlib
import secrets

import click

from ..config import Config
from ..governed.person_actions import APPROVE_ACTION
from .options import config_options, db_option, open_db


@click.command()
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
@config_options
@click.pass_context
def serve(ctx: click.Context, db_path: pathlib.Path | None, host: str, port: int, approvers: tuple[str, ...], root: bool, config: Config) -> None:
    "Serve the memory file in Datasette, creating and migrating it if needed."
    from datasette.cli import serve as datasette_serve

    from ..plugin.connection import PLUGIN_NAME
    from ..plugin.resources import datasette_config

    path, conn = open_db(db_path)
    conn.close()
    click.echo(f"Memory file: {path}", err=True)
    datasette = datasette_config("datasette.yaml", path.stem)
    datasette.setdefault("plugins", {})[PLUGIN_NAME] = {"database": path.stem, **config.to_mapping()}
    if approvers:
        datasette.setdefault("permissions", {})[APPROVE_ACTION] = {"id": list(approvers)}
    ctx.invoke(
        datasette_serve,
        files=(str(path),),
        host=host,
        port=port,
        config=io.StringIO(json.dumps(datasette)),
        metadata=io.StringIO(json.dumps(datasette_config("metadata.yml", path.stem))),
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


@click.command(name="create-token")
@click.argument("actor")
@db_option
@click.option("--expires-after", type=int, help="Seconds until the token expires; default never")
def create_token(actor: str, db_path: pathlib.Path | None, expires_after: int | None) -> None:
    """Create a Datasette API token for ACTOR, for MCP over HTTP and the JSON API.

    The token works with `datasette-memory serve` on the same memory file. Tokens
    never carry memory-approve: governance needs a signed-in person.
    """
    from datasette.app import Datasette

    path, conn = open_db(db_path)
    conn.close()
    datasette = Datasette(secret=token_secret(path))
    click.echo(asyncio.run(datasette.create_token(actor, expires_after=expires_after)))
