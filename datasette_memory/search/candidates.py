"""Candidates: each entity's evidence for a query, gathered from the word indexes with BM25."""

import sqlite3
from dataclasses import dataclass, field

from .terms import fts_quote, plain_words
from .weights import INDEXES, TermStats, term_stats

HITS_PER_TERM = 500
HIT_QUERIES = {  # one per word index, by the names in weights.INDEXES
    "observations": (
        "SELECT o.entity_id, o.id, -bm25(observations_fts) FROM observations_fts "
        "JOIN observations o ON o.id = observations_fts.rowid JOIN entities e ON e.id = o.entity_id "
        "WHERE observations_fts MATCH ? AND e.project = ? ORDER BY rank LIMIT ?"
    ),
    # a word in an entity's name counts three times one in its type
    "entities": (
        "SELECT e.id, NULL, -bm25(entities_fts, 3.0, 1.0) FROM entities_fts "
        "JOIN entities e ON e.id = entities_fts.rowid "
        "WHERE entities_fts MATCH ? AND e.project = ? ORDER BY rank LIMIT ?"
    ),
    # an old name a person renamed or merged away counts as a name
    "memory_aliases": (
        "SELECT a.entity_id, NULL, -bm25(memory_aliases_fts) FROM memory_aliases_fts "
        "JOIN memory_aliases a ON a.id = memory_aliases_fts.rowid "
        "WHERE memory_aliases_fts MATCH ? AND a.project = ? ORDER BY rank LIMIT ?"
    ),
}
Hit = tuple[int, int | None, float]  # (entity id, observation id or None for its name and type, BM25 strength)


@dataclass
class Candidate:
    """One entity's evidence for a query."""

    id: int
    terms: dict[str, float] = field(default_factory=dict)  # term -> best BM25 strength
    observation_ids: set[int] = field(default_factory=set)
    name_terms: set[str] = field(default_factory=set)  # terms matching the entity's name or type
    observation_terms: dict[int, set[str]] = field(default_factory=dict)  # observation id -> the terms it matches
    newest: int = 0
    fused: float | None = None  # reciprocal rank fusion, in (0, 1), when the semantic arm ranked
    similarity: float | None = None  # cosine similarity to the query, when the semantic arm ranked it

    def add(self, term: str, strength: float, observation_id: int | None = None) -> None:
        "Record that ``term`` matched this entity's name or type, or one observation."
        self.terms[term] = max(self.terms.get(term, 0.0), strength)
        if observation_id is None:
            self.name_terms.add(term)
        else:
            self.observation_ids.add(observation_id)
            self.observation_terms.setdefault(observation_id, set()).add(term)
            self.newest = max(self.newest, observation_id)

    def passages(self) -> list[set[str]]:
        "The sets of terms one passage matches: one observation with the entity's name and type."
        return [self.name_terms | terms for terms in self.observation_terms.values()] or [self.name_terms]

    def score(self) -> float:
        "Matched terms first; BM25 strength (or the fused rank), squashed below 1, breaks ties."
        if self.fused is not None:
            return len(self.terms) + self.fused
        strength = sum(self.terms.values())
        return len(self.terms) + strength / (1.0 + strength)

    def why(self) -> str:
        "Why it is in the results: a match, or only similar meaning."
        if self.terms or self.similarity is None:
            return "match"
        return f"similar meaning (cosine similarity {self.similarity:.2f})"


def hits(conn: sqlite3.Connection, project: str, match: str, index: str) -> list[Hit]:
    "The hits of an FTS5 expression in one word index (``observations`` or ``entities``), best first."
    return conn.execute(HIT_QUERIES[index], [match, project, HITS_PER_TERM]).fetchall()


def natural_candidates(conn: sqlite3.Connection, project: str, terms: list[str]) -> tuple[dict[int, Candidate], dict[str, TermStats]]:
    """
    Candidates per entity, and each term's :class:`~.weights.TermStats`, for a natural-language query.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param terms: the query's content terms
    """
    total = conn.execute("SELECT count(*) FROM entities WHERE project = ?", [project]).fetchone()[0]
    candidates: dict[int, Candidate] = {}
    stats: dict[str, TermStats] = {}
    for term in terms:
        term_hits = [hit for index in INDEXES for hit in hits(conn, project, fts_quote(term), index)]
        stats[term] = term_stats(conn, term, len({entity_id for entity_id, _, _ in term_hits}), total)
        for entity_id, observation_id, strength in term_hits:
            candidates.setdefault(entity_id, Candidate(entity_id)).add(term, strength, observation_id)
    return candidates, stats


def fts_candidates(conn: sqlite3.Connection, project: str, query: str) -> dict[int, Candidate] | None:
    """
    Candidates for a query in FTS5 syntax, or None if neither index accepts it.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param query: an FTS5 expression
    """
    candidates: dict[int, Candidate] = {}
    accepted = False
    terms = plain_words(query) or [query]
    for index in INDEXES:
        try:
            index_hits = hits(conn, project, query, index)
        except sqlite3.OperationalError:
            continue  # not well-formed for this index: never shown to the agent
        accepted = True
        for entity_id, observation_id, strength in index_hits:
            candidate = candidates.setdefault(entity_id, Candidate(entity_id))
            for term in terms:
                candidate.add(term, strength, observation_id)
    return candidates if accepted else None


def ranked(candidates: dict[int, Candidate]) -> list[Candidate]:
    "Candidates best first: score, then the newest matching observation."
    return sorted(candidates.values(), key=lambda c: (c.score(), c.newest), reverse=True)
