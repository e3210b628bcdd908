"""Keeping the side file in step with memory: re-embed what changed, forget what was deleted."""

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from ..core.database import write_transaction
from ..core.ledger import head
from .embedding import embed
from .entity_texts import EntityText, entity_texts
from .side_file import embedded_through, record_progress, side_file

JSON_PAIRS = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
JSON_TRIPLES = "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(?))"
EVENTS_PER_STEP = 200  # ledger events read per step of catching up
Progress = Callable[[int], Any] | None


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


def embed_stale(conn: sqlite3.Connection, entities: list[EntityText], progress: Progress = None, batch: int = 64) -> int:
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


def named(project: str, kind: str, target: str, new: str | None) -> list[tuple[str, str]]:
    "The ``(project, entity name)`` pairs an event changed: its target, and the name a rename or merge leads to."
    names = [(project, target)]
    if kind == "rename_entity" and new:
        names.append((project, json.loads(new)["name"]))
    elif kind == "merge_entity" and new:
        names.append((project, json.loads(new)["into"]))
    return names


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
    while rows := conn.execute(
        "SELECT id, project, kind, target, new FROM events WHERE id > ? ORDER BY id LIMIT ?", [done, EVENTS_PER_STEP]
    ).fetchall():
        embedded += refresh(conn, [pair for _, project, kind, target, new in rows for pair in named(project, kind, target, new)])
        done = rows[-1][0]
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
