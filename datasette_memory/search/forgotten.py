"""Questions about something memory forgot: the deleted words each deletion's ledger event feeds.

``memory_deleted_fts`` indexes the words of every deleted observation and
entity (no text is kept), keyed by the deletion's event id. It is never
searched for results: it only tells search that a question's unknown words
once answered it, so it must abstain rather than match on the rest.
"""

import json
import sqlite3
from collections.abc import Iterable

from .terms import fts_quote
from .weights import TermStats

DELETED_HITS = 500  # deletion events looked at per term


def deleted_events(conn: sqlite3.Connection, project: str, term: str, among: Iterable[int] | None = None) -> set[int]:
    """
    The ids of the project's deletion events whose deleted text held ``term``
    (stemmed as the search indexes are), at most :data:`DELETED_HITS`, or only those ``among``.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param term: one query term
    :param among: only these event ids
    """
    sql = (  # the word index first: a project holds many events
        "SELECT events.id FROM memory_deleted_fts CROSS JOIN events ON events.id = memory_deleted_fts.rowid "
        "WHERE memory_deleted_fts MATCH ? AND events.project = ?"
    )
    params: list[object] = [fts_quote(term), project]
    if among is not None:
        sql += " AND events.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(sorted(among)))
    return {id for (id,) in conn.execute(sql + " LIMIT ?", [*params, DELETED_HITS])}


def forgotten_terms(conn: sqlite3.Connection, project: str, stats: dict[str, TermStats], min_coverage: float) -> set[str]:
    """
    The unknown terms of a question that memory answered once: one deleted
    passage (an observation, or an entity with its observations) holds enough
    of the question, weighing its unknown terms in full, to have matched it.
    Then the question asks about something forgotten, not in its own words.
    Nothing deleted is returned: this only tells search to abstain.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param stats: each query term's :class:`~.weights.TermStats`
    :param min_coverage: the share of the query a passage must cover to answer it
    """
    unknown = {t for t, s in stats.items() if s.unknown}
    held: dict[int, set[str]] = {}  # deletion event id -> the query terms its text held
    for term in unknown:
        for id in deleted_events(conn, project, term):
            held.setdefault(id, set()).add(term)
    if not held:
        return set()
    for term in set(stats) - unknown:
        for id in deleted_events(conn, project, term, among=held):
            held[id].add(term)
    total = sum(s.idf for s in stats.values()) or 1.0
    found: set[str] = set()
    for terms in held.values():
        if sum(stats[t].idf for t in terms) / total >= min_coverage and any(not stats[t].generic for t in terms):
            found |= terms & unknown
    return found
