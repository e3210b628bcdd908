"""The tables as they stand, read into replay's shape, and every difference between the two.

A difference names the table, the row (its id where the row exists, else what
identifies it), what the ledger says the row should hold (``expected``, None
when the row should not exist) and what the table holds (``found``, None when
the row is missing). Times the ledger does not fix (see :mod:`.replay`) are
not compared.
"""

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from .replay import CLAIM_FIELDS, FACT_FIELDS, Entity, Project, Replay, replay

CLAIM_COLUMNS = CLAIM_FIELDS + ("subject_key", "predicate_key", "object_key", "status", "fact_id")
FACT_COLUMNS = FACT_FIELDS + ("subject_key", "predicate_key", "object_key")
CHECKPOINT_COLUMNS = ("project", "ts", "actor", "session", "summary", "head_event_id", "head_hash")
# A claim's or fact's rows in order: table -> (the owner's kind, the Project
# field, the columns replay rebuilds, the one of them that is a time replay may
# not know)
CHILD_TABLES = {
    "claim_evidence": ("claim", "evidence", ("kind", "entity", "content", "added_by", "added_at"), "added_at"),
    "claim_reviews": ("claim", "reviews", ("act", "reviewer", "reviewed_at", "rationale", "fact_id"), "reviewed_at"),
    "fact_history": ("fact", "fact_history", ("act", "valid_to", "superseded_by", "recorded_at", "actor", "rationale"),
                     "recorded_at"),
}


