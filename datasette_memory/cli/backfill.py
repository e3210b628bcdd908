"""``backfill-vectors``: embed every entity for the optional semantic arm."""

import os
import pathlib
import sys

import click

from .. import vectors
from ..vectors.index import backfill, entity_count
from ..vectors.side_file import side_file_path_for
from .options import NO_VECTORS_ENV, db_option, open_db, search_settings


@click.command(name="backfill-vectors")
@db_option
def backfill_vectors(db_path: pathlib.Path | None) -> None:
    """Embed every entity for semantic search, and forget deleted ones.

    Needs the optional extra: pip install 'datasette-memory[vectors]'. New
    writes are embedded as they happen; run this once after installing the
    extra, or to repair the vectors kept beside the memory file.
    """
    if not search_settings(os.environ).semantic_on():
        reason = f"${NO_VECTORS_ENV} is set" if vectors.extra_installed() else "the vectors extra is not installed"
        raise click.ClickException(f"semantic search is off: {reason}. Install it with: {vectors.INSTALL_HINT}")
    path, conn = open_db(db_path)
    with click.progressbar(length=entity_count(conn), label="Embedding entities", file=sys.stderr) as bar:
        counts = backfill(conn, progress=bar.update)
    conn.close()
    click.echo(
        f"{path}: {counts['entities']} entities, {counts['embedded']} embedded, "
        f"{counts['forgotten']} deleted ones forgotten; vectors in {side_file_path_for(path)}",
        err=True,
    )
