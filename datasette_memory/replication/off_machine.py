"""The replica as the witness a local writer cannot reach: the local ledger compared with the replica's, event by event.

The head witness and the last clean check live beside the memory file, where
whoever can rewrite the file can rewrite them too. The replica lives elsewhere.
A copy restored from it is compared with the local file, for the ledger and the
SQL audit log alike, by id and hash: the first row where they differ, and
where each ends. A replica behind the local file is normal (it catches up
within seconds while replication runs); a local log that ends before the
replica's (**shorter**) or differs from it (**diverges**) lost history the
replica still holds. That finding is recorded in the head witness, as any other
divergence, keyed by the first row that differs and the hash the replica holds
there, so it stands, and is reported by every door, until a person
acknowledges it; the same loss found again (in another copy, or after the
acknowledgement) is the same record.

Litestream streams every committed change, a rewrite made while it runs
included, so the replica's newest copy follows such a rewrite; its history does
not. With ``history``, the copies at the replica's snapshots (daily, kept as
long as Litestream's retention) are compared too: whatever was in the file when
a snapshot was taken must still be in it.
"""

import pathlib
import sqlite3
from typing import Any

from ..core import witness
from ..core.log_heads import LOG_NAMES, LOGS
from ..history.file_check import open_read_only, read_only_uri
from .replica_copies import Copy, Replica

LOSSES = ("shorter", "diverges")  # what the local file lost, which the witness records
SEVERITY = ["agrees", "replica behind", "empty", "shorter", "diverges", "other file"]
ACKNOWLEDGE_PAGE = "/-/memory/integrity"


def check_against(memory_path: str | pathlib.Path, replica: Replica, noticed_by: str, history: bool = False) -> dict[str, Any]:
    """
    Compare the memory file at ``memory_path`` with the replica's newest copy
    (and, with ``history``, each snapshot's copy); record what the file lost in its witness.

    :param noticed_by: who compared, as the witness records it (``verify --against s3://...``)
    :return: ``{replica, status, ok, summary, comparisons, problems}``; each problem is
        ``{table, row, expected, found}``, as ``verify`` lists them
    :raises ReplicationError: if the replica cannot be read
    :raises CannotVerify: if the local file cannot be opened
    """
    conn = open_read_only(pathlib.Path(memory_path))
    try:
        newest = replica.newest()
        if newest is None:
            return report(replica, [], conn)
        comparisons = [compare(conn, newest, "its newest copy")]
        newest.path.unlink()
        if history:
            comparisons += snapshot_comparisons(conn, replica, newest.txid)
        record(conn, pathlib.Path(memory_path), comparisons, noticed_by)
        return report(replica, comparisons, conn)
    finally:
        conn.close()


def snapshot_comparisons(conn: sqlite3.Connection, replica: Replica, newest_txid: str) -> list[dict[str, Any]]:
    "The file against the copy at each of the replica's snapshots (but the newest copy's own)."
    comparisons = []
    for snapshot in replica.snapshots():
        if snapshot["max_txid"] == newest_txid:
            continue
        copy = replica.restore(txid=str(snapshot["max_txid"]))
        comparisons.append(compare(conn, copy, f"its snapshot of {snapshot.get('timestamp')}"))
        copy.path.unlink()
    return comparisons


def compare(conn: sqlite3.Connection, copy: Copy, label: str) -> dict[str, Any]:
    """
    The file behind ``conn`` against the restored ``copy``, log by log.

    :param label: which copy it is, for people (``its newest copy``)
    :return: ``{copy, replica, status, logs}``; each log ``{log, status, local_end, replica_end,
        first_difference, local_hash, replica_hash, detail}``
    """
    conn.execute("ATTACH DATABASE ? AS replica", [read_only_uri(copy.path)])
    try:
        machines = [conn.execute(f"SELECT value FROM {schema}.memory_meta WHERE key = 'machine_id'").fetchone()
                    for schema in ("main", "replica")]
        if machines[0] != machines[1]:
            detail = (f"the replica holds another memory file (machine {(machines[1] or ['?'])[0]}; this file is "
                      f"machine {(machines[0] or ['?'])[0]}): replicate each file to a path of its own")
            logs = [{"log": log, "status": "other file", "detail": detail} for log in LOGS]
        else:
            logs = [compare_log(conn, log) for log in LOGS]
    finally:
        conn.execute("DETACH DATABASE replica")
    return {"copy": label, "replica": copy.to_dict(), "status": worst(log["status"] for log in logs), "logs": logs}


