"""``serve`` and ``create-token``: the memory file in Datasette, and tokens for scripts and MCP over HTTP."""

import asyncio
import contextlib
import getpass
import hashlib
import io
import json
import os
import pathlib
import secrets
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any

import click
import yaml

from ..config import Config
from ..core.atomic_files import write_atomically
from ..governed.person_actions import APPROVE_ACTION, CURATE_ACTION
from .options import config_options, db_option, open_db, say_witness
from .replica_options import s3_options


@click.command()
@db_option
@click.option("-h", "--host", default="127.0.0.1", show_default=True, help="Host to listen on")
@click.option("-p", "--port", default=8001, show_default=True, type=int, help="Port to listen on")
@click.option(
    "--owner",
    default=lambda: default_owner(),
    show_default="your user name",
    help="Who the printed sign-in link signs in; the owner holds memory-approve and memory-curate",
)
@click.option(
    "--approver",
    "approvers",
    multiple=True,
    help="Also grant memory-approve to this signed-in actor id (repeatable); tokens never carry it",
)
@click.option(
    "--curator",
    "curators",
    multiple=True,
    help="Also grant memory-curate to this signed-in actor id (repeatable); tokens never carry it",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    callback=lambda ctx, param, values: allowed_host_names(values),
    help="Also answer requests whose Host is this name or address (repeatable), as behind a proxy; * answers any. "
    "Any other Host than localhost, a loopback address or --host gets 421",
)
@click.option("--public", is_flag=True, help="On a host other than this machine, let anonymous visitors read memory too")
@click.option(
    "--config",
    "extra_config",
    type=click.File("r", encoding="utf-8"),
    help="A Datasette configuration file (YAML or JSON) merged over the built-in one: an authentication plugin's "
    "accounts, permissions",
)
@click.option("--root", is_flag=True, help="Also print Datasette's own sign-in link for root, who holds every action")
@click.option(
    "--replicate-to",
    metavar="URL",
    help="Also replicate the memory file with Litestream while serving (file:///path/to/folder or s3://bucket/path), "
    "after comparing it with the replica's newest copy",
)
@click.option("--replace-replica", is_flag=True, help="With --replicate-to: replicate even over a replica that holds "
              "history this file lacks (once a person acknowledged it), or another file's replica")
@s3_options
@config_options
@click.pass_context
def serve(
    ctx: click.Context,
    db_path: pathlib.Path | None,
    host: str,
    port: int,
    owner: str,
    approvers: tuple[str, ...],
    curators: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    public: bool,
    extra_config: IO[str] | None,
    root: bool,
    replicate_to: str | None,
    replace_replica: bool,
    s3: dict[str, Any],
    config: Config,
) -> None:
    """Serve the memory file in Datasette, creating and migrating it if needed.

    Prints a sign-in link for the owner at each start; the sign-in lasts across
    restarts. On a host other than this machine, only signed-in people and API
    tokens can read memory, unless --public. With --replicate-to, Litestream
    replicates the file beside the server and stops with it.
    """
    from .replica_options import litestream, replica_target
    from .replicate import begin

    target = replica_target(replicate_to, s3, "--replicate-to") if replicate_to else None
    binary = litestream() if target else None
    path, conn = open_db(db_path)
    try:
        secret = token_secret(path)  # an unusable secret file stops the start here, before any link is printed
        click.echo(f"Memory file: {path}", err=True)
        say_witness(conn, "serve")
    finally:
        conn.close()
    replication = begin(path, target, binary, replace_replica, "serve") if target and binary else None
    with replication_stopped_last(replication):
        run_datasette(ctx, path, secret, host, port, People(owner, approvers, curators, root), allow_hosts, public,
                      extra_config, config)


class Terminated(Exception):
    "SIGTERM arrived: the server has stopped (or never started), and replication stops before the process ends."


def terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


@contextlib.contextmanager
def replication_stopped_last(replication: Any) -> Iterator[None]:
    """
    Stop ``replication`` (if any) after the server, however it stops: uvicorn, on SIGTERM, shuts down
    and then raises SIGTERM again for the handler it found, which ends the process at once unless the
    handler is this one; so the last upload is waited for, and then the process ends as SIGTERM ends it.
    """
    if replication is None:
        yield
        return
    previous = signal.signal(signal.SIGTERM, terminated)
    ended_by_signal = False
    try:
        yield
    except Terminated:
        ended_by_signal = True
    finally:
        replication.stop()
        signal.signal(signal.SIGTERM, previous)
    if ended_by_signal:
        signal.raise_signal(signal.SIGTERM)


def run_datasette(ctx: click.Context, path: pathlib.Path, secret: str, host: str, port: int, people: "People",
                  allow_hosts: tuple[str, ...], public: bool, extra_config: IO[str] | None, config: Config) -> None:
    "Print the sign-in link, and run Datasette on the memory file until it stops."
    from datasette.cli import serve as datasette_serve

    from ..plugin.resources import datasette_config

    token = secrets.token_urlsafe(24)
    anonymous_reads = public or is_loopback(host)
    settings = serve_config(
        path, config, people, hashlib.sha256(token.encode()).hexdigest(), anonymous_reads, allowed_hosts=(host, *allow_hosts)
    )
    if extra_config is not None:
        settings = merged(settings, yaml.safe_load(extra_config) or {})
    click.echo(f"Sign in as {people.owner}: http://{url_host(host)}:{port}/-/memory/sign-in?token={token}", err=True)
    if not anonymous_reads:
        click.echo(
            f"Listening on {host}: anonymous visitors cannot read memory; people sign in, scripts use API tokens "
            "(--public lets anyone read).",
            err=True,
        )
    ctx.invoke(
        datasette_serve,
        files=(str(path),),
        host=host,
        port=port,
        config=io.StringIO(json.dumps(settings)),
        metadata=io.StringIO(json.dumps(datasette_config("metadata.yml", path.stem))),
        secret=secret,
        root=people.root,
    )


