"""``search_memory``: ranked search with reasons, within a byte budget, with an accounting of what was left out."""

import sqlite3
from typing import Any

from ..core.budget import leading_within
from ..core.stored_data import STORED_DATA_NOTE
from ..core.validation import check_limit, check_text
from ..vectors.background import index_lag
from .candidates import Candidate
from .excerpts import entity_rows, observation_texts
from .neighbours import neighbour_results
from .ranking import DEFAULT_MIN_COVERAGE, find
from .settings import SearchSettings

DEFAULT_LIMIT = 5
DEFAULT_BUDGET = 4000
RELATED_WHY = "similar in meaning only: its words do not answer the query"


def match_results(conn: sqlite3.Connection, candidates: list[Candidate]) -> list[dict[str, Any]]:
    "Each match as a result: entity, matching observations, matched terms, score and why (with how the query names it, if it does)."
    rows = entity_rows(conn, [c.id for c in candidates])
    return [
        {
            "entity": {"name": rows[c.id][0], "entityType": rows[c.id][1]},
            "observations": observation_texts(conn, c.id, c.observation_ids),
            "matched_terms": list(c.terms),
            "score": round(c.score(), 4),
            "why": "match",
            **({"name_match": c.named.said} if c.named else {}),
        }
        for c in candidates
    ]


def related_results(conn: sqlite3.Connection, related: list[tuple[int, float]]) -> list[dict[str, Any]]:
    "Each entity only similar in meaning as a result: entity, its first observations, similarity and why."
    rows = entity_rows(conn, [id for id, _ in related])
    return [
        {
            "entity": {"name": rows[id][0], "entityType": rows[id][1]},
            "observations": observation_texts(conn, id, ()),
            "similarity": round(similarity, 4),
            "why": RELATED_WHY,
        }
        for id, similarity in related
    ]


def search_memory(
    conn: sqlite3.Connection,
    project: str,
    query: object,
    limit: object = DEFAULT_LIMIT,
    budget: object = DEFAULT_BUDGET,
    expand: bool = False,
    settings: SearchSettings = SearchSettings(),
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> dict[str, Any]:
    """
    Ranked search with reasons: each result is a match, with the entity, the
    observations that matched, the matched terms, a score and why it is there,
    and an accounting block says what was considered and what was left out.
    With the semantic arm on, entities close in meaning whose words do not
    answer the query come back apart, under ``related``, each with its cosine
    similarity, after the matches in the byte budget; ``semantic`` says when its
    index lacks recent changes (it catches up in the background), so related
    entities for them may be missing.

    :param conn: an open connection
    :param project: the project scope
    :param query: a natural question, keywords, or an FTS5 expression
    :param limit: most matches to return, 1 to 50
    :param budget: most bytes of results, 200 to 200,000
    :param expand: also return one-hop neighbours of the matches, ranked below them
    :param settings: whether the semantic arm runs, and its constants
    :param min_coverage: the share of the query's (IDF-weighted) content a match must cover
    """
    query = check_text(query, "query", max_bytes=4096)
    limit = check_limit(limit, "limit", 1, 50)
    budget = check_limit(budget, "budget", 200, 200_000)
    found = find(conn, project, query, min_coverage, settings)
    results = match_results(conn, found.matches[:limit])
    if expand:
        results += neighbour_results(conn, project, results, limit)
    near = related_results(conn, found.related)
    included, used = leading_within(results + near, budget)
    shown, shown_related = included[: len(results)], included[len(results):]
    lag = index_lag(conn) if settings.semantic_on() else None
    return {
        "query": query,
        "project": project,
        "mode": found.mode,
        "results": shown,
        "related": shown_related,
        "accounting": {
            "candidates": len(found.matches) + found.below_coverage,
            "below_coverage": found.below_coverage,
            "left_out_by_limit": max(0, len(found.matches) - limit),
            "left_out_by_budget": len(results) + len(near) - len(included),
            "returned": len(shown),
            "related": len(shown_related),
            "bytes": used,
            "budget": budget,
        },
        **({"semantic": lag} if lag else {}),
        "note": STORED_DATA_NOTE,
    }
