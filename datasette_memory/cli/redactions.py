"""``redactions``: the file's redactions, and the older copies (snapshots, the replica's history) that still hold a text one removed."""

import json
import pathlib
from typing import Any

import click

from ..core.errors import MemoryStoreError
from ..history.file_check import CannotVerify
from ..replication.redacted_copies import survey
from ..sqltools.snapshots import list_snapshots, snapshot_folder
from .options import SNAPSHOT_DIR_ENV, db_option, open_db, resolve
from .replica_options import litestream, replica_target, s3_options


@click.command()
@db_option
@click.option("--replica", "url", metavar="URL",
              help="Check the replica too: file:///path/to/folder or s3://bucket/path, as replicate --to names it")
@s3_options
@click.option("--snapshot-dir", type=click.Path(file_okay=False, path_type=pathlib.Path), envvar=SNAPSHOT_DIR_ENV,
              help="Where the file's snapshots are  [default: <file stem>-snapshots beside the memory file]")
@click.option("--delete-older", is_flag=True,
              help="Delete the snapshots that hold a redacted text, and start the replica anew from the file as it is "
              "(its history from before is removed; replication must be stopped)")
@click.option("--json", "as_json", is_flag=True, help="Print the redactions and the copies as JSON.")
def redactions(db_path: pathlib.Path | None, url: str | None, s3: dict[str, Any], snapshot_dir: pathlib.Path | None,
               delete_older: bool, as_json: bool) -> None:
    """List the file's redactions, and the older copies that still hold a text one removed.

    Each redaction (this machine's, or a peer's that arrived by sync) names the
    strings that held its text by their sha256, so the file's snapshots and,
    with --replica, the replica's history from before the redaction (restored
    with Litestream) are checked exactly, without the text. --delete-older
    deletes those snapshots, and removes the replica's files and Litestream's
    local state, then uploads the file as it is now: the replica restores, but
    no longer to a moment before. Run it with replication stopped.
    """
    target = replica_target(url, s3, "--replica") if url else None
    binary = litestream() if target else None
    path = resolve(db_path, creating=False)
    if not path.exists():
        raise click.ClickException(f"{path}: no such file; give the memory file with --db")
    open_db(path)[1].close()  # migrated to this version, as every command that reads it
    snapshots = list_snapshots(snapshot_folder(path, snapshot_dir), path.stem)
    try:
        result = survey(path, snapshots, binary, target, delete_older, say=lambda line: click.echo(line, err=True))
    except (MemoryStoreError, CannotVerify) as e:
        raise click.ClickException(str(e))
    click.echo(json.dumps(result, indent=2, ensure_ascii=False) if as_json else "\n".join(described(result, delete_older)))


def described(result: dict[str, Any], delete_older: bool) -> list[str]:
    "The redactions and the copies holding their texts, for people."
    found = result["redactions"]
    if not found:
        return [f"No redactions in {result['file']}."]
    out = [f"{len(found)} redaction{'' if len(found) == 1 else 's'} in {result['file']}:"]
    for redaction in found:
        out += redaction_lines(redaction)
    out += outcome_lines(result, delete_older)
    return out


def redaction_lines(redaction: dict[str, Any]) -> list[str]:
    "One redaction, and the copies still holding its texts."
    origin = "" if redaction["own"] else f", from a peer (arrived {redaction['received_at']})"
    texts = f"{redaction['texts']} text{'' if redaction['texts'] == 1 else 's'}"
    out = [f"{redaction['redaction']}: {redaction['ts']} by {redaction['actor']}{origin}, project {redaction['project']}, "
           f"target {redaction['target']}, {texts}: {redaction['reason']}"]
    snapshots = redaction["snapshots"]
    out.append(f"  snapshots holding a text it removed: {len(snapshots)}" + "".join(f"\n    {s}" for s in snapshots))
    replica = redaction.get("replica")
    if replica is not None:
        out += replica_lines(replica)
    return out


def replica_lines(replica: dict[str, Any]) -> list[str]:
    "The replica's history from before one redaction."
    reached = f"it reached the replica at transaction {replica['reached']}" if replica["reached"] else \
        "it has not reached the replica (every file is from before it)"
    if not replica["files"]:
        return [f"  replica: {reached}; no file is from before it"]
    if replica["error"]:
        check = f"its copy at transaction {replica['checked_at']} {replica['error']}"
    elif replica["checked_at"]:
        check = (f"its copy at transaction {replica['checked_at']} holds {replica['held']} of the strings that held the text"
                 if replica["held"] else f"its copy at transaction {replica['checked_at']} holds none of its texts")
    else:
        check = "no copy from before it could be restored"
    out = [f"  replica: {reached}; {len(replica['files'])} LTX files from before it ({check}):"]
    for f in replica["files"]:
        out.append(f"    level {f['level']}, transactions {f['min_txid']} to {f['max_txid']}, {f['timestamp']}, {f['size']:,} bytes")
    return out


def outcome_lines(result: dict[str, Any], delete_older: bool) -> list[str]:
    "What holds a redacted text, and what was deleted or what would delete it."
    holding = [s for s in result["snapshots"] if s["holds"]]
    replica = result["replica"]
    out = []
    for path, error in ((s["path"], s.get("error")) for s in holding if s.get("error")):
        out.append(f"Snapshot {path} {error}: counted as holding a redacted text")
    if replica:
        for point, why in replica["damaged"].items():
            out.append(f"The replica's copy at transaction {point} cannot be restored ({why})")
    state = result["local_state"]
    if state["files"]:
        out.append(f"Litestream's local state {state['path']} keeps {state['files']} LTX files ({state['bytes']:,} bytes): "
                   "the same history the replica was sent")
    if delete_older:
        deleted = [s for s in holding if s["deleted"]]
        out.append(f"Deleted {len(deleted)} snapshot{'' if len(deleted) == 1 else 's'}.")
        if replica and replica["started_anew"]:
            done, newest = replica["started_anew"], replica["newest"]
            clean = "holds none of the redacted texts" if not newest.get("error") and not any(newest["held"].values()) \
                else f"still holds a redacted text: {newest.get('error') or newest['held']}"
            out.append(f"Replica started anew: {done['removed']} files removed, Litestream's local state reset, the file "
                       f"uploaded (event {done['replica_event']}); its newest copy (transaction {newest['txid']}) {clean}.")
        elif replica:
            out.append("The replica's history holds no redacted text: it was left as it is.")
    elif holding or (replica and replica["holds"]):
        out.append("--delete-older deletes these snapshots and starts the replica anew from the file (with replication stopped).")
    return out