# what reading takes, in Datasette's terms: refused to anonymous visitors off this machine
READ_ACTIONS = ("view-instance", "view-database", "view-database-download", "view-table", "view-query", "execute-sql")


@dataclass(frozen=True)
class People:
    """Who may do what: the owner (signed in by the printed link) and the people granted actions."""

    owner: str
    approvers: tuple[str, ...] = ()
    curators: tuple[str, ...] = ()
    root: bool = False

    def holding(self, extra: tuple[str, ...]) -> list[str]:
        "The ids allowed an action: the owner, root when enabled, and those named for it."
        return list(dict.fromkeys((self.owner, *(("root",) if self.root else ()), *extra)))


def serve_config(
    path: pathlib.Path,
    config: Config,
    people: People,
    sign_in_digest: str,
    anonymous_reads: bool,
    allowed_hosts: tuple[str, ...] = (),
) -> dict[str, Any]:
    """
    The Datasette configuration ``serve`` runs with: the built-in stored queries and
    table options, the plugin's settings, who holds the person-only actions, who
    may read, and which Host names it answers to.

    :param path: the memory file (its stem names the database)
    :param config: what the flags and environment configured
    :param people: the owner and those granted actions
    :param sign_in_digest: sha256 of this start's sign-in token
    :param anonymous_reads: whether someone not signed in may read memory
    :param allowed_hosts: names a request's Host may give besides localhost and the loopback addresses
    """
    from ..plugin.connection import PLUGIN_NAME
    from ..plugin.resources import datasette_config

    settings = datasette_config("datasette.yaml", path.stem)
    settings.setdefault("plugins", {})[PLUGIN_NAME] = {
        "database": path.stem,
        **config.to_mapping(),
        "sign_in": {"actor": people.owner, "digest": sign_in_digest},
        "allowed_hosts": list(dict.fromkeys(allowed_hosts)),
    }
    permissions = settings.setdefault("permissions", {})
    permissions[APPROVE_ACTION] = {"id": people.holding(people.approvers)}
    permissions[CURATE_ACTION] = {"id": people.holding(people.curators)}
    if not anonymous_reads:
        for action in READ_ACTIONS:
            permissions[action] = {"id": "*"}  # anyone with an id: a signed-in person or a token's actor
    return settings


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    "``base`` with ``extra`` merged over it, mappings merged key by key."
    if not isinstance(extra, dict):
        raise click.ClickException("--config: the file must hold a mapping, such as plugins: and permissions:")
    result = dict(base)
    for key, value in extra.items():
        result[key] = merged(result[key], value) if isinstance(value, dict) and isinstance(result.get(key), dict) else value
    return result


def default_owner() -> str:
    "The user running serve: the owner of the memory file, by default."
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "owner"


def is_loopback(host: str) -> bool:
    "Whether ``host`` is this machine only: localhost, 127.0.0.0/8 or ::1 (one definition, the Host check's)."
    from ..plugin import host_check

    return host_check.is_loopback(host)


def allowed_host_names(values: tuple[str, ...]) -> tuple[str, ...]:
    "The ``--allow-host`` names in canonical form, or an error naming the one that is not a host."
    from ..core.errors import InvalidInput
    from ..plugin.host_check import host_setting

    try:
        return tuple(host_setting(value) for value in values)
    except InvalidInput as e:
        raise click.BadParameter(str(e), param_hint="--allow-host") from None


def url_host(host: str) -> str:
    "The host to print in a link: a wildcard address is reached at localhost."
    return "localhost" if host in ("0.0.0.0", "::") else f"[{host}]" if ":" in host else host


def token_secret(path: pathlib.Path) -> str:
    """
    The secret that signs API tokens for this memory file: ``$DATASETTE_SECRET``,
    else one kept beside the file (created on first use, whole or not at all,
    readable by its owner only), so tokens outlive a restart.

    :param path: the memory file
    :raises click.ClickException: naming the secret file, if it is empty or cannot be read
    """
    if os.environ.get("DATASETTE_SECRET"):
        return os.environ["DATASETTE_SECRET"]
    secret_file = path.with_name(path.name + ".secret")
    if not os.path.lexists(secret_file):
        # another process starting at the same moment may create it first: then its secret is the one
        write_atomically(secret_file, secrets.token_hex(32), mode=0o600, replace=False)
    return read_secret(secret_file)


# what to do about a secret file that cannot be used
NEW_SECRET = ("delete it and a new one is made at the next start (tokens signed with the old one stop working), "
              "or set $DATASETTE_SECRET")


def read_secret(secret_file: pathlib.Path) -> str:
    "The secret kept in ``secret_file``, or an error naming the file and what to do."
    try:
        secret = secret_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) else "it is not text"
        raise click.ClickException(
            f"{secret_file}: cannot read the secret that signs API tokens ({reason}); give this user read access "
            f"to it, or {NEW_SECRET}"
        )
    if not secret:
        raise click.ClickException(
            f"{secret_file}: the secret that signs API tokens is empty (was its creation interrupted?); {NEW_SECRET}"
        )
    return secret


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
