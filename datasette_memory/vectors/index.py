"""Keeping the side file in step with memory: re-embed what changed, forget what was deleted."""

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ..core.database import write_transaction
from ..core.ledger import head
from .embedding import embed
from .entity_texts import EntityText, entity_texts
from .side_file import embedded_through, record_progress, side_file

JSON_PAIRS = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
JSON_TRIPLES = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?))"
# Entities per call to the model: calls of a few hundred pay its fixed costs
# once per call and sort many texts by length, so each pass pads little (see
# bench/vectors_cost.py). A catch-up gathers a few calls' worth of entities
# before recording its progress, so it leaves no small call after each step.
EMBED_BATCH = 256
ENTITIES_PER_STEP = 4 * EMBED_BATCH
EVENTS_PER_READ = 1000
RELATION_KINDS = ("create_relation", "delete_relation")  # their events change no entity's text
# Each event after a point: its project, kind and target, and for a rename or merge the name it leads to.
EVENTS_AFTER = (
    "SELECT id, project, kind, target, CASE kind WHEN 'rename_entity' THEN json_extract(new, '$.name') "
    "WHEN 'merge_entity' THEN json_extract(new, '$.into') END FROM events WHERE id > ? ORDER BY id LIMIT ?"
)
Progress = Callable[[int], Any] | None
T = TypeVar("T")


def stale(side: Any, entities: list[EntityText]) -> list[EntityText]:
    "The entities whose stored vector is missing or embeds other text."
    stored = dict(
        side.execute(
            "SELECT entity_id, digest FROM entity_digests WHERE entity_id IN (SELECT value FROM json_each(?))",
            [json.dumps([e.id for e in entities])],
        ).fetchall()
    )
    return [e for e in entities if stored.get(e.id) != e.digest]


def store(side: Any, entities: list[EntityText], vectors: list[bytes]) -> None:
    "Replace the vectors of ``entities`` (and of any entity that had the same name)."
    with write_transaction(side):
        for entity, vector in zip(entities, vectors):
            forget_rows(side, "entity_id = ? OR (project = ? AND name = ?)", [entity.id, entity.project, entity.name])
            side.execute(
                "INSERT INTO entity_digests (entity_id, project, name, digest) VALUES (?, ?, ?, ?)",
                [entity.id, entity.project, entity.name, entity.digest],
            )
            side.execute("INSERT INTO entity_vectors (entity_id, project, embedding) VALUES (?, ?, ?)", [entity.id, entity.project, vector])


def forget_rows(side: Any, where: str, params: list[object]) -> int:
    "Delete the vectors and digests of the side file's entities matching ``where``; return how many."
    ids = [id for (id,) in side.execute(f"SELECT entity_id FROM entity_digests WHERE {where}", params).fetchall()]
    for id in ids:
        side.execute("DELETE FROM entity_vectors WHERE entity_id = ?", [id])
        side.execute("DELETE FROM entity_digests WHERE entity_id = ?", [id])
    return len(ids)


def forget(side: Any, where: str, params: list[object]) -> int:
    "Delete, in one transaction, the vectors of the side file's entities matching ``where``; return how many."
    if not side.execute(f"SELECT 1 FROM entity_digests WHERE {where} LIMIT 1", params).fetchone():
        return 0  # most changes delete nothing: no write transaction
    with write_transaction(side):
        return forget_rows(side, where, params)


def refresh(conn: sqlite3.Connection, names: Iterable[tuple[str, str]]) -> int:
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


def embed_stale(conn: sqlite3.Connection, entities: list[EntityText], progress: Progress = None) -> int:
    """
    Embed and store the stale ones among ``entities``, :data:`EMBED_BATCH` to
    a call of the model (the side file is free while it runs); return how many.
    """
    with side_file(conn) as side:
        todo = stale(side, entities)
    if progress:
        progress(len(entities) - len(todo))
    for chunk in even_batches(todo, EMBED_BATCH):
        vectors = embed([e.text for e in chunk])
        with side_file(conn) as side:
            store(side, chunk, vectors)
        if progress:
            progress(len(chunk))
    return len(todo)