def compare_log(conn: sqlite3.Connection, log: str) -> dict[str, Any]:
    "One log here against the attached replica's: where each ends and the first row that differs."
    local_end, replica_end = (conn.execute(f"SELECT coalesce(max(id), 0) FROM {schema}.{log}").fetchone()[0]
                              for schema in ("main", "replica"))
    first = conn.execute(FIRST_DIFFERENCE.format(log=log), [replica_end, local_end]).fetchone()[0]
    if first is None and local_end < replica_end:
        first = local_end + 1
    hashes = [conn.execute(f"SELECT hash FROM {schema}.{log} WHERE id = ?", [first]).fetchone() if first else None
              for schema in ("main", "replica")]
    outcome = {"log": log, "local_end": local_end, "replica_end": replica_end, "first_difference": first,
               "local_hash": (hashes[0] or [None])[0], "replica_hash": (hashes[1] or [None])[0]}
    outcome["status"] = ("agrees" if first is None and local_end == replica_end else "replica behind" if first is None
                         else "shorter" if first == local_end + 1 else "diverges")
    outcome["detail"] = describe(conn, outcome)
    return outcome


# the first id, up to where both logs reach, that one lacks or holds with another hash
FIRST_DIFFERENCE = """
    SELECT min(id) FROM (
        SELECT l.id FROM main.{log} l LEFT JOIN replica.{log} r ON r.id = l.id
        WHERE l.id <= ? AND (r.id IS NULL OR r.hash != l.hash)
        UNION ALL
        SELECT r.id FROM replica.{log} r LEFT JOIN main.{log} l ON l.id = r.id
        WHERE r.id <= ? AND l.id IS NULL
    )
"""


def describe(conn: sqlite3.Connection, outcome: dict[str, Any]) -> str:
    "A log's outcome in one sentence, naming the first row that differs."
    name, noun = LOG_NAMES[outcome["log"]], LOGS[outcome["log"]][2]
    local_end, replica_end, first = outcome["local_end"], outcome["replica_end"], outcome["first_difference"]
    if outcome["status"] == "agrees":
        return f"{name} here and in the replica are the same, {noun}s 1 to {local_end}"
    if outcome["status"] == "replica behind":
        return (f"the replica holds {name} up to {noun} {replica_end} of {local_end}: {local_end - replica_end} not "
                "replicated yet, which is normal (it catches up within seconds while replication runs)")
    if outcome["status"] == "shorter":
        return (f"{name} here ends at {noun} {local_end}, but the replica holds {noun}s up to {replica_end}: {noun}s "
                f"{first} to {replica_end} are missing from this file (removed from its end, or it is an older copy)")
    return (f"{noun} {first} of {name} here is not the replica's ({side(conn, outcome, 'main')} here, "
            f"{side(conn, outcome, 'replica')} in the replica, which holds {noun}s up to {replica_end}; this file up to "
            f"{local_end}): {name} was rewritten from {noun} {first}, here or in the replica")


def side(conn: sqlite3.Connection, outcome: dict[str, Any], schema: str) -> str:
    "The differing row on one side: its hash, and for an event what it was."
    first, log = outcome["first_difference"], outcome["log"]
    row_hash = outcome["local_hash" if schema == "main" else "replica_hash"]
    if row_hash is None:
        return "missing"
    if log != "events":
        return f"hash {row_hash[:12]}"
    kind, target, actor = conn.execute(f"SELECT kind, target, actor FROM {schema}.events WHERE id = ?", [first]).fetchone()
    return f"{kind} {str(target)[:40]!r} by {str(actor)[:40]}, hash {row_hash[:12]}"


def worst(statuses: Any) -> str:
    "The most serious of ``statuses``."
    return max(statuses, key=SEVERITY.index, default="agrees")


