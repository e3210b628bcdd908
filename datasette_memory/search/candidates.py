"""Candidates: each entity's evidence for a query, gathered from the word indexes.

A word in at most :data:`RARE_ROWS` rows of every word index is rare in the
file: its hits are ranked by BM25, as they always were, all of them (a word
index returns up to :data:`HITS_PER_TERM`). A word in more is common: ranking
all its rows with FTS5's ``bm25()`` means reading and scoring them per query
(ranking a question's words that way takes 224 ms p50 at 100,000 entities in
``bench/search_scale.py``), and turning hundreds of hits into candidates in
Python was most of a question's 4 to 8 ms at 1,000 to 3,000 entities, where few
words are in a thousand rows; so a common word is never ranked. Its weight comes
from the project's sample (:mod:`.project_sample`), and it is looked for only
where it meets the words that found the candidates: in the observations they
found (FTS5 intersects the doclists without ranking), and in the names and
types of the best candidates. When only common words are asked, the weightiest
one that is not generic finds the candidates among its newest rows; when every
word is generic nothing can match, and nothing is read.

A common word found counts its project IDF as its strength (BM25's score for
one occurrence in a passage of average length), so the rules of ranking hold
on either path: more matched terms first, strength breaking ties.
"""

import json
import sqlite3
import threading
from dataclasses import dataclass, field

from .name_matches import NameMatch
from .project_sample import TOKENIZE, Sample, project_size, sample
from .terms import fts_quote, plain_words
from .weights import INDEXES, TermStats, term_stats

HITS_PER_TERM = 500
RARE_ROWS = 200  # a word in more rows of one word index is common in the file
COMMON_ROWS = 200  # newest rows of the project a common term reads when it must find the candidates itself
LOOKED_WITHIN = 200  # best candidates common words are looked for in
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
    named: NameMatch | None = None  # how the query names it, if it does
    name_bonus: float = 0.0  # (the query's terms + 1) per level of naming: above every entity it does not name

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
        "Being named first; then matched terms; BM25 strength (or the fused rank), squashed below 1, breaks ties."
        if self.fused is not None:
            return self.name_bonus + len(self.terms) + self.fused
        strength = sum(self.terms.values())
        return self.name_bonus + len(self.terms) + strength / (1.0 + strength)

    def name(self, match: NameMatch, query_terms: int, strengths: dict[str, float]) -> None:
        """
        Record that the query names this entity: the terms its name accounts for
        count as name terms, and it ranks above every entity the query does not name.

        :param match: how the query names it
        :param query_terms: how many content terms the query has
        :param strengths: each term's strength where it has to be assumed (its IDF)
        """
        for term in match.terms:
            self.add(term, self.terms.get(term, strengths.get(term, 1.0)))
        self.named = match
        self.name_bonus = match.level * (query_terms + 1.0)


def hits(conn: sqlite3.Connection, project: str, match: str, index: str) -> list[Hit]:
    "The hits of an FTS5 expression in one word index (``observations``, ``entities`` or ``memory_aliases``), best first."
    return conn.execute(HIT_QUERIES[index], [match, project, HITS_PER_TERM]).fetchall()


def common_in_file(conn: sqlite3.Connection, match: str) -> bool:
    "Whether a term is in more than :data:`RARE_ROWS` rows of a word index (counting stops there)."
    return any(
        conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {index}_fts WHERE {index}_fts MATCH ? LIMIT ?)", [match, RARE_ROWS + 1])
        .fetchone()[0] > RARE_ROWS
        for index in INDEXES
    )


def natural_candidates(conn: sqlite3.Connection, project: str, terms: list[str]) -> tuple[dict[int, Candidate], dict[str, TermStats]]:
    """
    Candidates per entity, and each term's :class:`~.weights.TermStats`, for a natural-language query.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param terms: the query's content terms
    """
    total = project_size(conn, project)
    candidates: dict[int, Candidate] = {}
    stats: dict[str, TermStats] = {}
    common: list[str] = []
    taken: Sample | None = None  # the project's sample, once a term needs it
    for term in terms:
        if common_in_file(conn, fts_quote(term)):
            common.append(term)
            taken = taken or sample(conn, project, total)
            stats[term] = term_stats(conn, term, taken.matching(fts_quote(term), total), total)
            continue
        term_hits = [hit for index in INDEXES for hit in hits(conn, project, fts_quote(term), index)]
        stats[term] = term_stats(conn, term, len({entity_id for entity_id, _, _ in term_hits}), total)
        for entity_id, observation_id, strength in term_hits:
            candidates.setdefault(entity_id, Candidate(entity_id)).add(term, strength, observation_id)
    if common:
        base = list(dict.fromkeys(t for c in candidates.values() for t in c.terms))
        if not base:  # only common terms: the weightiest specific one finds candidates among its newest rows
            specific = [t for t in common if not stats[t].generic]
            if specific:
                seed = max(specific, key=lambda t: stats[t].idf)
                add_newest(conn, project, candidates, seed, stats, rows_read(conn, total))
                base = [seed]
        if base:
            add_common(conn, candidates, base, common, stats)
    return candidates, stats


