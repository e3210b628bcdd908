"""The optional semantic arm's part in a search: when it may answer, reciprocal rank fusion, and related entities.

A match is there because memory's words answer the query; the arm never makes
one. It reorders the matches (the fused rank only orders entities matching the
same number of query terms), and the entities close in meaning that are not
matches come back apart, as *related*, each with its similarity. So whether a
search abstains is a property of its matches, with or without the arm.
"""

import sqlite3

from ..core.validation import DEFAULT_PROJECT
from ..vectors.nearest import Similar
from .candidates import Candidate
from .settings import SearchSettings
from .terms import plural_forms, words
from .weights import TermStats


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
    names = {name for (name,) in conn.execute("SELECT project FROM memory_project_sizes WHERE entities > 0")} - {project, DEFAULT_PROJECT}
    return {form for name in names for word in words(name) for form in plural_forms(word)} - set(words(project))


def fused(kept: list[Candidate], similar: Similar | None, settings: SearchSettings) -> list[Candidate]:
    """
    The matches ``kept`` re-ranked with the vector ranking ``similar`` (None
    when the arm is off): within each number of matched terms, by reciprocal
    rank fusion, the entities the query names first. Unchanged when the arm abstains.

    :param kept: the lexical matches, best first
    :param similar: the vector arm's answer
    :param settings: the fusion constants
    """
    if similar is None or not similar.ranked or answered_elsewhere(similar, settings):
        return kept
    lexical_rank = {c.id: rank for rank, c in enumerate(kept, 1)}
    vector_rank = {entity_id: rank for rank, (entity_id, _) in enumerate(similar.ranked, 1)}
    for c in kept:
        c.fused = reciprocal_rank_fusion(lexical_rank[c.id], vector_rank.get(c.id), settings)
    return sorted(kept, key=lambda c: (c.name_bonus, len(c.terms), c.fused or 0.0, c.newest), reverse=True)


def related(kept: list[Candidate], similar: Similar | None, settings: SearchSettings) -> list[tuple[int, float]]:
    """
    The entities close in meaning to the query that are not matches, most similar
    first: ``[(entity id, cosine similarity)]``, at least
    ``vector_min_similarity`` and within ``vector_band`` of the best, at most
    ``related_limit``; none when another project holds a closer one (then this
    project has no answer).

    :param kept: the matches
    :param similar: the vector arm's answer
    :param settings: the similarity thresholds
    """
    if similar is None or not similar.ranked or answered_elsewhere(similar, settings):
        return []
    matches = {c.id for c in kept}
    floor = max(settings.vector_min_similarity, similar.ranked[0][1] - settings.vector_band)
    return [(id, similarity) for id, similarity in similar.ranked if id not in matches and similarity >= floor][: int(settings.related_limit)]


def answered_elsewhere(similar: Similar, settings: SearchSettings) -> bool:
    "Whether another project holds a closer match than this one's best: then this project has no answer."
    best = similar.ranked[0][1]
    return similar.best_elsewhere is not None and best < similar.best_elsewhere - settings.vector_elsewhere_margin


def reciprocal_rank_fusion(lexical_rank: int, vector_rank: int | None, settings: SearchSettings) -> float:
    "Weighted RRF of two 1-based ranks (None: not ranked by that arm), scaled into [0, 1)."
    weighted = ((settings.rrf_bm25, lexical_rank), (settings.rrf_vector, vector_rank))
    rrf = sum(weight / (settings.rrf_k + rank) for weight, rank in weighted if rank)
    ceiling = (settings.rrf_bm25 + settings.rrf_vector) / (settings.rrf_k + 1) or 1.0
    return min(rrf / ceiling, 0.9999)
