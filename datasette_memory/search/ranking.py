"""Ranking a project's entities for a query, and abstaining when memory holds no answer.

Ranking means what it says: an entity the query names ranks above one it does
not (:mod:`.name_matches`); then an entity matching more of the query's content terms
ranks above one matching fewer; among equals, a stronger BM25 match ranks higher;
a newer observation only breaks ties. A match is an entity the query names, or
one with a passage (an observation with its entity's name and type) covering
enough of the query's IDF-weighted content and at least half its terms,
including a term that is not generic.

With the semantic arm on, among entities matching the same number of terms
the order is the reciprocal rank fusion of the BM25 and vector rankings, and
entities close in meaning that are not matches come back apart, as related
(see :mod:`.fusion`).
"""

import sqlite3
from dataclasses import dataclass, field

from ..vectors.nearest import similar
from .candidates import Candidate, fts_candidates, natural_candidates, ranked
from .forgotten import forgotten_terms
from .fusion import fused, related, semantic_may_answer
from .name_matches import named_entities
from .settings import SearchSettings
from .terms import content_terms, is_fts_syntax, plain_words
from .weights import TermStats

DEFAULT_MIN_COVERAGE = 0.45


@dataclass
class Found:
    """What a search found: the matches, and apart from them what is only similar in meaning."""

    mode: str  # "natural", or "fts" for an FTS5 expression
    matches: list[Candidate]  # best first
    below_coverage: int = 0  # candidates dropped for covering too little of the query
    related: list[tuple[int, float]] = field(default_factory=list)  # [(entity id, cosine similarity)], not matches


def find(conn: sqlite3.Connection, project: str, query: str, min_coverage: float, settings: SearchSettings) -> Found:
    """
    Rank the project's entities for ``query``.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param query: a natural question, keywords, or an FTS5 expression
    :param min_coverage: the share of the query's (IDF-weighted) content a match must cover
    :param settings: whether the semantic arm runs, and its constants
    """
    if is_fts_syntax(query):
        candidates = fts_candidates(conn, project, query)
        if candidates is not None:
            add_named(conn, project, query, plain_words(query) or [query], candidates, {})
            return Found("fts", ranked(candidates))
    terms = content_terms(query)
    candidates, stats = natural_candidates(conn, project, terms)
    add_named(conn, project, query, terms, candidates, {t: s.idf for t, s in stats.items()})
    for term in forgotten_terms(conn, project, stats, min_coverage):
        stats[term].forgotten = True  # full weight: the question abstains
    total_weight = sum(s.weight for s in stats.values()) or 1.0
    kept = [c for c in ranked(candidates) if c.named or answers(c, stats, min_coverage * total_weight)]
    found = Found("natural", kept, len(candidates) - len(kept))
    if settings.semantic_on() and semantic_may_answer(conn, project, candidates, stats):
        near = similar(conn, project, query)
        found.matches, found.related = fused(kept, near, settings), related(kept, near, settings)
    return found


def add_named(
    conn: sqlite3.Connection, project: str, query: str, terms: list[str], candidates: dict[int, Candidate], strengths: dict[str, float]
) -> None:
    """
    Make each entity the query names a candidate ranked above all others: a
    match whatever the rest of its words cover (see :mod:`.name_matches`).

    :param strengths: each term's strength where a name accounts for it and no index ranked it: its IDF
    """
    for entity_id, match in named_entities(conn, project, query, terms).items():
        candidates.setdefault(entity_id, Candidate(entity_id)).name(match, len(terms), strengths)


def answers(candidate: Candidate, stats: dict[str, TermStats], min_weight: float) -> bool:
    """
    Whether one of the candidate's passages covers enough of the query: at
    least ``min_weight`` of its terms' weights, at least half of its terms
    (rounded down: one of two or three, two of four or five), and a term that is not generic.
    """
    if sum(stats[t].weight for t in candidate.terms) < min_weight:
        return False  # not even all its passages together
    least = max(1, len(stats) // 2)
    return any(
        len(terms) >= least and sum(stats[t].weight for t in terms) >= min_weight and any(not stats[t].generic for t in terms)
        for terms in candidate.passages()
    )
