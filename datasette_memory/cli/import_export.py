"""``import`` and ``export``: the official memory server's JSONL file."""

import pathlib
import sys
from typing import IO

import click

from ..core.atomic_files import write_atomically
from ..core.validation import DEFAULT_PROJECT
from ..graph.jsonl import export_lines, import_lines
from ..memory import Memory
from .options import db_option, environment_config, open_db, wait_for_vectors


def project_option(help_text: str) -> click.Option:
    return click.option("--project", default=DEFAULT_PROJECT, show_default=True, help=help_text)


@click.command(name="import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@db_option
@project_option("The project to import into")
@click.option("--actor", default="import", show_default=True, help="Who the ledger records as making the changes")
@click.option("--allow-secrets", is_flag=True, help="Import text that looks like a credential instead of skipping its line")
def import_(file: IO[str], db_path: pathlib.Path | None, project: str, actor: str, allow_secrets: bool) -> None:
    """Import the official memory server's JSONL file (FILE, or - for stdin).

    Importing the same file again changes nothing; bad lines are reported by
    number and everything else is kept.
    """
    path, conn = open_db(db_path, door="import")
    memory = Memory(conn, project=project, actor=actor, allow_secrets=allow_secrets, config=environment_config())
    lines = file.read().splitlines()
    with click.progressbar(length=len(lines), label="Importing", file=sys.stderr) as bar:
        report = import_lines(memory, lines, progress=bar.update)
    for number, reason in report.bad_lines:
        click.echo(f"line {number}: {reason}", err=True)
    click.echo(f"{path} [{project}]: {report.summary()}", err=True)
    wait_for_vectors(memory)


@click.command()
@db_option
@project_option("The project to export")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=pathlib.Path),
    help="Write this file instead of stdout; it appears whole, or not at all",
)
def export(db_path: pathlib.Path | None, project: str, output: pathlib.Path | None) -> None:
    "Export a project as the official memory server's JSONL file."
    path, conn = open_db(db_path)
    text = "\n".join(export_lines(Memory(conn, project=project).read_graph()))
    if output is None or str(output) == "-":
        with click.open_file("-", "w", encoding="utf-8") as stdout:
            stdout.write(text)
            stdout.flush()
    else:
        write_atomically(output, text)
