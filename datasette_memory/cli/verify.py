"""``verify``: prove the memory file's tables match its ledger, changing nothing."""

import json
import pathlib
from typing import Any

import click

from ..history.file_check import CannotVerify, verify_file
from .options import db_option, resolve


@click.command()
@db_option
@click.option("--since-checkpoint", is_flag=True,
              help="Check only what happened after the newest checkpoint the last clean check covered.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(db_path: pathlib.Path | None, since_checkpoint: bool, as_json: bool) -> None:
    """Check the memory file against its ledger, read-only.

    Runs SQLite's integrity check, compares the schema with the migrations',
    checks each word index, walks the ledger's and the SQL audit log's hash
    chains, compares both with their head witness, replays the ledger and
    compares every memory table with the replay. Exits 0 if all is intact, 1 naming each difference (table, row,
    expected from the ledger, found), 2 if the file cannot be checked at all
    (missing, not a memory file, another schema version).
    """
    path = resolve(db_path, creating=False)
    try:
        report = verify_file(path, since_checkpoint)
    except CannotVerify as e:
        click.echo(f"Error: {e}", err=True)
        raise SystemExit(2)
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if as_json else "\n".join(lines(report)))
    if not report["ok"]:
        raise SystemExit(1)


def lines(report: dict[str, Any]) -> list[str]:
    "The report for people: one line per check, one per problem."
    out = [f"{report['file']}: {'intact' if report['ok'] else 'PROBLEMS FOUND'} ({report['mode']} check, {report['events']} events)"]
    if report.get("note"):
        out.append(f"  note: {report['note']}")
    for check in report["checks"]:
        out.append(f"  {'ok' if check['ok'] else 'FAILED'}  {check['check']}: {check['detail']}")
        for problem in check["problems"]:
            out.append(f"      {describe(problem)}")
        if check["problem_count"] > len(check["problems"]):
            out.append(f"      … and {check['problem_count'] - len(check['problems'])} more (--json lists the first ones too)")
    return out


def describe(problem: Any) -> str:
    "One difference: table, row, what the ledger expects and what was found."
    if not isinstance(problem, dict):
        return str(problem)
    row = problem["row"]
    if row is None:
        where = f"{problem['table']} (the table as a whole)"
    elif isinstance(row, int):
        where = f"{problem['table']} row {row}"
    else:
        where = f"{problem['table']} {json.dumps(row, ensure_ascii=False)}"
    return f"{where}: expected {short(problem['expected'])}, found {short(problem['found'])}"


def short(value: Any, limit: int = 300) -> str:
    text = "nothing" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"
