"""The knowledge graph: entities, observations and relations in a project.

The operations and result shapes are those of the official MCP memory server;
the deviations (all safer) are listed in the README. Each mutating function
validates its whole input before writing and appends one ledger event per
change; the caller provides the transaction.
"""

import json

from .errors import NotFound
from .ledger import Caller, append_event, now
from .validation import check_list, check_name, check_object, check_text

ENTITY_FIELDS = ("name", "entityType", "observations")
RELATION_FIELDS = ("from", "to", "relationType")


def parse_entities(entities) -> list:
    "Validated entities, first of each name kept, observations deduplicated."
    parsed, seen = [], set()
    for i, entity in enumerate(check_list(entities, "entities")):
        field = f"entities[{i}]"
        check_object(entity, field, ENTITY_FIELDS)
        name = check_name(entity["name"], f"{field}.name")
        entity_type = check_name(entity["entityType"], f"{field}.entityType", allow_empty=True)
        observations = parse_contents(entity["observations"], f"{field}.observations")
        if name not in seen:
            seen.add(name)
            parsed.append({"name": name, "entityType": entity_type, "observations": observations})
    return parsed


def parse_contents(contents, field: str) -> list:
    "Validated observation strings, duplicates dropped, order kept."
    check_list(contents, field)
    return list(dict.fromkeys(check_text(c, f"{field}[{i}]") for i, c in enumerate(contents)))


def parse_relations(relations) -> list:
    "Validated relations, duplicates within the call dropped."
    parsed = {}
    for i, relation in enumerate(check_list(relations, "relations")):
        field = f"relations[{i}]"
        check_object(relation, field, RELATION_FIELDS)
        key = tuple(check_name(relation[k], f"{field}.{k}") for k in RELATION_FIELDS)
        parsed.setdefault(key, dict(zip(RELATION_FIELDS, key)))
    return list(parsed.values())


def parse_names(names, field: str) -> list:
    "Validated entity names, duplicates dropped."
    check_list(names, field)
    return list(dict.fromkeys(check_name(n, f"{field}[{i}]") for i, n in enumerate(names)))


def parse_observation_items(items, key: str, field: str) -> list:
    "Validated ``[{entityName, <key>}]`` items as ``(name, [contents])``."
    parsed = []
    for i, item in enumerate(check_list(items, field)):
        check_object(item, f"{field}[{i}]", ("entityName", key))
        name = check_name(item["entityName"], f"{field}[{i}].entityName")
        parsed.append((name, parse_contents(item[key], f"{field}[{i}].{key}")))
    return parsed


def entity_id(conn, project: str, name: str):
    "The row id of entity ``name`` in ``project``, or None."
    row = conn.execute(
        "SELECT id FROM entities WHERE project = ? AND name = ?", [project, name]
    ).fetchone()
    return row[0] if row else None


def relation_target(relation: dict) -> str:
    "A ledger target naming a relation unambiguously."
    return json.dumps([relation["from"], relation["relationType"], relation["to"]], ensure_ascii=False)


def create_entities(conn, caller: Caller, project: str, entities) -> list:
    """
    Create entities whose names are new in ``project``; existing ones are left as they are.

    :return: the entities actually created
    """
    created = []
    for entity in parse_entities(entities):
        if entity_id(conn, project, entity["name"]) is not None:
            continue
        ts = now()
        cursor = conn.execute(
            "INSERT INTO entities (project, name, entity_type, created_at) VALUES (?, ?, ?, ?)",
            [project, entity["name"], entity["entityType"], ts],
        )
        conn.executemany(
            "INSERT INTO observations (entity_id, content, created_at) VALUES (?, ?, ?)",
            [(cursor.lastrowid, content, ts) for content in entity["observations"]],
        )
        append_event(conn, caller, project, "create_entity", entity["name"], new=entity)
        created.append(entity)
    return created


def merge_entities(conn, caller: Caller, project: str, entities) -> dict:
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


def create_relations(conn, caller: Caller, project: str, relations) -> list:
    """
    Create relations not already stored; endpoints need not exist (as upstream).

    :return: the relations actually created
    """
    created = []
    for relation in parse_relations(relations):
        cursor = conn.execute(
            "INSERT OR IGNORE INTO relations (project, from_entity, to_entity, relation_type, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [project, relation["from"], relation["to"], relation["relationType"], now()],
        )
        if cursor.rowcount:
            append_event(conn, caller, project, "create_relation", relation_target(relation), new=relation)
            created.append(relation)
    return created


def add_observations(conn, caller: Caller, project: str, observations) -> list:
    """
    Add observations to existing entities, skipping ones already stored.

    :raises NotFound: if any named entity is missing; nothing is added
    :return: ``[{entityName, addedObservations}]``
    """
    items = parse_observation_items(observations, "contents", "observations")
    ids = {}
    for name, _ in items:
        ids[name] = entity_id(conn, project, name)
        if ids[name] is None:
            raise NotFound(f"Entity with name {name} not found")
    results = []
    for name, contents in items:
        added = []
        for content in contents:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO observations (entity_id, content, created_at) VALUES (?, ?, ?)",
                [ids[name], content, now()],
            )
            if cursor.rowcount:
                append_event(conn, caller, project, "add_observation", name, new=content)
                added.append(content)
        results.append({"entityName": name, "addedObservations": added})
    return results