def live(conn: sqlite3.Connection, projects: Iterable[str] | None = None, names: Iterable[str] | None = None,
         governed: bool | None = None) -> tuple[Replay, dict]:
    """
    The tables read into replay's shape, with each row's id.

    :param projects: only these projects; None for all
    :param names: only these entities (and the relations, aliases touching them), read
        through the indexes; None for all
    :param governed: read claims, facts and checkpoints too; by default when ``names`` is None
    :return: ``(state, ids)``; ``ids`` maps (table, key) to the row's id, and
        (child table, owner id) to the ids of a claim's or fact's rows in order
    """
    state = Replay()
    ids: dict[tuple[Any, ...], Any] = {}
    only = None if projects is None else set(projects)
    whole = only is None and names is None
    where, params = ["1"], []
    if only is not None:
        where.append("project IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(only)))
    if names is not None:
        where.append("name IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(set(names))))
    entity_rows = {}
    for id, project, name, entity_type, created_at in conn.execute(
        f"SELECT id, project, name, entity_type, created_at FROM entities WHERE {' AND '.join(where)} ORDER BY id", params
    ):
        state.project(project).entities[name] = Entity(name, entity_type, created_at)
        entity_rows[id] = (project, name)
        ids[("entities", project, name)] = id
    owned = "1" if whole else "entity_id IN (SELECT value FROM json_each(?))"
    owners = [] if whole else [json.dumps(list(entity_rows))]
    for id, entity_id, content, created_at in conn.execute(
        f"SELECT id, entity_id, content, created_at FROM observations WHERE {owned} ORDER BY id", owners
    ):
        if entity_id in entity_rows:
            project, name = entity_rows[entity_id]
            state.project(project).entities[name].observations.append([content, created_at])
            ids[("observations", project, name, content)] = id
        else:
            ids[("orphan", "observations", id)] = {"entity_id": entity_id, "content": content}
    for id, project, source, target, relation_type, created_at in relation_rows(conn, only, names):
        state.project(project).relations[(source, target, relation_type)] = created_at
        ids[("relations", project, source, target, relation_type)] = id
    for id, project, alias, entity_id, created_at in conn.execute(
        f"SELECT id, project, alias, entity_id, created_at FROM memory_aliases WHERE {owned} ORDER BY id", owners
    ):
        if entity_id in entity_rows:
            state.project(project).aliases[alias] = [entity_rows[entity_id][1], created_at]
            ids[("memory_aliases", project, alias)] = id
        elif whole or project in (only or ()):
            ids[("orphan", "memory_aliases", id)] = {"project": project, "alias": alias, "entity_id": entity_id}
    if governed if governed is not None else names is None:
        read_governed(conn, state, only, ids)
    return state, ids


def relation_rows(conn: sqlite3.Connection, only: set[str] | None, names: Iterable[str] | None) -> list[tuple[Any, ...]]:
    "Relations of the projects ``only`` (all if None) with an end in ``names`` (any if None), through the indexes."
    columns = "id, project, from_entity, to_entity, relation_type, created_at"
    in_projects = "1" if only is None else "project IN (SELECT value FROM json_each(:projects))"
    params = {"projects": json.dumps(sorted(only or ())), "names": json.dumps(sorted(set(names or ())))}
    if names is None:
        return conn.execute(f"SELECT {columns} FROM relations WHERE {in_projects} ORDER BY id", params).fetchall()
    return conn.execute(
        f"SELECT {columns} FROM relations WHERE id IN ("
        f"SELECT id FROM relations WHERE {in_projects} AND from_entity IN (SELECT value FROM json_each(:names)) UNION "
        f"SELECT id FROM relations WHERE {in_projects} AND to_entity IN (SELECT value FROM json_each(:names))) ORDER BY id",
        params,
    ).fetchall()


def read_governed(conn: sqlite3.Connection, state: Replay, only: set[str] | None, ids: dict) -> None:
    "Claims (with evidence and reviews), facts (with history) and checkpoints into ``state``, child row ids into ``ids``."
    claim_projects = {}
    for id, *values in conn.execute(f"SELECT id, {', '.join(CLAIM_COLUMNS)} FROM claims ORDER BY id"):
        claim = dict(zip(CLAIM_COLUMNS, values))
        if only is None or claim["project"] in only:
            project = state.project(claim["project"])
            project.claims[id], project.evidence[id], project.reviews[id] = claim, [], []
            claim_projects[id] = project
    read_children(conn, "claim_evidence", claim_projects, ids, only is None)
    read_children(conn, "claim_reviews", claim_projects, ids, only is None)
    fact_projects = {}
    for id, *values in conn.execute(f"SELECT id, {', '.join(FACT_COLUMNS)} FROM facts ORDER BY id"):
        fact = dict(zip(FACT_COLUMNS, values))
        if only is None or fact["project"] in only:
            project = state.project(fact["project"])
            project.facts[id], project.fact_history[id] = fact, []
            fact_projects[id] = project
    read_children(conn, "fact_history", fact_projects, ids, only is None)
    for id, *values in conn.execute(f"SELECT id, {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints ORDER BY id"):
        checkpoint = dict(zip(CHECKPOINT_COLUMNS, values), id=id)
        if only is None or checkpoint["project"] in only:
            state.project(checkpoint["project"]).checkpoints.append(checkpoint)


def read_children(conn: sqlite3.Connection, table: str, owners: dict[int, Project], ids: dict, every: bool) -> None:
    """
    The rows of ``table`` whose claim or fact is in ``owners``, in order, each
    owner's row ids into ``ids``.

    :param every: ``owners`` holds every claim or fact, so a row owned by none is an orphan
    """
    owner, field, columns, _ = CHILD_TABLES[table]
    for id, owner_id, *row in conn.execute(f"SELECT id, {owner}_id, {', '.join(columns)} FROM {table} ORDER BY id"):
        if owner_id in owners:
            getattr(owners[owner_id], field)[owner_id].append(tuple(row))
            ids.setdefault((table, owner_id), []).append(id)
        elif every:
            ids[("orphan", table, id)] = {f"{owner}_id": owner_id, **dict(zip(columns, row))}


def check(conn: sqlite3.Connection) -> tuple[Replay, list[dict[str, Any]]]:
    """
    Replay the whole ledger (every project) and compare every memory table with it.

    :return: ``(the replay, every problem)``: events that do not apply, then differences
    """
    expected = replay(conn)
    found, ids = live(conn)
    return expected, anomalies(expected.anomalies) + differences(expected, found, ids)


def anomalies(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    "Replay's events that did not apply, as problems naming the event."
    return [{"table": "events", "row": a["event"], "expected": f"a {a['kind']} event that applies", "found": a["problem"]}
            for a in found]


def same_time(expected: Any, found: Any) -> bool:
    "Times agree, or the ledger does not fix this one (None)."
    return expected is None or expected == found


def difference(table: str, row: Any, expected: Any, found: Any) -> dict[str, Any]:
    return {"table": table, "row": row, "expected": expected, "found": found}


def differences(expected: Replay, found: Replay, ids: dict, governed: bool = True) -> list[dict[str, Any]]:
    """
    Every way the tables (``found``) differ from the ledger's replay (``expected``).

    :param ids: row ids from :func:`live`
    :param governed: compare claims, facts and checkpoints too
    """
    problems = []
    for name in sorted(set(expected.projects) | set(found.projects)):
        want, have = expected.projects.get(name, Project(name)), found.projects.get(name, Project(name))
        problems += entity_differences(name, want, have, ids)
        problems += relation_differences(name, want, have, ids)
        problems += alias_differences(name, want, have, ids)
        if governed:
            problems += governed_differences(want, have, ids)
    # rows whose entity, claim or fact does not exist (read only when every project was)
    for key, value in ids.items():
        if key[0] == "orphan":
            problems.append(difference(key[1], key[2], None, value))
    return problems


def entity_differences(project: str, want: Project, have: Project, ids: dict) -> list[dict[str, Any]]:
    problems = []
    for name in list(want.entities) + [n for n in have.entities if n not in want.entities]:
        expected, found = want.entities.get(name), have.entities.get(name)
        row = ids.get(("entities", project, name), {"project": project, "name": name})
        if expected is None or found is None:
            problems.append(difference("entities", row, entity_value(project, expected), entity_value(project, found)))
            continue
        if expected.entity_type != found.entity_type or not same_time(expected.created_at, found.created_at):
            problems.append(difference("entities", row, entity_value(project, expected), entity_value(project, found)))
        problems += observation_differences(project, expected, found, ids)
    return problems


def entity_value(project: str, entity: Entity | None) -> dict[str, Any] | None:
    if entity is None:
        return None
    return {"project": project, "name": entity.name, "entity_type": entity.entity_type, "created_at": entity.created_at}


def observation_differences(project: str, expected: Entity, found: Entity, ids: dict) -> list[dict[str, Any]]:
    problems = []
    have = {content: created_at for content, created_at in found.observations}
    want = {content: created_at for content, created_at in expected.observations}
    for content, created_at in expected.observations:
        if content not in have:
            problems.append(difference("observations", {"project": project, "entity": expected.name}, content, None))
        elif not same_time(created_at, have[content]):
            row = ids[("observations", project, found.name, content)]
            problems.append(difference("observations", row, {"content": content, "created_at": created_at},
                                       {"content": content, "created_at": have[content]}))
    for content, _ in found.observations:
        if content not in want:
            problems.append(difference("observations", ids[("observations", project, found.name, content)], None,
                                       {"entity": found.name, "content": content}))
    common = [c for c in expected.contents() if c in have]
    if not problems and common != [c for c in found.contents() if c in want]:
        problems.append(difference("observations", {"project": project, "entity": expected.name},
                                   {"order": common}, {"order": [c for c in found.contents() if c in want]}))
    return problems


def relation_differences(project: str, want: Project, have: Project, ids: dict) -> list[dict[str, Any]]:
    problems = []
    for key in list(want.relations) + [k for k in have.relations if k not in want.relations]:
        value = {"project": project, "from": key[0], "to": key[1], "relationType": key[2]}
        row = ids.get(("relations", project, *key), value)
        if key not in have.relations:
            problems.append(difference("relations", row, {**value, "created_at": want.relations[key]}, None))
        elif key not in want.relations:
            problems.append(difference("relations", row, None, {**value, "created_at": have.relations[key]}))
        elif not same_time(want.relations[key], have.relations[key]):
            problems.append(difference("relations", row, {**value, "created_at": want.relations[key]},
                                       {**value, "created_at": have.relations[key]}))
    return problems


def alias_differences(project: str, want: Project, have: Project, ids: dict) -> list[dict[str, Any]]:
    problems = []
    for alias in list(want.aliases) + [a for a in have.aliases if a not in want.aliases]:
        expected, found = want.aliases.get(alias), have.aliases.get(alias)
        if expected and found and expected[0] == found[0] and same_time(expected[1], found[1]):
            continue
        row = ids.get(("memory_aliases", project, alias), {"project": project, "alias": alias})
        problems.append(difference(
            "memory_aliases", row,
            expected and {"alias": alias, "entity": expected[0], "created_at": expected[1]},
            found and {"alias": alias, "entity": found[0], "created_at": found[1]},
        ))
    return problems


def governed_differences(want: Project, have: Project, ids: dict | None = None) -> list[dict[str, Any]]:
    """
    Claims, facts and checkpoints that differ; a claim's evidence and reviews and
    a fact's history row by row.

    :param ids: row ids from :func:`live`, so a child row that differs is named by its id
    """
    problems = []
    for table, expected, found in (("claims", want.claims, have.claims), ("facts", want.facts, have.facts)):
        for id in sorted(set(expected) | set(found)):
            if expected.get(id) != found.get(id):
                problems.append(difference(table, id, expected.get(id), found.get(id)))
    for table, (owner, field, _, _) in CHILD_TABLES.items():
        expected, found = getattr(want, field), getattr(have, field)
        for id in sorted(set(expected) | set(found)):
            row_ids = (ids or {}).get((table, id), [])
            problems += child_differences(table, owner, id, expected.get(id, []), found.get(id, []), row_ids)
    problems += checkpoint_differences(want, have)
    return problems


def child_differences(table: str, owner: str, owner_id: int, expected: list[tuple], found: list[tuple],
                      row_ids: list[int]) -> list[dict[str, Any]]:
    """
    A claim's or fact's rows of ``table``, compared in order, one difference
    per row that is missing, extra or holds other values. Each names its owner
    (``{"claim": 1}``); a row found carries its ``id``.
    """
    _, _, columns, time = CHILD_TABLES[table]

    def same_row(expected: tuple, found: tuple) -> bool:
        "Every value agrees, but a time the ledger does not fix (None) matches any."
        return len(expected) == len(found) and all(
            a == b or (a is None and column == time) for column, a, b in zip(columns, expected, found)
        )

    def value(row: tuple, position: int | None = None) -> dict[str, Any]:
        id = {} if position is None or position >= len(row_ids) else {"id": row_ids[position]}
        return {**id, f"{owner}_id": owner_id, **dict(zip(columns, row))}

    problems, i, j = [], 0, 0
    while i < len(expected) or j < len(found):
        if i < len(expected) and j < len(found) and same_row(expected[i], found[j]):
            i, j = i + 1, j + 1
        elif j < len(found) and (i == len(expected) or (j + 1 < len(found) and same_row(expected[i], found[j + 1]))):
            problems.append(difference(table, {owner: owner_id}, None, value(found[j], j)))
            j += 1
        elif i < len(expected) and (j == len(found) or (i + 1 < len(expected) and same_row(expected[i + 1], found[j]))):
            problems.append(difference(table, {owner: owner_id}, value(expected[i]), None))
            i += 1
        else:
            problems.append(difference(table, {owner: owner_id}, value(expected[i]), value(found[j], j)))
            i, j = i + 1, j + 1
    return problems


def checkpoint_differences(want: Project, have: Project) -> list[dict[str, Any]]:
    problems = []
    rows: dict[int, list[dict[str, Any]]] = {}
    for stored in have.checkpoints:
        rows.setdefault(stored["head_event_id"], []).append(stored)
    for checkpoint in want.checkpoints:
        anchored = rows.pop(checkpoint["head_event_id"], [])
        row = anchored.pop(0) if anchored else None
        found = None if row is None else {k: row[k] for k in CHECKPOINT_COLUMNS}
        if found != checkpoint and not (found and checkpoint["summary"] is None and found | {"summary": None} == checkpoint):
            problems.append(difference("checkpoints", row["id"] if row else {"event": checkpoint["head_event_id"]}, checkpoint, found))
        # a second row anchored to the same event is one no event made
        problems += [difference("checkpoints", extra["id"], None, {k: extra[k] for k in CHECKPOINT_COLUMNS}) for extra in anchored]
    for extras in rows.values():
        problems += [difference("checkpoints", row["id"], None, {k: row[k] for k in CHECKPOINT_COLUMNS}) for row in extras]
    return problems
