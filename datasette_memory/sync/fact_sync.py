"""Facts across machines: a fact a person recorded, and each change to its validity, reach every peer.

A fact is known on every machine by what it says and who recorded it when
(its statement's keys, ``valid_from``, ``recorded_at`` and ``recorded_by``),
never by its row id, which is each file's own. A foreign ``record_fact`` makes
the fact here unless a fact with that identity exists; a change to a fact
(supersede, invalidate, revalidate) names the fact by its origin's id, which the
origin's own ``record_fact`` event for it turns into the identity. Applying the
same event twice changes nothing. The local events written are recorded with
the person who made the act where it was made (the session names the peer).
Those echoes of facts travel whole, so a peer learns which fact another
machine's id means even when that machine did not record it first.
"""

import json
import sqlite3
from typing import Any

from ..core.errors import InvalidInput, NotFound
from ..core.ledger import EVENT_COLUMNS, Caller
from ..governed import facts
from ..governed.statements import value_key
from .order import order_key

COLUMNS = [c for c in EVENT_COLUMNS if c != "id"]
IDENTITY = "subject_key = ? AND predicate_key = ? AND object_key = ? AND valid_from = ? AND recorded_at = ? AND recorded_by = ?"


def identity(fact: dict[str, Any]) -> list[Any]:
    "What a fact is known by on every machine."
    return [value_key(fact["subject"]), value_key(fact["predicate"]), value_key(fact["object"]),
            fact["valid_from"], fact["recorded_at"], fact["recorded_by"]]


def local_fact(conn: sqlite3.Connection, project: str, fact: dict[str, Any]) -> int | None:
    "This file's id of the fact ``fact`` (as an event's value holds it), or None."
    row = conn.execute(f"SELECT id FROM facts WHERE project = ? AND {IDENTITY}", [project, *identity(fact)]).fetchone()
    return row[0] if row else None


def origin_fact(conn: sqlite3.Connection, project: str, machine: str, fact_id: Any) -> int | None:
    "This file's id of fact ``fact_id`` of ``machine`` (through that machine's record_fact for it), or None."
    if fact_id is None:
        return None
    row = conn.execute(
        "SELECT new FROM memory_sync_events WHERE machine = ? AND project = ? AND kind = 'record_fact' AND target = ? AND opaque = 0",
        [machine, project, f"fact:{fact_id}"],
    ).fetchone()
    return local_fact(conn, project, json.loads(row[0])) if row else None


def apply_facts(conn: sqlite3.Connection, caller: Caller, project: str) -> None:
    "Apply every foreign fact event of ``project`` held, in the total order, each once."
    rows = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM memory_sync_events WHERE project = ? AND opaque = 0 "
        "AND kind IN ('record_fact', 'supersede_fact', 'invalidate_fact', 'revalidate_fact')",
        [project],
    ).fetchall()
    for event in order_key(dict(zip(COLUMNS, row)) for row in rows):
        person = Caller(event["actor"], caller.session)
        new = json.loads(event["new"])
        try:
            if event["kind"] == "record_fact":
                record(conn, person, project, event["machine"], new)
            else:
                change(conn, person, project, event, new)
        except (InvalidInput, NotFound):
            continue  # an act that does not apply to the fact as it stands here (made concurrently with another)


def record(conn: sqlite3.Connection, person: Caller, project: str, machine: str, new: dict[str, Any]) -> None:
    if local_fact(conn, project, new) is not None:
        return
    facts.insert_fact(conn, Caller(new["recorded_by"], person.session), project, new, new["rationale"], new["valid_from"],
                      new["valid_to"], supersedes=origin_fact(conn, project, machine, new["supersedes"]),
                      recorded_at=new["recorded_at"])


def change(conn: sqlite3.Connection, person: Caller, project: str, event: dict[str, Any], new: dict[str, Any]) -> None:
    fact_id = origin_fact(conn, project, event["machine"], int(event["target"].partition(":")[2]))
    if fact_id is None:
        return
    act = event["kind"].removesuffix("_fact")
    done = conn.execute(
        "SELECT 1 FROM fact_history WHERE fact_id = ? AND act = ? AND valid_to IS ? AND recorded_at = ? AND actor = ?",
        [fact_id, act, new["valid_to"], event["ts"], event["actor"]],
    ).fetchone()
    if done:
        return
    fact = facts.load_fact(conn, project, fact_id)
    superseded_by = origin_fact(conn, project, event["machine"], new["superseded_by"])
    facts.change_validity(conn, person, project, fact, act, new["valid_to"], superseded_by, new["rationale"], event["ts"])
