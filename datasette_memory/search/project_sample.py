"""How many of a project's entities hold a word common in the file, from a sample kept in memory.

Counting a common word's entities exactly means reading its whole doclist
(80,000 rows for a word in most of 100,000 entities) on every query. Instead
each process keeps, per memory file and project, an in-memory FTS5 index of
about :data:`SAMPLE_ENTITIES` of the project's entities (chosen by a hash of
their ids: name, type and first observations, tokenized as the search indexes
are), and reads a
word's share of the project from it in microseconds. The sample is rebuilt when
the project's size, kept by triggers in ``memory_project_sizes``, has moved by
more than :data:`REFRESH_SHARE` since it was taken (or at all, for a project
small enough to be sampled whole).
"""

import sqlite3
import threading
from dataclasses import dataclass

SAMPLE_ENTITIES = 1000
OBSERVATIONS_PER_ENTITY = 10  # of each sampled entity, its first
REFRESH_SHARE = 0.05
TOKENIZE = "porter unicode61 remove_diacritics 2"  # as the word indexes (migration m006)
MAX_SAMPLES = 64  # files and projects kept per process
HASH_RANGE = 1 << 32  # an entity is sampled when a multiplicative hash of its id falls below a share of this


@dataclass
class Sample:
    """A project's sampled entities in an in-memory word index."""

    size: int  # the project's entities when it was taken
    taken: int  # entities in the sample
    index: sqlite3.Connection
    lock: threading.Lock

    def matching(self, fts_term: str, size: int) -> int:
        """
        About how many of the project's entities hold a term, scaled from the sample.

        :param fts_term: the term, as an FTS5 string
        :param size: the project's entities now
        """
        if not self.taken:
            return 0
        with self.lock:
            holding = self.index.execute("SELECT count(*) FROM sample WHERE sample MATCH ?", [fts_term]).fetchone()[0]
        return round(holding * size / self.taken)


samples: dict[tuple[str, str], Sample] = {}
samples_lock = threading.Lock()


def project_size(conn: sqlite3.Connection, project: str) -> int:
    "How many entities the project holds, from the table triggers keep."
    row = conn.execute("SELECT entities FROM memory_project_sizes WHERE project = ?", [project]).fetchone()
    return row[0] if row else 0


def file_key(conn: sqlite3.Connection) -> str:
    "The memory file a connection reads, or the connection itself for a database in memory."
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    return path or f"connection {id(conn)}"


def sample(conn: sqlite3.Connection, project: str, size: int) -> Sample:
    """
    The project's sample, taken again if the project's size has moved too far since.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param size: the project's entities now (:func:`project_size`)
    """
    key = (file_key(conn), project)
    with samples_lock:
        kept = samples.get(key)
    if kept is not None and not stale(kept, size):
        return kept
    taken = take(conn, project, size)
    with samples_lock:
        if len(samples) >= MAX_SAMPLES:
            samples.pop(next(iter(samples)))
        samples[key] = taken
    return taken


def stale(kept: Sample, size: int) -> bool:
    if kept.size <= SAMPLE_ENTITIES:  # sampled whole
        return size != kept.size
    return abs(size - kept.size) > REFRESH_SHARE * kept.size


def take(conn: sqlite3.Connection, project: str, size: int) -> Sample:
    "About :data:`SAMPLE_ENTITIES` of the project's entities, chosen by a hash of their ids, indexed with their observations."
    threshold = min(HASH_RANGE, HASH_RANGE * SAMPLE_ENTITIES // max(size, 1))
    index = sqlite3.connect(":memory:", check_same_thread=False)
    index.execute(f"CREATE VIRTUAL TABLE sample USING fts5(name, entity_type, observations, tokenize='{TOKENIZE}')")
    rows = conn.execute(
        """
        SELECT e.name, e.entity_type,
            (SELECT group_concat(content, ' ') FROM (
                SELECT content FROM observations WHERE entity_id = e.id ORDER BY id LIMIT ?3))
        FROM entities e WHERE e.project = ?1 AND ((e.id * 2654435761) & 4294967295) < ?2
        """,
        [project, threshold, OBSERVATIONS_PER_ENTITY],
    )
    index.executemany("INSERT INTO sample (name, entity_type, observations) VALUES (?, ?, ?)", rows)
    taken = index.execute("SELECT count(*) FROM sample").fetchone()[0]
    return Sample(size=size, taken=taken, index=index, lock=threading.Lock())
