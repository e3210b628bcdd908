"""The vector arm of a search: a project's entities most similar in meaning to a query."""

import json
import logging
import sqlite3
from dataclasses import dataclass

from .embedding import embed
from .entity_texts import entity_texts
from .side_file import side_file

NEIGHBOURS = 20  # entities the vector arm ranks per query
log = logging.getLogger(__name__)


@dataclass
class Similar:
    """The vector arm's answer: a project's entities by similarity, and the best elsewhere."""

    ranked: list[tuple[int, float]]  # [(entity id, cosine similarity)], most similar first, current vectors only
    best_elsewhere: float | None  # the best similarity in any other project, if among the nearest


def similar(conn: sqlite3.Connection, project: str, query: str, limit: int = NEIGHBOURS) -> Similar | None:
    """
    The project's entities most similar in meaning to ``query``, or None when
    the project has no vectors yet (the model is then not loaded), or the side
    file cannot be read (search is then lexical, and says why in the log).

    :param conn: a connection to the memory file
    :param project: the project scope; other projects only give ``best_elsewhere``
    :param query: the search text
    :param limit: how many neighbours to rank
    """
    try:
        return nearest(conn, project, query, limit)
    except Exception as e:
        log.warning("semantic search skipped (%s); run datasette-memory backfill-vectors", e)
        return None


def nearest(conn: sqlite3.Connection, project: str, query: str, limit: int) -> Similar | None:
    "The work of :func:`similar`: nearest vectors here and anywhere, then the current ones of this project."
    with side_file(conn, create=False) as side:
        if side is None or not side.execute("SELECT 1 FROM entity_digests WHERE project = ? LIMIT 1", [project]).fetchone():
            return None
    vector = embed([query])[0]
    knn = "SELECT entity_id, project, distance FROM entity_vectors WHERE embedding MATCH ? AND k = ?"
    with side_file(conn, create=False) as side:
        here = side.execute(knn + " AND project = ?", [vector, limit, project]).fetchall()
        # the scan of every project only when there is another (two seeks of the (project, name) index)
        others = side.execute(
            "SELECT EXISTS (SELECT 1 FROM entity_digests WHERE project < ?1) OR EXISTS (SELECT 1 FROM entity_digests WHERE project > ?1)",
            [project],
        ).fetchone()[0]
        anywhere = side.execute(knn, [vector, limit]).fetchall() if others else []
        ids = json.dumps([id for id, _, _ in here])
        digests = dict(side.execute("SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))", [ids]))
    entities = entity_texts(conn, "id IN (SELECT value FROM json_each(?)) AND project = ?", [ids, project])
    current = {e.id for e in entities if digests.get(e.id) == e.digest}
    elsewhere = [1.0 - distance for _, other, distance in anywhere if other != project]
    return Similar(
        ranked=[(id, 1.0 - distance) for id, _, distance in here if id in current],
        best_elsewhere=max(elsewhere) if elsewhere else None,
    )
