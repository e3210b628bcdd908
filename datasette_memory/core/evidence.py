"""What the records kept outside the memory file say of it, for every door, and a person's acknowledgement.

Two records beside the file saw its logs' heads: the head witness
(:mod:`.witness`, moved on by every write) and the last clean check
(:mod:`.last_check`, by ``verify``). :func:`report` compares the file with
both in a few indexed lookups, so the doors can afford it where it matters: a
server's or hook's start, the resume context, the overview, the ``verify_chain``
tool. What it finds wrong is recorded in the witness, where it stands, whatever
is written later, until a person acknowledges it with a reason
(:func:`acknowledge`): an event in the ledger, after which the file as it is
then is what later checks compare with.
"""

import sqlite3
from typing import Any

from . import last_check, witness
from .database import write_transaction
from .errors import InvalidInput
from .ledger import Caller, append_event, event_dict
from .log_heads import as_problem

PROBLEMS_LISTED = 5  # in a report: the rest are counted
DIVERGENCES_LISTED = 100  # in a state: the newest, the rest counted
ACKNOWLEDGE_PAGE = "/-/memory/integrity"  # where a person acknowledges, in Datasette


def report(conn: sqlite3.Connection, noticed_by: str | None = None) -> dict[str, Any]:
    """
    The file behind ``conn`` against its head witness and the last clean check.

    :param noticed_by: record what is found wrong in the witness, as found by this
        (a door's start, a resume context); None to record nothing
    :return: ``{ok, witness, last_check, summary, problems, problem_count, acknowledged}``:
        ``witness`` is the witness's status (see :func:`.witness.check`), ``last_check``
        ``agrees``, ``none`` or what differs; ``problems`` are the first few, ``{table, row, expected, found}``
    """
    path = witness.database_path(conn)
    if not path:
        return {"ok": True, "witness": "no witness", "last_check": "none", "summary": "an in-memory file has no witness",
                "problems": [], "problem_count": 0, "acknowledged": 0}
    found = witness.check(conn, path, noticed_by)
    outcomes = last_check.compare(conn, path)
    broken = [outcome for outcome in outcomes if outcome["status"] != "agrees"]
    if broken and noticed_by:
        witness.record(path, conn, broken, noticed_by)
    problems = found["problems"] + [as_problem(outcome, last_check.SEEN_BY) for outcome in broken]
    return {
        "ok": not problems,
        "witness": found["status"],
        "last_check": broken[0]["status"] if broken else ("agrees" if outcomes else "none"),
        "summary": summary(found, broken, problems),
        "problems": problems[:PROBLEMS_LISTED],
        "problem_count": len(problems),
        "acknowledged": len(found["acknowledged"]),
    }


def state(conn: sqlite3.Connection) -> dict[str, Any]:
    """
    All a person needs to decide on an acknowledgement: the report (see :func:`report`;
    what it finds wrong is recorded), and every divergence the witness recorded, the
    ones waiting for a person first, each newest first.

    :return: ``{report, divergences, waiting, divergences_left_out, witness_file, last_check_file, last_checked_at,
        last_check_acknowledged}`` (the event whose acknowledgement the last check's record was taken at, if it was)
    """
    path = witness.database_path(conn)
    found = report(conn, noticed_by="the integrity page")
    recorded = [d for d in (witness.read(path) or {}).get("divergences", []) if isinstance(d, dict)] if path else []
    waiting = [d for d in recorded if not d.get("acknowledged")]
    ordered = waiting[::-1] + [d for d in recorded if d.get("acknowledged")][::-1]  # recorded oldest first
    record = last_check.read(path) if path else None
    return {
        "report": found,
        "divergences": ordered[:DIVERGENCES_LISTED],
        "waiting": len(waiting),
        "divergences_left_out": max(0, len(ordered) - DIVERGENCES_LISTED),
        "witness_file": str(witness.witness_path(path)) if path else None,
        "last_check_file": str(last_check.record_path(path)) if path else None,
        "last_checked_at": (record or {}).get("verified_at"),
        "last_check_acknowledged": (record or {}).get("acknowledged_by_event"),
    }


def brief(found: dict[str, Any]) -> str:
    """
    A report (of :func:`report`) in a word, for outputs with a budget that say the
    rest in their summary and warnings: ``agrees`` or ``no witness`` if all is well,
    else what is wrong (``shorter``, ``diverges``, ``diverged``, ``other file``).
    """
    if found["ok"] or found["witness"] not in ("agrees", "no witness"):
        return str(found["witness"])
    return str(found["last_check"])


def summary(found: dict[str, Any], broken: list[dict[str, Any]], problems: list[dict[str, Any]]) -> str:
    "One line for people and agents: all is well, or the first thing wrong and what to do."
    if not problems:
        return f"the file holds what its witness saw ({found['status']}: {found['detail']})"
    first = problems[0]["found"]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return (f"TAMPERING SUSPECTED: {first}{more}. Treat memory with care; run `datasette-memory verify` for the whole "
            f"report; a person acknowledges it, with a reason, at {ACKNOWLEDGE_PAGE}")


def start_line(conn: sqlite3.Connection, door: str) -> tuple[bool, str]:
    """
    A door's check at its start: temporary side files a killed process left are
    removed, and the file is compared with its witness and the last clean check
    (what is wrong is recorded). One line to say so.

    :param door: which door starts (``mcp``, ``serve``, ``hook prompt``), as the witness records it
    :return: whether all is well, and the line
    """
    path = witness.database_path(conn)
    if path:
        witness.remove_leftovers(path)
    found = report(conn, noticed_by=f"the start of {door}")
    return found["ok"], f"Witness: {found['summary']}"


def acknowledge(conn: sqlite3.Connection, caller: Caller, project: str, reason: str) -> dict[str, Any]:
    """
    A person's acknowledgement of every divergence the witness recorded and no
    one acknowledged yet: one ledger event (who, why, and what was acknowledged);
    then the witness marks them acknowledged (the records stay) and both the
    witness and the last clean check's record take the file as it is now.

    :param conn: a connection with no transaction open
    :param caller: the person, as the gate issued them
    :param project: the project the event is recorded in
    :param reason: why, in the person's words
    :raises InvalidInput: if there is nothing to acknowledge
    :return: ``{event, acknowledged}``
    """
    path = witness.database_path(conn)
    pending = witness.unacknowledged(witness.read(path)) if path else []
    if not pending:
        raise InvalidInput("there is no divergence to acknowledge: the witness recorded none that a person has not acknowledged")
    with write_transaction(conn):
        event = append_event(conn, caller, project, witness.ACKNOWLEDGE_KIND, "ledger",
                             new={"reason": reason, "divergences": pending})
    acknowledged = witness.acknowledge(path, conn, event, reason, pending)
    last_check.reanchor(conn, path, event)
    return {"event": event_dict(event), "acknowledged": acknowledged}
