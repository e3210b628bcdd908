"""How much each query term says: its IDF in the project, and whether it is generic or unknown."""

import math
import sqlite3
from dataclasses import dataclass

from .terms import fts_quote

UNKNOWN_TERM_WEIGHT = 0.25
GENERIC_SHARE = 0.2
GENERIC_MIN_ENTITIES = 3
INDEXES = ("observations", "entities", "memory_aliases")  # the word indexes: observations_fts, entities_fts, ...


def idf(matching: int, total: int) -> float:
    "BM25's inverse document frequency: rare terms carry more of a query's meaning."
    return math.log((total - matching + 0.5) / (matching + 0.5) + 1.0)


@dataclass
class TermStats:
    """How much a query term says: its IDF in the project, and whether it is generic, unknown or forgotten."""

    idf: float
    generic: bool
    unknown: bool = False  # memory holds it nowhere now
    forgotten: bool = False  # unknown, but a deleted passage held it with enough of the query to answer it

    @property
    def weight(self) -> float:
        "The IDF, a quarter of it for an unknown term that is not forgotten (most likely question wording)."
        return self.idf * (UNKNOWN_TERM_WEIGHT if self.unknown and not self.forgotten else 1.0)


def term_stats(conn: sqlite3.Connection, term: str, matching: int, total: int) -> TermStats:
    """
    A term's weight is its IDF in the project. A term memory holds nowhere is
    most likely the question's own wording ("how often", "maximum"), so it weighs
    less (unless :func:`~.forgotten.forgotten_terms` finds it in a deleted
    answer); one stored only in other projects keeps its full weight, so a
    question about another project's thing abstains. A term in a large share of
    the project's entities (such as "service") is generic: it cannot make a match alone.

    :param conn: a connection to the memory file
    :param term: the term
    :param matching: how many of the project's entities it matches
    :param total: how many entities the project has
    """
    unknown = not matching and not stored_anywhere(conn, term)
    generic = matching >= GENERIC_MIN_ENTITIES and matching > GENERIC_SHARE * total
    return TermStats(idf(matching, total), generic, unknown)


def stored_anywhere(conn: sqlite3.Connection, term: str) -> bool:
    "Whether any project's memory holds ``term``; says nothing about what holds it."
    return any(
        conn.execute(f"SELECT 1 FROM {index}_fts WHERE {index}_fts MATCH ? LIMIT 1", [fts_quote(term)]).fetchone()
        for index in INDEXES
    )
