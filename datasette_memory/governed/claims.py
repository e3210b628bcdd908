"""Claims: what an agent believes, proposed for a person to approve or reject.

Agents propose; only a person (a :class:`~datasette_memory.governed.gate.Reviewer`)
approves, rejects or reopens. A value a person rejected is remembered by its
normalized statement, so it cannot come back by re-proposal, whatever its casing
or spacing. The caller provides the transaction; every change appends ledger events.
"""

import sqlite3
from typing import Any

from ..core.clock import now
from ..core.database import inserted_id
from ..core.errors import InvalidInput, NotFound
from ..core.ledger import Caller, append_event
from ..core.validation import check_list, check_name, check_object, check_text
from . import facts
from .foreign_reviews import foreign_rejection
from .statements import MAX_OBJECT_BYTES, describe

CLAIM_COLUMNS = (
    "id", "project", "subject", "predicate", "object", "valid_from",
    "confidence", "status", "proposed_by", "proposed_at", "fact_id",
)
STATUSES = ("candidate", "approved", "rejected")
# the words people use for a status: the pages and the docs call a candidate "pending"
STATUS_NAMES = {**{status: status for status in STATUSES}, "pending": "candidate"}
MAX_EVIDENCE_ITEMS = 100


class ClaimRejected(InvalidInput):
    """
    The proposed value was rejected by a person before; nothing was written.

    :param message: the explanation, naming when, by whom and why
    :param rejection: ``{claim_id, rejected_at, rejected_by, rationale}``
    """

    def __init__(self, message: str, rejection: dict):
        super().__init__(message)
        self.rejection = rejection


def parse_evidence(evidence: Any) -> list[Any]:
    """
    Evidence as ``(kind, entity, content)``: a string is text, and
    ``{entityName, observation}`` quotes an observation exactly.

    :param evidence: a list of strings and observation references, or None
    """
    parsed = []
    for i, item in enumerate(check_list(evidence or [], "evidence", MAX_EVIDENCE_ITEMS)):
        field = f"evidence[{i}]"
        if isinstance(item, str):
            parsed.append(("text", "", check_text(item, field, MAX_OBJECT_BYTES)))
        else:
            check_object(item, field, ("entityName", "observation"))
            parsed.append((
                "observation",
                check_name(item["entityName"], f"{field}.entityName"),
                check_text(item["observation"], f"{field}.observation"),
            ))
    return list(dict.fromkeys(parsed))


def check_confidence(value: Any) -> float | None:
    "A confidence between 0 and 1, or None."
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInput(f"confidence: must be a number from 0 to 1, got {value!r}")
    return float(value)


def check_observations_exist(conn: sqlite3.Connection, project: str, evidence: list[tuple[str, str, str]]) -> None:
    "Raise :class:`NotFound` if an observation quoted as evidence is not stored in ``project``."
    for kind, entity, content in evidence:
        if kind == "observation" and not conn.execute(
            "SELECT 1 FROM observations o JOIN entities e ON e.id = o.entity_id "
            "WHERE e.project = ? AND e.name = ? AND o.content = ?",
            [project, entity, content],
        ).fetchone():
            raise NotFound(
                f"evidence: entity {entity!r} has no observation {content!r} in project {project!r}; "
                "quote an observation exactly, or give the evidence as text"
            )


def find_claim(conn: sqlite3.Connection, project: str, statement: dict[str, Any], status: str) -> dict[str, Any] | None:
    "The newest claim in ``project`` with ``statement``'s value and ``status``, or None."
    row = conn.execute(
        f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE project = ? AND subject_key = ? "
        "AND predicate_key = ? AND object_key = ? AND status = ? ORDER BY id DESC LIMIT 1",
        [project, statement["subject_key"], statement["predicate_key"], statement["object_key"], status],
    ).fetchone()
    return dict(zip(CLAIM_COLUMNS, row)) if row else None


def latest_review(conn: sqlite3.Connection, claim_id: int, act: str) -> dict[str, Any] | None:
    "The newest review of ``claim_id`` with ``act``, or None."
    row = conn.execute(
        "SELECT reviewer, reviewed_at, rationale FROM claim_reviews WHERE claim_id = ? AND act = ? "
        "ORDER BY id DESC LIMIT 1",
        [claim_id, act],
    ).fetchone()
    return dict(zip(("reviewer", "reviewed_at", "rationale"), row)) if row else None


def refuse_if_rejected(conn: sqlite3.Connection, project: str, statement: dict[str, Any]) -> None:
    "Raise :class:`ClaimRejected` if a person rejected this value in ``project``, here or on a machine it syncs with."
    claim = find_claim(conn, project, statement, "rejected")
    if claim is None:
        refuse_if_rejected_elsewhere(conn, project, statement)
        return
    review = latest_review(conn, claim["id"], "reject") or dict.fromkeys(("reviewed_at", "reviewer", "rationale"))
    rejection = {"claim_id": claim["id"], "rejected_at": review["reviewed_at"],
                 "rejected_by": review["reviewer"], "rationale": review["rationale"]}
    raise ClaimRejected(
        f"claim refused: a person rejected this value before (claim {claim['id']}: {describe(claim)}), "
        f"on {rejection['rejected_at']} by {rejection['rejected_by']!r}, because: {rejection['rationale']!r}. "
        f"Only a person can reopen claim {claim['id']}; do not propose it again",
        rejection,
    )


