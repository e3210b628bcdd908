"""``verify``: prove the memory file's tables match its ledger, changing nothing."""

import json
import pathlib
from typing import Any

import click

from ..history.file_check import CannotVerify, verify_file
from ..replication import ReplicationError
from ..replication.litestream import private_folder
from ..replication.off_machine import check_against
from ..replication.replica_copies import Replica
from .options import db_option, resolve
from .replica_options import litestream, replica_target, s3_options


@click.command()
@db_option
@click.option("--since-checkpoint", is_flag=True,
              help="Check only what happened after the newest checkpoint the last clean check covered.")
@click.option("--against", metavar="URL",
              help="Also compare the ledger with the replica's, event by event: its newest copy and each snapshot it "
              "keeps (file:///path/to/folder or s3://bucket/path)")
@s3_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(db_path: pathlib.Path | None, since_checkpoint: bool, against: str | None, s3: dict[str, Any], as_json: bool) -> None:
    """Check the memory file against its ledger, read-only.

    Runs SQLite's integrity check, compares the schema with the migrations',
    checks each word index, walks the ledger's and the SQL audit log's hash
    chains, compares both with their head witness, replays the ledger and
    compares every memory table with the replay. With --against, compares
    the ledger with the off-machine replica's too: a local ledger shorter than
    the replica's or rewritten is reported (and recorded in the witness); a
    replica behind is normal. Exits 0 if all is intact, 1 naming each difference (table, row,
    expected from the ledger, found), 2 if the file (or the replica) cannot be checked at all
    (missing, not a memory file, another schema version).
    """
    path = resolve(db_path, creating=False)
    try:
        replica = compared_with_replica(path, against, s3) if against else None
        report = verify_file(path, since_checkpoint)
    except (CannotVerify, ReplicationError) as e:
        click.echo(f"Error: {e}", err=True)
        raise SystemExit(2)
    if replica is not None:
        report["checks"].append({"check": "off-machine replica", "ok": replica["ok"], "detail": replica["summary"],
                                 "problems": replica["problems"], "problem_count": len(replica["problems"])})
        report["ok"] = report["ok"] and replica["ok"]
        report["replica"] = replica
    click.echo(json.dumps(report, indent=2, ensure_ascii=False) if as_json else "\n".join(lines(report)))
    if not report["ok"]:
        raise SystemExit(1)


def compared_with_replica(path: pathlib.Path, url: str, s3: dict[str, Any]) -> dict[str, Any]:
    """
    The file against the replica at ``url`` (its newest copy and its snapshots), before verify runs, so that
    what the file lost, recorded in its witness, keeps this check from being recorded as clean.
    """
    target = replica_target(url, s3, "--against")
    binary = litestream()
    if not path.exists():
        raise CannotVerify(f"{path}: no such file; give the path of an existing memory file (nothing was created)")
    with private_folder() as folder:
        return check_against(path, Replica(binary, target, folder), noticed_by=f"verify --against {url}", history=True)


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
