"""``sync``, ``bundle``, ``share`` and ``unshare``: memory shared between machines through the ledger."""

import json
import os
import pathlib

import click

from ..memory import Memory
from ..sync import SyncRefused
from ..sync.shared import share as share_project
from ..sync.shared import shared_projects
from ..sync.shared import unshare as unshare_project
from .options import db_option, environment_config, open_db, say_witness, wait_for_vectors

TOKEN_ENV = "DATASETTE_MEMORY_TOKEN"


def project_filter(function):
    return click.option("--project", help="Only this project (it must be shared); default every shared project")(function)


def opened(db_path: pathlib.Path | None, door: str) -> Memory:
    "The memory file, refused if it no longer holds what its witness saw (its events would spread a rewritten history)."
    path, conn = open_db(db_path)
    if not say_witness(conn, door):
        conn.close()
        raise click.ClickException(
            f"{path}: the file differs from what its witness saw; run datasette-memory verify, and sync once a person "
            "has acknowledged it (nothing was synced)"
        )
    return Memory(conn, actor="sync", config=environment_config())


@click.command()
@click.argument("peer")
@db_option
@project_filter
@click.option("--token", envvar=TOKEN_ENV, help=f"The hub's API token (from create-token on the hub), or ${TOKEN_ENV}")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def sync(peer: str, db_path: pathlib.Path | None, project: str | None, token: str | None, as_json: bool) -> None:
    """Exchange ledger events with PEER: a hub's URL or a bundle file.

    Events move as a set union keyed on their origin (machine, clock); each side
    applies the other's in one order every peer computes alike, so all end with
    the same memory. Only shared projects leave this machine (see share). With a
    bundle, the events it holds are taken and the union written back to it.
    Running it again changes nothing.
    """
    memory = opened(db_path, "sync")
    if project is not None and project not in shared_projects(memory.conn):
        raise click.ClickException(f"{project} is not shared on this machine: datasette-memory share {project} first "
                                   "(only shared projects sync; nothing was synced)")
    try:
        if peer.startswith(("http://", "https://")):
            from ..sync.hub import sync_hub

            if not token:
                raise click.ClickException(f"syncing with a hub needs its API token: --token or ${TOKEN_ENV} "
                                           "(create one on the hub with datasette-memory create-token ACTOR)")
            report = sync_hub(memory, peer, token, project)
        else:
            from ..sync.bundle import sync_bundle

            report = sync_bundle(memory, pathlib.Path(peer), project)
    except SyncRefused as e:
        raise click.ClickException(str(e))
    wait_for_vectors(memory)
    memory.close()
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.summary())


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@db_option
@project_filter
def bundle(path: pathlib.Path, db_path: pathlib.Path | None, project: str | None) -> None:
    """Write a new bundle at PATH: the events of this file's shared projects, for another machine to sync with.

    Other projects' events go in as opaque links of this machine's chain (no text).
    """
    from ..sync.bundle import make_bundle

    memory = opened(db_path, "bundle")
    try:
        count = make_bundle(memory, path, project)
    except SyncRefused as e:
        raise click.ClickException(str(e))
    memory.close()
    click.echo(f"{path}: {count} events")


@click.command()
@click.argument("project")
@db_option
@click.option("--actor", default=lambda: os.environ.get("USER", "local"), show_default="$USER",
              help="Who shared it, recorded with the mark")
def share(project: str, db_path: pathlib.Path | None, actor: str) -> None:
    """Share PROJECT: its events leave this machine on every sync from now on (its older ones too).

    Foreign events of PROJECT held already are applied now.
    """
    from ..sync.exchange import apply_pending

    path, conn = open_db(db_path)
    changed = share_project(conn, project, actor)
    report = apply_pending(Memory(conn, actor="sync", config=environment_config()), "share", project)
    conn.close()
    state = "shared" if changed else "was shared already"
    click.echo(f"{path}: {project} {state}" + (f"; {report.applied} local changes applied from events held" if report.applied else ""))


@click.command()
@click.argument("project")
@db_option
def unshare(project: str, db_path: pathlib.Path | None) -> None:
    """Keep PROJECT on this machine: its events no longer leave it (what left before stays where it went)."""
    path, conn = open_db(db_path)
    changed = unshare_project(conn, project)
    conn.close()
    click.echo(f"{path}: {project} " + ("is private now" if changed else "was not shared"))