def refuse_if_rejected_elsewhere(conn: sqlite3.Connection, project: str, statement: dict[str, Any]) -> None:
    "Raise :class:`ClaimRejected` if a person on another machine rejected this value (sync brought the rejection)."
    found = foreign_rejection(conn, project, statement)
    if found is None:
        return
    rejection = {key: found[key] for key in ("machine", "claim_id", "rejected_at", "rejected_by", "rationale")}
    raise ClaimRejected(
        f"claim refused: a person on machine {found['machine']} rejected this value (their claim {found['claim_id']}: "
        f"{describe(found['claim'])}), on {found['rejected_at']} by {found['rejected_by']!r}, because: {found['rationale']!r}. "
        "Only a person there can reopen it; do not propose it again",
        rejection,
    )


def propose_claim(conn: sqlite3.Connection, caller: Caller, project: str, statement: dict, evidence: Any, confidence: Any = None, valid_from: Any = None) -> dict[str, Any]:
    """
    Propose ``statement`` as a candidate claim; an identical pending claim gains
    the evidence instead of being duplicated. A value that is a fact holding now
    makes no claim: the result names the fact instead.

    :raises ClaimRejected: if a person rejected this value before
    :return: ``{claim, created, evidence_added, already_fact}``
    """
    evidence = parse_evidence(evidence)
    confidence = check_confidence(confidence)
    holding = facts.holding_fact(conn, project, statement, now())
    if holding:
        return {"claim": None, "created": False, "evidence_added": 0, "already_fact": holding}
    refuse_if_rejected(conn, project, statement)
    check_observations_exist(conn, project, evidence)
    claim = find_claim(conn, project, statement, "candidate")
    created = claim is None
    ts = now()
    if claim is None:
        claim_id = insert_claim(conn, caller, project, statement, confidence, valid_from, ts)
    else:
        claim_id = claim["id"]
    added = add_evidence(conn, claim_id, caller, evidence, ts)
    claim = claim_dict(conn, load_claim(conn, project, claim_id))
    if created:
        append_event(conn, caller, project, "propose_claim", f"claim:{claim_id}", new=claim, ts=ts)
    elif added:
        append_event(conn, caller, project, "add_claim_evidence", f"claim:{claim_id}", new=added, ts=ts)
    return {"claim": claim, "created": created, "evidence_added": len(added), "already_fact": None}


def insert_claim(
    conn: sqlite3.Connection, caller: Caller, project: str, statement: dict, confidence: Any, valid_from: Any, ts: str
) -> int:
    cursor = conn.execute(
        "INSERT INTO claims (project, subject, predicate, object, subject_key, predicate_key, object_key, "
        "valid_from, confidence, proposed_by, proposed_at) "
        "VALUES (:project, :subject, :predicate, :object, :subject_key, :predicate_key, :object_key, "
        ":valid_from, :confidence, :proposed_by, :proposed_at)",
        {**statement, "project": project, "valid_from": valid_from, "confidence": confidence,
         "proposed_by": caller.actor, "proposed_at": ts},
    )
    return inserted_id(cursor)


def add_evidence(conn: sqlite3.Connection, claim_id: int, caller: Caller, evidence: list, ts: str) -> list[Any]:
    "Store the evidence items the claim lacks; return them as dicts."
    added = []
    for kind, entity, content in evidence:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO claim_evidence (claim_id, kind, entity, content, added_by, added_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [claim_id, kind, entity, content, caller.actor, ts],
        )
        if cursor.rowcount:
            added.append(evidence_dict(kind, entity, content))
    return added


def evidence_dict(kind: str, entity: str, content: str) -> dict[str, Any]:
    if kind == "observation":
        return {"entityName": entity, "observation": content}
    return {"text": content}


def load_claim(conn: sqlite3.Connection, project: str, claim_id: Any) -> dict[str, Any]:
    "Claim ``claim_id`` of ``project`` as stored, or :class:`NotFound`."
    if isinstance(claim_id, bool) or not isinstance(claim_id, int):
        raise InvalidInput(f"claim_id: must be an integer, got {claim_id!r}")
    row = conn.execute(
        f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE project = ? AND id = ?", [project, claim_id]
    ).fetchone()
    if row is None:
        raise NotFound(f"claim {claim_id} not found in project {project!r}; list_claims shows the project's claims")
    return dict(zip(CLAIM_COLUMNS, row))


