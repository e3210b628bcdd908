"""Contradictions: flagged for a person to review, never resolved automatically.

Two facts, or a fact and a pending claim, contradict each other when they have
the same subject and predicate, different objects (all compared normalized),
and validity that overlaps. A pending claim claims to hold from its
``valid_from``, else from when it was proposed, with no end.
"""

import sqlite3
from typing import Any

from .bitemporal import END_OF_TIME

FACT_PAIRS_SQL = """
SELECT a.subject, a.predicate, a.id, a.object, a.valid_from, a.valid_to,
    'fact', b.id, b.object, b.valid_from, b.valid_to,
    max(a.valid_from, b.valid_from), nullif(min(coalesce(a.valid_to, :end), coalesce(b.valid_to, :end)), :end)
FROM facts a JOIN facts b ON b.project = a.project AND b.subject_key = a.subject_key
    AND b.predicate_key = a.predicate_key AND b.object_key != a.object_key AND b.id > a.id
WHERE a.project = :project
    AND max(a.valid_from, b.valid_from) < min(coalesce(a.valid_to, :end), coalesce(b.valid_to, :end))
    AND (:fact_id IS NULL OR :fact_id IN (a.id, b.id))
    AND :claim_id IS NULL
"""

CLAIM_PAIRS_SQL = """
SELECT a.subject, a.predicate, a.id, a.object, a.valid_from, a.valid_to,
    'claim', c.id, c.object, coalesce(c.valid_from, c.proposed_at), NULL,
    max(a.valid_from, coalesce(c.valid_from, c.proposed_at)), nullif(coalesce(a.valid_to, :end), :end)
FROM facts a JOIN claims c ON c.project = a.project AND c.subject_key = a.subject_key
    AND c.predicate_key = a.predicate_key AND c.object_key != a.object_key AND c.status = 'candidate'
WHERE a.project = :project
    AND max(a.valid_from, coalesce(c.valid_from, c.proposed_at)) < coalesce(a.valid_to, :end)
    AND (:fact_id IS NULL OR a.id = :fact_id)
    AND (:claim_id IS NULL OR c.id = :claim_id)
"""


def contradiction_dict(row: Any) -> dict[str, Any]:
    (subject, predicate, fact_id, fact_object, fact_from, fact_to,
     other_kind, other_id, other_object, other_from, other_to, overlap_from, overlap_to) = row
    return {
        "subject": subject,
        "predicate": predicate,
        "fact": {"id": fact_id, "object": fact_object, "valid_from": fact_from, "valid_to": fact_to},
        "other": {"kind": other_kind, "id": other_id, "object": other_object, "valid_from": other_from, "valid_to": other_to},
        "overlap": {"from": overlap_from, "to": overlap_to},
    }


def find_contradictions(conn: sqlite3.Connection, project: str, fact_id: Any = None, claim_id: Any = None) -> list[Any]:
    """
    Contradicting pairs in ``project``: fact against fact, then fact against pending claim.

    :param fact_id: only pairs involving this fact
    :param claim_id: only pairs involving this pending claim
    """
    params = {"project": project, "end": END_OF_TIME, "fact_id": fact_id, "claim_id": claim_id}
    rows = conn.execute(FACT_PAIRS_SQL + " ORDER BY a.id, b.id", params).fetchall()
    rows += conn.execute(CLAIM_PAIRS_SQL + " ORDER BY a.id, c.id", params).fetchall()
    return [contradiction_dict(row) for row in rows]
