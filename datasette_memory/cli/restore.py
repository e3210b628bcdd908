"""``restore``: a new memory file from the replica, the newest copy or as of a moment, verified before it appears."""

import json
import pathlib
from typing import Any

import click

from ..core.errors import MemoryStoreError
from ..history.file_check import CannotVerify
from ..replication.restoring import parse_moment, restore_file
from .replica_options import litestream, replica_target, s3_options
from .verify import lines


@click.command()
@click.option("--from", "url", required=True, metavar="URL", help="The replica: file:///path/to/folder or s3://bucket/path")
@click.option("--to", "destination", required=True, type=click.Path(dir_okay=False, path_type=pathlib.Path),
              help="The new memory file (restore never replaces a file)")
@click.option("--as-of", metavar="TIME|EVENT",
              help="The copy as of an ISO 8601 time (the newest upload before it), or the earliest copy that holds "
              "a ledger event  [default: the newest copy]")
@s3_options
@click.option("--keep-unverified", is_flag=True, help="Put a copy that does not verify in place all the same")
@click.option("--json", "as_json", is_flag=True, help="Print what was restored and the verify report as JSON.")
def restore(url: str, destination: pathlib.Path, as_of: str | None, s3: dict[str, Any], keep_unverified: bool,
            as_json: bool) -> None:
    """Restore the memory file from its replica into a new file, and verify it.

    The copy is restored and checked beside the new file, and appears there
    only whole and verified: an interrupted or failed restore leaves nothing.
    --as-of EVENT restores the earliest copy that holds that event. Exits 0 if
    the copy verifies, 1 if not (nothing is put in place, unless
    --keep-unverified).
    """
    target = replica_target(url, s3, "--from")
    try:
        moment = parse_moment(as_of)
    except MemoryStoreError as e:
        raise click.BadParameter(str(e).removeprefix("--as-of: "), param_hint="--as-of") from None
    binary = litestream()
    try:
        result = restore_file(binary, target, destination, moment, keep_unverified)
    except (MemoryStoreError, CannotVerify) as e:
        raise click.ClickException(str(e))
    click.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else "\n".join(described(result)))
    if not result["verify"]["ok"]:
        raise SystemExit(1)


def described(result: dict[str, Any]) -> list[str]:
    "What was restored, and what verify found, for people."
    copy = result["copy"]
    head = f"events 1 to {copy['event_id']} (newest at {copy['ts']})" if copy["event_id"] else "no events"
    moment = result["as_of"]
    asked = f" as of {moment['kind']} {moment['asked']}" if moment else " (its newest copy)"
    out = [f"Restored {result['replica']}{asked}: {head}, Litestream transaction {copy['txid']}"]
    if moment and moment.get("note"):
        out.append(f"  note: {moment['note']}")
    if result["upgraded"]:
        out.append(f"  note: the copy was written by an older datasette-memory; this version's migrations "
                   f"({', '.join(result['upgraded'])}) were applied to it before verify, as serve applies them at its start")
    out += lines(result["verify"])
    if result["placed"]:
        out.append(f"Wrote {result['file']}" + ("" if result["verify"]["ok"] else " although it does not verify (--keep-unverified)"))
    else:
        out.append(f"Nothing was written to {result['file']}: the copy does not verify (--keep-unverified writes it all the same)")
    return out
