"""Rejections made on other machines, as sync brought them: a value a person rejected anywhere is refused here too.

Sync (``datasette_memory.sync``) holds other machines' claim events in
``memory_sync_events``: a proposal and the reviews that rejected or reopened it,
each under its origin machine. A foreign claim whose newest review is a
rejection blocks the same value (by its keys) from being proposed again, as a
local rejection does; reopening it on its machine lifts that. Approval never
travels: a person approves on the machine where they review.
"""

import json
import sqlite3
from typing import Any

from .statements import PARTS, value_key


def foreign_rejection(conn: sqlite3.Connection, project: str, statement: dict[str, Any]) -> dict[str, Any] | None:
    """
    The newest rejection, made on another machine, of ``statement``'s value in ``project``, or None.

    :return: ``{machine, claim_id, rejected_at, rejected_by, rationale, claim}``
    """
    proposals = conn.execute(
        "SELECT machine, target, new FROM memory_sync_events WHERE project = ? AND kind = 'propose_claim' AND opaque = 0",
        [project],
    ).fetchall()
    for machine, target, new in proposals:
        claim = json.loads(new)
        if any(value_key(claim[part]) != statement[f"{part}_key"] for part in PARTS):
            continue
        review = conn.execute(
            "SELECT kind, actor, ts, new FROM memory_sync_events WHERE machine = ? AND project = ? AND target = ? "
            "AND kind IN ('reject_claim', 'reopen_claim') AND opaque = 0 ORDER BY clock DESC LIMIT 1",
            [machine, project, target],
        ).fetchone()
        if review is not None and review[0] == "reject_claim":
            return {"machine": machine, "claim_id": int(target.partition(":")[2]), "rejected_at": review[2],
                    "rejected_by": review[1], "rationale": json.loads(review[3])["rationale"], "claim": claim}
    return None