def even_batches(items: list[T], most: int) -> Iterator[list[T]]:
    "``items`` in as few batches of at most ``most`` as can be, of even sizes: no small batch is left at the end."
    count = -(-len(items) // most)
    for i in range(count):
        yield items[i * len(items) // count : (i + 1) * len(items) // count]


def named(project: str, kind: str, target: str, leads_to: str | None) -> list[tuple[str, str]]:
    "The ``(project, entity name)`` pairs whose text an event may have changed: its target, and the name a rename or merge leads to."
    if kind in RELATION_KINDS:
        return []
    return [(project, target)] + ([(project, leads_to)] if leads_to else [])


def next_step(conn: sqlite3.Connection, after: int) -> tuple[list[tuple[str, str]], int] | None:
    """
    The entities that the ledger events after event ``after`` name, each once,
    read until there are :data:`ENTITIES_PER_STEP` of them or the ledger ends,
    and the id of the last event read; None when no event follows ``after``.

    :param conn: a connection to the memory file
    :param after: the id of the last event already caught up with
    """
    pairs: dict[tuple[str, str], None] = {}
    last = after
    while len(pairs) < ENTITIES_PER_STEP and (rows := conn.execute(EVENTS_AFTER, [last, EVENTS_PER_READ]).fetchall()):
        for _, project, kind, target, leads_to in rows:
            pairs.update(dict.fromkeys(named(project, kind, target, leads_to)))
        last = rows[-1][0]
    return (list(pairs), last) if last > after else None


def start_from(conn: sqlite3.Connection, since: int) -> None:
    """
    Make the side file if it is missing, starting from ledger event ``since``:
    the changes after it are the first it will hold. A side file that already
    records its progress is left as it is.

    :param conn: a connection to the memory file
    :param since: the ledger head before the write that asks for the side file
    """
    with side_file(conn) as side:
        if side is not None and embedded_through(side) is None:
            record_progress(side, since)


def catch_up(conn: sqlite3.Connection) -> int:
    """
    Bring an existing side file up to the ledger head: re-embed the entities
    that the events after its recorded progress name, forget deleted ones, and
    record the progress step by step, so an interrupted catch-up resumes where
    it stopped. A side file made before progress was kept starts at the head.

    :param conn: a connection to the memory file
    :return: how many entities were embedded
    """
    with side_file(conn, create=False) as side:
        if side is None:
            return 0
        done = embedded_through(side)
        if done is None:
            done = head(conn)[0] or 0
            record_progress(side, done)
    embedded = 0
    while (step := next_step(conn, done)) is not None:
        names, done = step
        embedded += refresh(conn, names)
        with side_file(conn) as side:
            record_progress(side, done)
    return embedded


def backfill(conn: sqlite3.Connection, progress: Progress = None) -> dict[str, int]:
    """
    Bring the side file in step with every project: embed what is missing or
    stale, forget what memory no longer holds, and record that the whole ledger is embedded.

    :param conn: a connection to the memory file
    :param progress: called with the number of entities handled, batch by batch
    :return: counts of ``entities``, ``embedded`` and ``forgotten``
    """
    through = head(conn)[0] or 0
    entities = entity_texts(conn, "1", [])
    live = json.dumps([[e.id, e.project, e.name] for e in entities])
    with side_file(conn) as side:
        forgotten = forget(side, f"(entity_id, project, name) NOT IN {JSON_TRIPLES}", [live])
    embedded = embed_stale(conn, entities, progress)
    with side_file(conn) as side:
        record_progress(side, through)
    return {"entities": len(entities), "embedded": embedded, "forgotten": forgotten}


def entity_count(conn: sqlite3.Connection) -> int:
    "How many entities the memory file holds, in every project."
    return conn.execute("SELECT count(*) FROM entities").fetchone()[0]


def pending_changes(conn: sqlite3.Connection) -> int | None:
    "How many ledger events the side file has not caught up with, or None if it has no side file or no progress yet."
    with side_file(conn, create=False) as side:
        done = embedded_through(side) if side is not None else None
    if done is None:
        return None
    return conn.execute("SELECT count(*) FROM events WHERE id > ?", [done]).fetchone()[0]
