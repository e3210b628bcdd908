"""Changing the knowledge graph: the official memory server's operations.

The operations and result shapes are those of the official MCP memory server;
the deviations (all safer) are listed in docs/tools.md. Each function validates
its whole input before writing and appends one ledger event per change, a call's
events in one batch (``append_events``); the caller provides the
transaction.
"""

import json
import sqlite3
from typing import Any

from ..core.clock import now
from ..core.errors import NotFound
from ..core.ledger import Caller, Change, append_events
from ..core.validation import check_list
from .parsing import parse_entities, parse_names, parse_observation_items, parse_relations, relation_target
from .reads import entities_where, entity_id, relations_touching


def create_entities(conn: sqlite3.Connection, caller: Caller, project: str, entities: Any) -> list[dict[str, Any]]:
    """
    Create entities whose names are new in ``project``; existing ones are left as they are.

    :return: the entities actually created
    """
    parsed = parse_entities(entities)
    taken = entity_ids(conn, project, [entity["name"] for entity in parsed])
    created = [(entity, now()) for entity in parsed if entity["name"] not in taken]
    if not created:
        return []
    last = insert_rows(conn, "entities", ("project", "name", "entity_type", "created_at"),
                       [[project, entity["name"], entity["entityType"], ts] for entity, ts in created])
    first = created[0][0]["name"]
    ids = {first: last} if len(created) == 1 else entity_ids(conn, project, [entity["name"] for entity, _ in created])
    insert_rows(conn, "observations", ("entity_id", "content", "created_at"),
                [[ids[entity["name"]], content, ts] for entity, ts in created for content in entity["observations"]])
    append_events(conn, caller, project, [Change("create_entity", entity["name"], new=entity, ts=ts) for entity, ts in created])
    return [entity for entity, _ in created]


def insert_rows(conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[list[Any]]) -> int | None:
    """
    Insert ``rows`` into ``table`` with one statement: FTS5 writes the words it holds to its
    index at the end of every statement, so rows inserted one statement each made an index
    segment each (a row alone goes in as VALUES, cheaper than reading it from JSON).

    :return: the id of the last row inserted
    """
    if not rows:
        return None
    names = ", ".join(columns)
    if len(rows) == 1:
        return conn.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})", rows[0]).lastrowid
    extracted = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
    sql = f"INSERT INTO {table} ({names}) SELECT {extracted} FROM json_each(?) ORDER BY key"
    return conn.execute(sql, [json.dumps(rows, ensure_ascii=False)]).lastrowid


def entity_ids(conn: sqlite3.Connection, project: str, names: list[str]) -> dict[str, int]:
    "The ids of the entities of ``project`` among ``names``, by name."
    return dict(conn.execute(
        "SELECT name, id FROM entities WHERE project = ? AND name IN (SELECT value FROM json_each(?))",
        [project, json.dumps(names, ensure_ascii=False)],
    ).fetchall())


def merge_entities(conn: sqlite3.Connection, caller: Caller, project: str, entities: Any) -> dict[str, int]:
    """
    Create new entities and add the observations existing ones lack: an import
    that changes nothing the second time.

    :return: counts of ``entities`` created and ``observations`` added
    """
    counts = {"entities": 0, "observations": 0}
    for entity in check_list(entities, "entities"):
        created = create_entities(conn, caller, project, [entity])
        if created:
            counts["entities"] += 1
            counts["observations"] += len(created[0]["observations"])
        elif entity["observations"]:
            items = [{"entityName": entity["name"], "contents": entity["observations"]}]
            counts["observations"] += len(add_observations(conn, caller, project, items)[0]["addedObservations"])
    return counts


def create_relations(conn: sqlite3.Connection, caller: Caller, project: str, relations: Any) -> list[dict[str, str]]:
    """
    Create relations not already stored; endpoints need not exist (as upstream).

    :return: the relations actually created
    """
    created, changes = [], []
    for relation in parse_relations(relations):
        ts = now()
        cursor = conn.execute(
            "INSERT OR IGNORE INTO relations (project, from_entity, to_entity, relation_type, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [project, relation["from"], relation["to"], relation["relationType"], ts],
        )
        if cursor.rowcount:
            changes.append(Change("create_relation", relation_target(relation), new=relation, ts=ts))
            created.append(relation)
    append_events(conn, caller, project, changes)
    return created


def add_observations(conn: sqlite3.Connection, caller: Caller, project: str, observations: Any) -> list[dict[str, Any]]:
    """
    Add observations to existing entities, skipping ones already stored.

    :raises NotFound: if any named entity is missing; nothing is added
    :return: ``[{entityName, addedObservations}]``
    """
    items = parse_observation_items(observations, "contents", "observations")
    ids: dict[str, int | None] = {}
    for name, _ in items:
        ids[name] = entity_id(conn, project, name)
        if ids[name] is None:
            raise NotFound(f"Entity with name {name} not found")
    results, changes = [], []
    for name, contents in items:
        added = []
        for content in contents:
            ts = now()
            cursor = conn.execute(
                "INSERT OR IGNORE INTO observations (entity_id, content, created_at) VALUES (?, ?, ?)",
                [ids[name], content, ts],
            )
            if cursor.rowcount:
                changes.append(Change("add_observation", name, new=content, ts=ts))
                added.append(content)
        results.append({"entityName": name, "addedObservations": added})
    append_events(conn, caller, project, changes)
    return results


def delete_entities(conn: sqlite3.Connection, caller: Caller, project: str, entity_names: Any) -> None:
    "Delete entities, their observations and every relation touching them; missing names are ignored."
    changes: list[Change] = []
    for name in parse_names(entity_names, "entityNames"):
        entities = entities_where(conn, "project = ? AND name = ?", [project, name])
        if not entities:
            continue
        for relation in relations_touching(conn, project, [name]):
            changes += delete_relation(conn, project, relation)
        conn.execute("DELETE FROM entities WHERE project = ? AND name = ?", [project, name])
        changes.append(Change("delete_entity", name, old=entities[0]))
    append_events(conn, caller, project, changes)


def delete_observations(conn: sqlite3.Connection, caller: Caller, project: str, deletions: Any) -> None:
    "Delete the named observations; missing entities and observations are ignored."
    changes = []
    for name, contents in parse_observation_items(deletions, "observations", "deletions"):
        id = entity_id(conn, project, name)
        for content in contents if id is not None else []:
            cursor = conn.execute(
                "DELETE FROM observations WHERE entity_id = ? AND content = ?", [id, content]
            )
            if cursor.rowcount:
                changes.append(Change("delete_observation", name, old=content))
    append_events(conn, caller, project, changes)


def delete_relations(conn: sqlite3.Connection, caller: Caller, project: str, relations: Any) -> None:
    "Delete the given relations; ones not stored are ignored."
    changes = [change for relation in parse_relations(relations) for change in delete_relation(conn, project, relation)]
    append_events(conn, caller, project, changes)


def delete_relation(conn: sqlite3.Connection, project: str, relation: dict[str, str]) -> list[Change]:
    "Delete ``relation`` if it is stored: the change for the ledger, or none."
    cursor = conn.execute(
        "DELETE FROM relations WHERE project = ? AND from_entity = ? AND to_entity = ? AND relation_type = ?",
        [project, relation["from"], relation["to"], relation["relationType"]],
    )
    return [Change("delete_relation", relation_target(relation), old=relation)] if cursor.rowcount else []
