"""The optional semantic arm's part in ranking: when it may answer, and reciprocal rank fusion.

Ranking still means what it says with the arm on: the fused rank only orders
entities that match the same number of query terms, and entities that match
no term but are close in meaning join below every lexical match.
"""

import sqlite3

from ..core.validation import DEFAULT_PROJECT
from ..vectors.nearest import Similar
from .candidates import Candidate
from .settings import SearchSettings
from .terms import plural_forms, words
from .weights import TermStats

PROJECTS = """
WITH RECURSIVE projects(name) AS (
    SELECT min(project) FROM entities
    UNION ALL
    SELECT (SELECT min(project) FROM entities WHERE project > projects.name) FROM projects WHERE name IS NOT NULL
)
SELECT name FROM projects WHERE name IS NOT NULL
"""  # one index step per project, not a scan of every entity


def semantic_may_answer(
    conn: sqlite3.Connection, project: str, candidates: dict[int, Candidate], stats: dict[str, TermStats]
) -> bool:
    """
    Whether the semantic arm may answer a natural-language query: it has a
    content term that is not generic, it does not ask about something
    forgotten, and no term that matches nothing here names another project (a
    question about that project has no answer here).

    :param conn: a connection to the memory file
    :param project: the project scope
    :param candidates: the lexical candidates
    :param stats: each query term's :class:`~.weights.TermStats`
    """
    if all(s.generic for s in stats.values()) or any(s.forgotten for s in stats.values()):
        return False
    unmatched = set(stats) - {t for c in candidates.values() for t in c.terms}
    return not unmatched or not {f for t in unmatched for f in plural_forms(t)} & other_project_words(conn, project)


def other_project_words(conn: sqlite3.Connection, project: str) -> set[str]:
    "The words of other projects' names (but the default project's) that this project's name does not have."
    names = {name for (name,) in conn.execute(PROJECTS)} - {project, DEFAULT_PROJECT}
    return {form for name in names for word in words(name) for form in plural_forms(word)} - set(words(project))


def fused(kept: list[Candidate], similar: Similar | None, settings: SearchSettings) -> list[Candidate]:
    """
    ``kept`` re-ranked with the vector ranking ``similar`` (None when the arm
    is off): within each number of matched terms, by reciprocal rank fusion;
    entities matching no term join below them when similar enough. Unchanged
    when the arm abstains.

    :param kept: the lexical matches, best first
    :param similar: the vector arm's answer
    :param settings: the fusion constants and similarity thresholds
    """
    if similar is None or not similar.ranked or answered_elsewhere(similar, settings):
        return kept
    candidates = {c.id: c for c in kept}
    best = similar.ranked[0][1]
    for entity_id, similarity in similar.ranked:
        if entity_id not in candidates and similarity >= max(settings.vector_min_similarity, best - settings.vector_band):
            candidates[entity_id] = Candidate(entity_id)
    lexical_rank = {c.id: rank for rank, c in enumerate(kept, 1)}
    vector_rank = {entity_id: rank for rank, (entity_id, _) in enumerate(similar.ranked, 1)}
    similarities = dict(similar.ranked)
    for c in candidates.values():
        c.similarity = similarities.get(c.id)
        c.fused = reciprocal_rank_fusion(lexical_rank.get(c.id), vector_rank.get(c.id), settings)
    return sorted(candidates.values(), key=lambda c: (len(c.terms), c.fused or 0.0, c.newest), reverse=True)


def answered_elsewhere(similar: Similar, settings: SearchSettings) -> bool:
    "Whether another project holds a closer match than this one's best: then this project has no answer."
    best = similar.ranked[0][1]
    return similar.best_elsewhere is not None and best < similar.best_elsewhere - settings.vector_elsewhere_margin


def reciprocal_rank_fusion(lexical_rank: int | None, vector_rank: int | None, settings: SearchSettings) -> float:
    "Weighted RRF of two 1-based ranks (None: not ranked by that arm), scaled into [0, 1)."
    weighted = ((settings.rrf_bm25, lexical_rank), (settings.rrf_vector, vector_rank))
    rrf = sum(weight / (settings.rrf_k + rank) for weight, rank in weighted if rank)
    ceiling = (settings.rrf_bm25 + settings.rrf_vector) / (settings.rrf_k + 1) or 1.0
    return min(rrf / ceiling, 0.9999)
