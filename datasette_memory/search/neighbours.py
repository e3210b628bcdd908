"""One-hop neighbours of the matches, for ``expand``: labelled, and ranked below every real match."""

import json
import sqlite3
from typing import Any

from .excerpts import observation_texts


def neighbour_results(conn: sqlite3.Connection, project: str, matches: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """
    The entities related to the matches, each scored 0 and saying which relation brought it.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param matches: the match results
    :param limit: most neighbours to return
    """
    names = [r["entity"]["name"] for r in matches]
    seen: set[str] = set(names)
    results: list[dict[str, Any]] = []
    rows = conn.execute(
        "SELECT from_entity, relation_type, to_entity FROM relations WHERE project = ?1 AND "
        "(from_entity IN (SELECT value FROM json_each(?2)) OR to_entity IN (SELECT value FROM json_each(?2))) "
        "ORDER BY id",
        [project, json.dumps(names)],
    ).fetchall()
    for source, relation_type, target in rows:
        other = target if source in names else source
        if other in seen or len(results) >= limit:
            continue
        entity = conn.execute(
            "SELECT id, entity_type FROM entities WHERE project = ? AND name = ?", [project, other]
        ).fetchone()
        if entity is None:
            continue
        seen.add(other)
        results.append(
            {
                "entity": {"name": other, "entityType": entity[1]},
                "observations": observation_texts(conn, entity[0], ()),
                "matched_terms": [],
                "score": 0.0,
                "why": f"neighbour: {source} {relation_type} {target}",
            }
        )
    return results