def rows_read(conn: sqlite3.Connection, project_entities: int) -> int:
    "How many of a common term's newest rows to read for about :data:`COMMON_ROWS` of them in the project."
    file_entities = conn.execute("SELECT coalesce(sum(entities), 0) FROM memory_project_sizes").fetchone()[0]
    return COMMON_ROWS * max(1, file_entities // max(project_entities, 1))


NEWEST = {  # a term's newest rows in a word index, in the project: (entity id, observation id or None)
    "observations": (
        "SELECT o.entity_id, o.id FROM (SELECT rowid FROM observations_fts WHERE observations_fts MATCH ? "
        "ORDER BY rowid DESC LIMIT ?) f JOIN observations o ON o.id = f.rowid JOIN entities e ON e.id = o.entity_id WHERE e.project = ?"
    ),
    "entities": (
        "SELECT e.id, NULL FROM (SELECT rowid FROM entities_fts WHERE entities_fts MATCH ? ORDER BY rowid DESC LIMIT ?) f "
        "JOIN entities e ON e.id = f.rowid WHERE e.project = ?"
    ),
    "memory_aliases": (
        "SELECT a.entity_id, NULL FROM (SELECT rowid FROM memory_aliases_fts WHERE memory_aliases_fts MATCH ? "
        "ORDER BY rowid DESC LIMIT ?) f JOIN memory_aliases a ON a.id = f.rowid WHERE a.project = ?"
    ),
}


def add_newest(conn: sqlite3.Connection, project: str, candidates: dict[int, Candidate], term: str, stats: dict[str, TermStats], window: int) -> None:
    """
    Add ``term`` to the entities among its newest ``window`` rows of each word
    index, counting its project IDF as its strength: BM25's score for one
    occurrence in a passage of average length, without reading the term's
    whole doclist as FTS5's ``bm25()`` does.
    """
    for index in INDEXES:
        for entity_id, observation_id in conn.execute(NEWEST[index], [fts_quote(term), window, project]):
            candidates.setdefault(entity_id, Candidate(entity_id)).add(term, stats[term].idf, observation_id)


scratch = threading.local()  # each thread's in-memory word index of candidates' names and types


def add_common(conn: sqlite3.Connection, candidates: dict[int, Candidate], base: list[str], common: list[str], stats: dict[str, TermStats]) -> None:
    """
    Add each common term where it meets the ``base`` terms (the ones that found
    the candidates): in an observation holding a base term too, among the rows
    already found (FTS5 intersects the doclists without ranking, from the
    oldest of those rows on), or in the name or type of one of the best
    :data:`LOOKED_WITHIN` candidates.
    """
    owners = {observation_id: c for c in candidates.values() for observation_id in c.observation_ids}
    for term in common:
        others = [t for t in base if t != term]
        if not others or not owners:
            continue
        meeting = f"{fts_quote(term)} AND ({' OR '.join(map(fts_quote, others))})"
        rows = conn.execute(
            "SELECT rowid FROM observations_fts WHERE observations_fts MATCH ? AND rowid >= ?", [meeting, min(owners)]
        )
        for (row,) in rows:
            if row in owners:
                owners[row].add(term, stats[term].idf, row)
    best = [c.id for c in ranked(candidates)[:LOOKED_WITHIN]]
    if not hasattr(scratch, "index"):
        scratch.index = sqlite3.connect(":memory:", isolation_level=None)
        scratch.index.execute(f"CREATE VIRTUAL TABLE names USING fts5(name, tokenize='{TOKENIZE}')")
    index = scratch.index
    index.execute("BEGIN")
    index.execute("DELETE FROM names")
    index.executemany(
        "INSERT INTO names (rowid, name) VALUES (?, ?)",
        conn.execute("SELECT id, name || ' ' || entity_type FROM entities WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(best)]),
    )
    for term in common:
        for (entity_id,) in index.execute("SELECT rowid FROM names WHERE names MATCH ?", [fts_quote(term)]):
            candidates[entity_id].add(term, stats[term].idf)
    index.execute("ROLLBACK")  # nothing kept: the next query starts from an empty index


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
