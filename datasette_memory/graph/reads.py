"""Reading the graph of a project: entities with their observations, and relations."""

import json
import sqlite3
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


def read_graph(conn: sqlite3.Connection, project: str) -> dict[str, list[Any]]:
    "The whole graph of ``project``: ``{entities, relations}``."
    relations = conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = ? ORDER BY id",
        [project],
    ).fetchall()
    return {
        "entities": entities_where(conn, "project = ?", [project]),
        "relations": [dict(zip(RELATION_FIELDS, row)) for row in relations],
    }


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