def losses(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    "What the file lost, as the witness records a divergence: ``{log, row, hash, status, detail}``, each once."
    found: dict[tuple[str, int, str], dict[str, Any]] = {}
    for comparison in comparisons:
        for log in comparison["logs"]:
            if log["status"] in LOSSES:
                key = (log["log"], log["first_difference"], log["replica_hash"] or "")
                found.setdefault(key, {"log": key[0], "row": key[1], "hash": key[2], "status": log["status"],
                                       "detail": f"{log['detail']} (seen in {comparison['copy']})"})
    return list(found.values())


def record(conn: sqlite3.Connection, memory_path: pathlib.Path, comparisons: list[dict[str, Any]], noticed_by: str) -> None:
    "Record what the file lost in its head witness (a loss recorded before, acknowledged or not, is not recorded twice)."
    lost = losses(comparisons)
    if lost:
        witness.record(memory_path, conn, lost, noticed_by)


def acknowledged_losses(memory_path: pathlib.Path) -> dict[tuple[Any, Any, Any], dict[str, Any]]:
    "The divergences a person acknowledged, by what they are of (log, row, hash)."
    recorded = (witness.read(memory_path) or {}).get("divergences", [])
    return {witness.divergence_key(d): d for d in recorded if isinstance(d, dict) and d.get("acknowledged")}


def report(replica: Replica, comparisons: list[dict[str, Any]], conn: sqlite3.Connection) -> dict[str, Any]:
    "The comparisons for every door: a status, whether all is well, one line, and the problems as verify lists them."
    path = pathlib.Path(witness.database_path(conn))
    acknowledged = acknowledged_losses(path)
    problems: list[dict[str, Any]] = []
    waived: list[dict[str, Any]] = []
    for loss in losses(comparisons):
        (waived if witness.divergence_key(loss) in acknowledged else problems).append(loss)
    others = [c for c in comparisons if c["status"] == "other file"]
    status = worst(c["status"] for c in comparisons) if comparisons else "empty"
    listed = [problem(loss) for loss in problems] + [problem(log) for c in others for log in c["logs"][:1]]
    return {
        "replica": replica.target.url,
        "status": status,
        "ok": not listed,
        "acknowledged": waived,
        "summary": summary(replica, comparisons, status, listed, waived),
        "comparisons": comparisons,
        "problems": listed,
    }


def problem(outcome: dict[str, Any]) -> dict[str, Any]:
    "A loss (or another file) as verify lists a difference."
    return {"table": outcome["log"], "row": outcome.get("row"), "expected": "what the off-machine replica holds",
            "found": f"{outcome['status']}: {outcome['detail']}"}


def summary(replica: Replica, comparisons: list[dict[str, Any]], status: str, listed: list[dict[str, Any]],
            waived: list[dict[str, Any]]) -> str:
    "One line: all is well, or the first thing wrong and what to do."
    where = replica.target.url
    if listed:
        more = f" (and {len(listed) - 1} more)" if len(listed) > 1 else ""
        return (f"TAMPERING SUSPECTED: the off-machine replica {where} disagrees with this file: {listed[0]['found']}{more}. "
                f"Restore the replica's copy with `datasette-memory restore --from {where} --to NEW_FILE`; a person "
                f"acknowledges it, with a reason, at {ACKNOWLEDGE_PAGE}")
    if not comparisons:
        return f"{where} is empty: nothing to compare yet; replication fills it"
    newest = comparisons[0]
    events = next(log for log in newest["logs"] if log["log"] == "events")
    snapshots = sum(c["status"] in ("agrees", "replica behind") for c in comparisons[1:])
    more = f"; {'a snapshot agrees' if snapshots == 1 else f'{snapshots} snapshots agree'} too" if snapshots else ""
    if waived:
        return (f"{where} holds history this file lacks (from event {waived[0]['row']}: {waived[0]['status']}); "
                f"a person acknowledged it{more}")
    if events["status"] == "replica behind":
        return (f"{where} is {events['local_end'] - events['replica_end']} events behind this file (it holds events up to "
                f"{events['replica_end']} of {events['local_end']}), which is normal while replication catches up{more}")
    return f"{where} holds this file's ledger as it is, events 1 to {events['local_end']}{more}"


def refusal(found: dict[str, Any], replace: bool) -> str | None:
    """
    Why replication must not start over this replica, or None if it may: a
    replica of another file, or one holding history this file lacks, is
    replicated over only when the person starting it says so (``replace``),
    and a loss only after a person acknowledged it.
    """
    if found["status"] == "other file" and not replace:
        return (f"{found['replica']} holds the replica of another memory file; replicate this one to a path of its own "
                "(or pass --replace-replica to replace that replica)")
    if found["status"] not in LOSSES:
        return None
    if not found["ok"]:
        return (f"{found['summary']}. Replication did not start: it would replace that history in the replica. If this "
                f"file is the one to keep, a person acknowledges the divergence at {ACKNOWLEDGE_PAGE} (serve without "
                "--replicate-to), then replication starts with --replace-replica")
    if not replace:
        return (f"{found['summary']}. Replication did not start: it would replace that history in the replica; pass "
                "--replace-replica to replicate this file over it, or replicate to another path")
    return None