def claim_dict(conn: sqlite3.Connection, claim: dict) -> dict[str, Any]:
    "A claim as callers see it: with its evidence and reviews, oldest first."
    evidence = conn.execute(
        "SELECT kind, entity, content, added_by, added_at FROM claim_evidence WHERE claim_id = ? ORDER BY id",
        [claim["id"]],
    ).fetchall()
    reviews = conn.execute(
        "SELECT act, reviewer, reviewed_at, rationale, fact_id FROM claim_reviews WHERE claim_id = ? ORDER BY id",
        [claim["id"]],
    ).fetchall()
    return {
        **claim,
        "evidence": [
            {**evidence_dict(kind, entity, content), "added_by": by, "added_at": at}
            for kind, entity, content, by, at in evidence
        ],
        "reviews": [dict(zip(("act", "reviewer", "reviewed_at", "rationale", "fact_id"), r)) for r in reviews],
    }


def list_claims(conn: sqlite3.Connection, project: str, status: Any = None, limit: int = 100) -> list[Any]:
    """
    Claims of ``project``, oldest first, with evidence and reviews.

    :param status: ``candidate`` (or ``pending``, its other name), ``approved`` or ``rejected``; None for all
    :param limit: most claims to return
    """
    if status is not None:
        status = claim_status(status)
    rows = conn.execute(
        f"SELECT {', '.join(CLAIM_COLUMNS)} FROM claims WHERE project = ? AND (? IS NULL OR status = ?) "
        "ORDER BY id LIMIT ?",
        [project, status, status, limit],
    ).fetchall()
    return [claim_dict(conn, dict(zip(CLAIM_COLUMNS, row))) for row in rows]


def claim_status(name: Any) -> str:
    "The status ``name`` means (``pending`` is a ``candidate``), or an error listing the names."
    if not isinstance(name, str) or name not in STATUS_NAMES:
        raise InvalidInput(
            f"status: must be one of pending (also called candidate), approved or rejected, got {str(name)[:60]!r}"
        )
    return STATUS_NAMES[name]


def review(
    conn: sqlite3.Connection, caller: Caller, project: str, claim: dict[str, Any], act: str, status: str, rationale: str,
    fact_id: int | None = None,
) -> None:
    "Move ``claim`` to ``status``, with a review row and a ledger event."
    conn.execute("UPDATE claims SET status = ? WHERE id = ?", [status, claim["id"]])
    reviewed_at = now()
    conn.execute(
        "INSERT INTO claim_reviews (claim_id, act, reviewer, reviewed_at, rationale, fact_id) VALUES (?, ?, ?, ?, ?, ?)",
        [claim["id"], act, caller.actor, reviewed_at, rationale, fact_id],
    )
    append_event(
        conn, caller, project, f"{act}_claim", f"claim:{claim['id']}",
        old={"status": claim["status"]},
        new={"status": status, "rationale": rationale, "fact_id": fact_id},
        ts=reviewed_at,
    )


def require_status(claim: dict[str, Any], expected: str, act: str) -> None:
    if claim["status"] != expected:
        hint = "; reopen it first" if claim["status"] == "rejected" and expected == "candidate" else ""
        raise InvalidInput(
            f"claim_id: claim {claim['id']} is {claim['status']}, and only a {expected} claim can be {act}{hint}"
        )


def approve_claim(conn: sqlite3.Connection, caller: Caller, project: str, claim_id: Any, rationale: str, valid_from: Any = None) -> dict[str, Any]:
    """
    Make candidate claim ``claim_id`` a fact, valid from ``valid_from``, else
    the claim's own ``valid_from``, else now.

    :return: ``{claim, fact}``
    """
    claim = load_claim(conn, project, claim_id)
    require_status(claim, "candidate", "approved")
    fact = facts.insert_fact(
        conn, caller, project, claim, rationale,
        valid_from=valid_from or claim["valid_from"], claim_id=claim["id"],
    )
    conn.execute("UPDATE claims SET fact_id = ? WHERE id = ?", [fact["id"], claim["id"]])
    review(conn, caller, project, claim, "approve", "approved", rationale, fact["id"])
    return {"claim": claim_dict(conn, load_claim(conn, project, claim_id)), "fact": fact}


def reject_claim(conn: sqlite3.Connection, caller: Caller, project: str, claim_id: Any, rationale: str) -> dict[str, Any]:
    "Reject candidate claim ``claim_id``; its value cannot be proposed again until a person reopens it."
    claim = load_claim(conn, project, claim_id)
    require_status(claim, "candidate", "rejected")
    review(conn, caller, project, claim, "reject", "rejected", rationale)
    return {"claim": claim_dict(conn, load_claim(conn, project, claim_id))}


def reopen_claim(conn: sqlite3.Connection, caller: Caller, project: str, claim_id: Any, rationale: str) -> dict[str, Any]:
    "Make rejected claim ``claim_id`` a candidate again."
    claim = load_claim(conn, project, claim_id)
    require_status(claim, "rejected", "reopened")
    review(conn, caller, project, claim, "reopen", "candidate", rationale)
    return {"claim": claim_dict(conn, load_claim(conn, project, claim_id))}