def delete_entities(conn, caller: Caller, project: str, entity_names):
    "Delete entities, their observations and every relation touching them; missing names are ignored."
    for name in parse_names(entity_names, "entityNames"):
        entities = entities_where(conn, "project = ? AND name = ?", [project, name])
        if not entities:
            continue
        for relation in relations_touching(conn, project, [name]):
            delete_relation(conn, caller, project, relation)
        conn.execute("DELETE FROM entities WHERE project = ? AND name = ?", [project, name])
        append_event(conn, caller, project, "delete_entity", name, old=entities[0])


def delete_observations(conn, caller: Caller, project: str, deletions):
    "Delete the named observations; missing entities and observations are ignored."
    for name, contents in parse_observation_items(deletions, "observations", "deletions"):
        id = entity_id(conn, project, name)
        for content in contents if id is not None else []:
            cursor = conn.execute(
                "DELETE FROM observations WHERE entity_id = ? AND content = ?", [id, content]
            )
            if cursor.rowcount:
                append_event(conn, caller, project, "delete_observation", name, old=content)


def delete_relations(conn, caller: Caller, project: str, relations):
    "Delete the given relations; ones not stored are ignored."
    for relation in parse_relations(relations):
        delete_relation(conn, caller, project, relation)


def delete_relation(conn, caller: Caller, project: str, relation: dict):
    cursor = conn.execute(
        "DELETE FROM relations WHERE project = ? AND from_entity = ? AND to_entity = ? AND relation_type = ?",
        [project, relation["from"], relation["to"], relation["relationType"]],
    )
    if cursor.rowcount:
        append_event(conn, caller, project, "delete_relation", relation_target(relation), old=relation)


def entities_where(conn, where: str, params) -> list:
    "Entities matching ``where`` (which scopes the project), in creation order, with observations."
    rows = conn.execute(
        f"SELECT id, name, entity_type FROM entities WHERE {where} ORDER BY id", params
    ).fetchall()
    observations = {id: [] for id, _, _ in rows}
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


def relations_touching(conn, project: str, names) -> list:
    "Relations of ``project`` with at least one endpoint in ``names``, in creation order."
    rows = conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = ? AND "
        "(from_entity IN (SELECT value FROM json_each(?)) OR to_entity IN (SELECT value FROM json_each(?))) "
        "ORDER BY id",
        [project, json.dumps(list(names)), json.dumps(list(names))],
    ).fetchall()
    return [dict(zip(RELATION_FIELDS, row)) for row in rows]


def read_graph(conn, project: str) -> dict:
    "The whole graph of ``project``: ``{entities, relations}``."
    relations = conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = ? ORDER BY id",
        [project],
    ).fetchall()
    return {
        "entities": entities_where(conn, "project = ?", [project]),
        "relations": [dict(zip(RELATION_FIELDS, row)) for row in relations],
    }


def open_nodes(conn, project: str, names) -> dict:
    "The named entities of ``project`` and the relations touching them."
    names = parse_names(names, "names")
    entities = entities_where(
        conn, "project = ? AND name IN (SELECT value FROM json_each(?))", [project, json.dumps(names)]
    )
    return {
        "entities": entities,
        "relations": relations_touching(conn, project, [e["name"] for e in entities]),
    }


def search_nodes(conn, project: str, query) -> dict:
    """
    The official server's search: entities whose name, type or any observation
    contains the whole query, case-insensitively, in creation order, with every
    relation touching them. A trigram index finds the candidates for queries of
    three or more characters; each is then checked exactly.
    """
    needle = check_text(query, "query", max_bytes=4096).lower()
    if len(needle) >= 3:
        phrase = '"' + needle.replace('"', '""') + '"'
        # "+project": look the few hits up by id rather than scan the project
        candidates = entities_where(
            conn,
            "id IN (SELECT rowid FROM entities_trigram WHERE entities_trigram MATCH ? UNION "
            "SELECT entity_id FROM observations WHERE id IN "
            "(SELECT rowid FROM observations_trigram WHERE observations_trigram MATCH ?)) AND +project = ?",
            [phrase, phrase, project],
        )
    else:
        candidates = entities_where(conn, "project = ?", [project])
    entities = [e for e in candidates if contains(e, needle)]
    return {
        "entities": entities,
        "relations": relations_touching(conn, project, [e["name"] for e in entities]),
    }


def contains(entity: dict, needle: str) -> bool:
    "Whether ``needle`` (lower-cased) is inside the entity's name, type or an observation."
    texts = [entity["name"], entity["entityType"], *entity["observations"]]
    return any(needle in text.lower() for text in texts)
