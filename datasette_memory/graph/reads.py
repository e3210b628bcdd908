"""Reading the graph of a project: entities with their observations, and relations.

A whole graph is read as rows a batch at a time (:func:`entity_rows`,
:func:`relation_rows`), so a door can write it out without ever holding it as
dicts; :func:`read_graph` is the same rows as the official server's
``{entities, relations}``.
"""

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from .parsing import RELATION_FIELDS, parse_names


def entity_id(conn: sqlite3.Connection, project: str, name: str) -> int | None:
    "The row id of entity ``name`` in ``project``, or None."
    row = conn.execute(
        "SELECT id FROM entities WHERE project = ? AND name = ?", [project, name]
    ).fetchone()
    return row[0] if row else None


def entities_where(conn: sqlite3.Connection, where: str, params: list[Any]) -> list[dict[str, Any]]:
    "Entities matching ``where`` (which scopes the project), in creation order, with observations."
    rows = conn.execute(
        f"SELECT id, name, entity_type FROM entities WHERE {where} ORDER BY id", params
    ).fetchall()
    observations: dict[int, list[str]] = {id: [] for id, _, _ in rows}
    if rows:
        for id, content in conn.execute(
            "SELECT entity_id, content FROM observations WHERE entity_id IN "
            "(SELECT value FROM json_each(?)) ORDER BY id",
            [json.dumps(list(observations))],
        ):
            observations[id].append(content)
    return [
        {"name": name, "entityType": entity_type, "observations": observations[id]}
        for id, name, entity_type in rows
    ]


def relations_touching(conn: sqlite3.Connection, project: str, names: list[str]) -> list[dict[str, str]]:
    "Relations of ``project`` with at least one endpoint in ``names``, in creation order."
    # a UNION, so each side seeks its own index (an OR scans every relation of the project)
    rows = conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE id IN ("
        "SELECT id FROM relations WHERE project = ? AND from_entity IN (SELECT value FROM json_each(?)) UNION "
        "SELECT id FROM relations WHERE project = ? AND to_entity IN (SELECT value FROM json_each(?))) "
        "ORDER BY id",
        [project, json.dumps(list(names)), project, json.dumps(list(names))],
    ).fetchall()
    return [dict(zip(RELATION_FIELDS, row)) for row in rows]


# entities read, with their observations, per query
ENTITY_BATCH = 1000


def read_graph(conn: sqlite3.Connection, project: str) -> dict[str, list[Any]]:
    "The whole graph of ``project``: ``{entities, relations}``."
    return {
        "entities": [
            {"name": name, "entityType": entity_type, "observations": observations}
            for _, name, entity_type, observations in entity_rows(conn, project)
        ],
        "relations": [dict(zip(RELATION_FIELDS, row)) for _, *row in relation_rows(conn, project)],
    }


def entity_rows(
    conn: sqlite3.Connection, project: str, after: int = 0, limit: int | None = None
) -> Iterator[tuple[int, str, str, list[str]]]:
    """
    The entities of ``project`` in creation order, as ``(id, name, entity_type,
    observations)`` with observations in the order they were added.

    :param after: only entities whose id is greater
    :param limit: at most this many; None for all
    """
    along_table = holds_most(conn, project)
    rows = conn.execute(in_id_order(along_table, "id, name, entity_type", "entities", limit), [project, after])
    if along_table and after == 0 and limit is None:
        # every entity of a project holding most of the file: its observations in one pass along their table
        # (a fifth faster than looking them up a batch of entities at a time), each list let go once yielded
        observations = observations_by_entity(conn)
        for id, name, entity_type in rows:
            yield id, name, entity_type, observations.pop(id, [])
        return
    while batch := rows.fetchmany(ENTITY_BATCH):
        by_entity: dict[int, list[str]] = {row[0]: [] for row in batch}
        for id, content in conn.execute(
            "SELECT entity_id, content FROM observations WHERE entity_id IN (SELECT value FROM json_each(?)) ORDER BY id",
            [json.dumps(list(by_entity))],
        ):
            by_entity[id].append(content)
        for id, name, entity_type in batch:
            yield id, name, entity_type, by_entity[id]


def observations_by_entity(conn: sqlite3.Connection) -> dict[int, list[str]]:
    "Every observation in the file, by entity id, in the order they were added."
    observations: dict[int, list[str]] = {}
    for id, content in conn.execute("SELECT entity_id, content FROM observations ORDER BY id"):
        listed = observations.get(id)
        if listed is None:
            observations[id] = [content]
        else:
            listed.append(content)
    return observations


def relation_rows(
    conn: sqlite3.Connection, project: str, after: int = 0, limit: int | None = None
) -> Iterator[tuple[int, str, str, str]]:
    """
    The relations of ``project`` in creation order, as ``(id, from, to, relation_type)``, read as they are iterated.

    :param after: only relations whose id is greater
    :param limit: at most this many; None for all
    """
    return conn.execute(
        in_id_order(holds_most(conn, project), "id, from_entity, to_entity, relation_type", "relations", limit),
        [project, after],
    )


def holds_most(conn: sqlite3.Connection, project: str) -> bool:
    "Whether ``project`` holds at least half of the file's entities."
    sizes = dict(conn.execute("SELECT project, entities FROM memory_project_sizes"))
    return 2 * sizes.get(project, 0) >= sum(sizes.values())


def in_id_order(along_table: bool, columns: str, table: str, limit: int | None) -> str:
    """
    A query for ``table``'s rows of one project after an id (its two parameters),
    in id order. A project holding most of the file is read along the table
    (``+project`` keeps SQLite off the project index), so a page stops after
    ``limit`` rows instead of sorting the whole project; a smaller one is found
    through the index on its name.
    """
    return (
        f"SELECT {columns} FROM {table} WHERE {'+' if along_table else ''}project = ? AND id > ? ORDER BY id"
        + (f" LIMIT {int(limit)}" if limit is not None else "")
    )


def count_after(conn: sqlite3.Connection, project: str, table: str, after: int) -> int:
    "How many of ``project``'s rows in ``table`` (entities or relations) have an id greater than ``after``."
    return conn.execute(f"SELECT count(*) FROM {table} WHERE project = ? AND id > ?", [project, after]).fetchone()[0]


def entity_count(conn: sqlite3.Connection, project: str) -> int:
    "How many entities ``project`` holds (kept by triggers, so read at once)."
    row = conn.execute("SELECT entities FROM memory_project_sizes WHERE project = ?", [project]).fetchone()
    return row[0] if row else 0


def open_nodes(conn: sqlite3.Connection, project: str, names: Any) -> dict[str, list[Any]]:
    "The named entities of ``project`` and the relations touching them."
    names = parse_names(names, "names")
    entities = entities_where(
        conn, "project = ? AND name IN (SELECT value FROM json_each(?))", [project, json.dumps(names)]
    )
    return {
        "entities": entities,
        "relations": relations_touching(conn, project, [e["name"] for e in entities]),
    }
