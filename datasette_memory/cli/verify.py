"""``verify``: the ledger's hash chain, and claims and facts against it."""

import pathlib

import click

from ..memory import Memory
from .options import db_option, open_db


@click.command()
@db_option
def verify(db_path: pathlib.Path | None) -> None:
    """Check the ledger's hash chain, and claims and facts against it.

    Exits 0 with a one-line summary if all is intact, 1 naming the first broken
    event and every claim or fact the ledger does not account for.
    """
    path, conn = open_db(db_path)
    memory = Memory(conn)
    status, governed = memory.verify_chain(), memory.governed.verify_governed()
    memory.close()
    click.echo(f"{path}: {status.summary()}")
    for problem in governed["problems"]:
        click.echo(f"{path}: {problem}")
    if not (status.ok and governed["ok"]):
        raise SystemExit(1)
