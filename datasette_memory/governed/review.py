"""What a person reviewing memory reads: the queue of pending claims, one claim whole, one fact whole.

Each pending claim carries what it contradicts: facts that hold over the same
time with another value, and other pending claims with another value for the
same subject and predicate (two agents disagreeing is a contradiction too).
"""

import sqlite3
from typing import Any

from ..core.errors import InvalidInput, NotFound
from .claims import CLAIM_COLUMNS, claim_dict, load_claim
from .contradictions import find_contradictions
from .facts import FACT_COLUMNS, load_fact

MAX_QUEUE = 500


def project_of(conn: sqlite3.Connection, table: str, id: Any) -> str:
    """
    The project claim or fact ``id`` belongs to.

    :param table: ``claims`` or ``facts``
    :raises NotFound: if there is no such claim or fact
    """
    if isinstance(id, bool) or not isinstance(id, int):
        raise InvalidInput(f"id: must be an integer, got {id!r}")
    row = conn.execute(f"SELECT project FROM {table} WHERE id = ?", [id]).fetchone()
    if row is None:
        raise NotFound(f"there is no {table[:-1]} {id}")
    return row[0]


def pending_conflicts(conn: sqlite3.Connection, project: str, claim_id: int | None = None) -> dict[int, list[dict[str, Any]]]:
    "Pending claim id to the other pending claims with another value for its subject and predicate."
    rows = conn.execute(
        "SELECT a.id, b.id, b.object, b.proposed_by FROM claims a JOIN claims b ON b.project = a.project "
        "AND b.subject_key = a.subject_key AND b.predicate_key = a.predicate_key AND b.object_key != a.object_key "
        "AND b.status = 'candidate' WHERE a.project = ? AND a.status = 'candidate' AND (? IS NULL OR a.id = ?) ORDER BY a.id, b.id",
        [project, claim_id, claim_id],
    )
    conflicts: dict[int, list[dict[str, Any]]] = {}
    for claim, other, object, proposed_by in rows:
        conflicts.setdefault(claim, []).append({"kind": "claim", "id": other, "object": object, "proposed_by": proposed_by})
    return conflicts


def contradicted_facts(conn: sqlite3.Connection, project: str, claim_id: int | None = None) -> dict[int, list[dict[str, Any]]]:
    "Pending claim id to the facts it contradicts (same subject and predicate, another value, overlapping validity)."
    found: dict[int, list[dict[str, Any]]] = {}
    for c in find_contradictions(conn, project, claim_id=claim_id):
        if c["other"]["kind"] == "claim":
            found.setdefault(c["other"]["id"], []).append({"kind": "fact", **c["fact"]})
    return found


def review_queue(conn: sqlite3.Connection, project: str, limit: int = MAX_QUEUE) -> dict[str, Any]:
    """
    The project's pending claims, newest first, each with its evidence, reviews and what it contradicts.

    :return: ``{pending, shown, claims}``
    """
    rows = conn.execute(
        f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE project = ? AND status = 'candidate' ORDER BY id DESC LIMIT ?",
        [project, limit],
    ).fetchall()
    pending = conn.execute("SELECT count(*) FROM claims WHERE project = ? AND status = 'candidate'", [project]).fetchone()[0]
    facts, claims = contradicted_facts(conn, project), pending_conflicts(conn, project)
    queue = [claim_dict(conn, dict(zip(CLAIM_COLUMNS, row))) for row in rows]
    for claim in queue:
        claim["contradicts"] = facts.get(claim["id"], []) + claims.get(claim["id"], [])
    return {"pending": pending, "shown": len(queue), "claims": queue}


def claim_detail(conn: sqlite3.Connection, project: str, claim_id: int) -> dict[str, Any]:
    "One claim whole: its evidence and reviews, what it contradicts, and the fact it became."
    claim = claim_dict(conn, load_claim(conn, project, claim_id))
    if claim["status"] == "candidate":
        claim["contradicts"] = contradicted_facts(conn, project, claim_id).get(claim_id, []) + pending_conflicts(
            conn, project, claim_id
        ).get(claim_id, [])
    else:
        claim["contradicts"] = []
    claim["fact"] = load_fact(conn, project, claim["fact_id"]) if claim["fact_id"] else None
    return claim


def fact_detail(conn: sqlite3.Connection, project: str, fact_id: int) -> dict[str, Any]:
    "One fact whole: its validity history, the claim it came from, and the facts it superseded or was superseded by."
    fact = load_fact(conn, project, fact_id)
    history = conn.execute(
        "SELECT act, valid_to, superseded_by, recorded_at, actor, rationale FROM fact_history WHERE fact_id = ? ORDER BY id",
        [fact_id],
    ).fetchall()
    fact["history"] = [dict(zip(("act", "valid_to", "superseded_by", "recorded_at", "actor", "rationale"), row)) for row in history]
    fact["claim"] = claim_dict(conn, load_claim(conn, project, fact["claim_id"])) if fact["claim_id"] else None
    fact["contradictions"] = find_contradictions(conn, project, fact_id=fact_id)
    return fact


def facts_now(conn: sqlite3.Connection, project: str, at: str) -> list[dict[str, Any]]:
    "The project's facts that hold at ``at``, by subject and predicate."
    rows = conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project = ? AND valid_from <= ? AND (valid_to IS NULL OR valid_to > ?) "
        "ORDER BY subject_key, predicate_key, id",
        [project, at, at],
    ).fetchall()
    return [dict(zip(FACT_COLUMNS, row)) for row in rows]
