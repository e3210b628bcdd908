"""Review status: how much of a project waits for a person, counted as the governance queries and the review page count it.

Pending claims are those ``pending_claims`` lists, stale entities those
``stale_entities`` lists (the stored queries in ``datasette.yaml``; the same
SQL conditions here), contradictions those ``/-/memory/contradictions.json``
lists, and a contradicted claim is a pending claim the review page marks as
contradicting a fact or another pending claim. Counts only: no stored text.
"""

import sqlite3
from typing import Any

from .contradictions import find_contradictions
from .review import contradicted_facts, pending_conflicts

STALE_DAYS = 90  # the stale_entities query's default

PENDING_SQL = "SELECT count(*) FROM claims WHERE status = 'candidate' AND project = :project"
STALE_SQL = """
SELECT count(*) FROM (
    SELECT max(coalesce(o.created_at, e.created_at)) AS last_changed
    FROM entities e LEFT JOIN observations o ON o.entity_id = e.id
    WHERE e.project = :project
    GROUP BY e.id
    HAVING last_changed < strftime('%Y-%m-%dT%H:%M:%f', 'now', '-' || :days || ' days')
)
"""


def review_status(conn: sqlite3.Connection, project: str, stale_days: int = STALE_DAYS) -> dict[str, Any]:
    """
    Counts of what waits for review in ``project``.

    :param conn: the memory database
    :param project: the project
    :param stale_days: an entity with nothing added for more days than this is stale
    :return: ``{project, pending_claims, contradicted_claims, contradictions, stale_entities, stale_days}``
    """
    params = {"project": project, "days": str(stale_days)}
    contradicted = set(contradicted_facts(conn, project)) | set(pending_conflicts(conn, project))
    return {
        "project": project,
        "pending_claims": conn.execute(PENDING_SQL, params).fetchone()[0],
        "contradicted_claims": len(contradicted),
        "contradictions": len(find_contradictions(conn, project)),
        "stale_entities": conn.execute(STALE_SQL, params).fetchone()[0],
        "stale_days": stale_days,
    }
