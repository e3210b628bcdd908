"""A person's corrections to the graph: edit an observation, rename an entity, merge two entities.

Agents add and delete; a person also corrects what is there. Each function
changes the graph in place, keeps what it touches in order, and appends one
ledger event that says exactly what changed, so the ledger can be read as a
history. An entity renamed or merged away leaves its old name as an alias of
the one that remains: searching for the old name still finds it. The caller
provides the transaction (and, in Datasette, checks that a person holding
``memory-curate`` asked).
"""

import sqlite3
from typing import Any

from ..core.clock import now
from ..core.errors import InvalidInput, NotFound
from ..core.ledger import Caller, append_event
from ..core.validation import check_name, check_text
from .reads import entities_where, entity_id


def existing(conn: sqlite3.Connection, project: str, name: Any, field: str) -> int:
    "The id of entity ``name`` in ``project``, or :class:`NotFound` naming the field."
    name = check_name(name, field)
    found = entity_id(conn, project, name)
    if found is None:
        raise NotFound(f"{field}: no entity named {name!r} in project {project!r}")
    return found


def update_observation(
    conn: sqlite3.Connection, caller: Caller, project: str, entity_name: Any, old: Any, new: Any
) -> dict[str, Any]:
    """
    Replace one observation's text, keeping its place among the entity's observations.

    :param entity_name: the entity
    :param old: the observation as stored now
    :param new: what it should say
    :return: ``{entityName, old, new}``
    """
    owner = existing(conn, project, entity_name, "entityName")
    old, new = check_text(old, "old"), check_text(new, "new")
    if not new.strip():
        raise InvalidInput("new: must not be empty; to remove the observation, delete it")
    if new == old:
        raise InvalidInput("new: is the observation as it stands; change something, or leave it")
    row = conn.execute("SELECT id FROM observations WHERE entity_id = ? AND content = ?", [owner, old]).fetchone()
    if row is None:
        raise NotFound(f"old: entity {entity_name!r} has no observation {old!r}")
    if conn.execute("SELECT 1 FROM observations WHERE entity_id = ? AND content = ?", [owner, new]).fetchone():
        raise InvalidInput(f"new: entity {entity_name!r} already has this observation; delete the old one instead")
    conn.execute("UPDATE observations SET content = ? WHERE id = ?", [new, row[0]])
    append_event(conn, caller, project, "update_observation", entity_name, old=old, new=new)
    return {"entityName": entity_name, "old": old, "new": new}


def rename_entity(conn: sqlite3.Connection, caller: Caller, project: str, name: Any, new_name: Any) -> dict[str, Any]:
    """
    Rename an entity; the relations that name it follow, and the old name becomes its alias.

    :param name: the entity's name now
    :param new_name: its new name, free in the project
    :return: ``{entity, relations}``: the renamed entity and the relations that now name it
    """
    id = existing(conn, project, name, "name")
    new_name = check_name(new_name, "new_name")
    if new_name == name:
        raise InvalidInput("new_name: is the entity's name already")
    if entity_id(conn, project, new_name) is not None:
        raise InvalidInput(f"new_name: an entity named {new_name!r} exists; merge into it instead")
    conn.execute("UPDATE entities SET name = ? WHERE id = ?", [new_name, id])
    conn.execute("DELETE FROM memory_aliases WHERE project = ? AND alias = ?", [project, new_name])
    ts = now()
    add_alias(conn, project, name, id, ts)
    relations = repoint_relations(conn, project, name, new_name)
    append_event(conn, caller, project, "rename_entity", name, old=name, new={"name": new_name, "relations": relations}, ts=ts)
    return {"entity": entities_where(conn, "id = ?", [id])[0], "relations": relations}


def merge_entity(conn: sqlite3.Connection, caller: Caller, project: str, name: Any, into: Any) -> dict[str, Any]:
    """
    Merge entity ``name`` into entity ``into``: its observations (those ``into``
    lacks) and relations move over, relations between the two are dropped, it is
    deleted, and its name and aliases become aliases of ``into``.

    :param name: the entity that goes
    :param into: the entity that remains
    :return: ``{entity, observations, relations}``: the merged entity, and what moved
    """
    source = existing(conn, project, name, "name")
    target = existing(conn, project, into, "into")
    if source == target:
        raise InvalidInput("into: is the entity being merged; name another entity")
    merged = entities_where(conn, "id = ?", [source])[0]
    ts = now()
    moved = [
        content
        for content in merged["observations"]
        if conn.execute(
            "INSERT OR IGNORE INTO observations (entity_id, content, created_at) VALUES (?, ?, ?)", [target, content, ts]
        ).rowcount
    ]
    relations = repoint_relations(conn, project, name, into, drop_between=into)
    conn.execute("UPDATE memory_aliases SET entity_id = ? WHERE entity_id = ?", [target, source])
    conn.execute("DELETE FROM entities WHERE id = ?", [source])
    add_alias(conn, project, name, target, ts)
    append_event(
        conn, caller, project, "merge_entity", name, old=merged, new={"into": into, "observations": moved, "relations": relations},
        ts=ts,
    )
    return {"entity": entities_where(conn, "id = ?", [target])[0], "observations": moved, "relations": relations}


def add_alias(conn: sqlite3.Connection, project: str, alias: str, entity: int, ts: str) -> None:
    "Record ``alias`` as another name of ``entity`` (replacing what it named before)."
    conn.execute(
        "INSERT INTO memory_aliases (project, alias, entity_id, created_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (project, alias) DO UPDATE SET entity_id = excluded.entity_id",
        [project, alias, entity, ts],
    )


def repoint_relations(
    conn: sqlite3.Connection, project: str, old: str, new: str, drop_between: str | None = None
) -> list[dict[str, Any]]:
    """
    Make the relations naming ``old`` name ``new``, in place and in order. A
    relation that would then repeat one already stored, or (with
    ``drop_between``) join ``new`` to itself, is deleted instead.

    :return: each relation touched: ``{from, to, relationType, became}`` (None when deleted)
    """
    touched = []
    rows = conn.execute(
        "SELECT id, from_entity, to_entity, relation_type FROM relations WHERE project = ? AND (from_entity = ? OR to_entity = ?) "
        "ORDER BY id",
        [project, old, old],
    ).fetchall()
    for id, source, target, relation_type in rows:
        moved = (new if source == old else source, new if target == old else target)
        duplicate = conn.execute(
            "SELECT 1 FROM relations WHERE project = ? AND from_entity = ? AND to_entity = ? AND relation_type = ? AND id != ?",
            [project, *moved, relation_type, id],
        ).fetchone()
        if duplicate or (drop_between is not None and moved[0] == moved[1]):
            conn.execute("DELETE FROM relations WHERE id = ?", [id])
            became = None
        else:
            conn.execute("UPDATE relations SET from_entity = ?, to_entity = ? WHERE id = ?", [*moved, id])
            became = {"from": moved[0], "to": moved[1], "relationType": relation_type}
        touched.append({"from": source, "to": target, "relationType": relation_type, "became": became})
    return touched
