"""One entity whole, as a person reads it: what it says, who said it, what it touches, how it came to be.

The ledger is the source of "who and when". An entity's events are found
under every name it has had (its aliases: names it was renamed from, names of
entities merged into it), then replayed in order, tracking which entity each
name meant at the time: a name deleted and used again, or renamed away and
reused, belongs to another entity before or after. The replay gives each
current observation the event that put its text there, and the history of
everything that touched the entity, relations included.
"""

import itertools
import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import timeline
from ..core.errors import NotFound
from ..core.timeline import RELATION_KINDS
from .parsing import RELATION_FIELDS, relation_target
from .reads import entity_id, relations_touching

NEIGHBOURHOOD_HOPS = 2
NEIGHBOURHOOD_LIMIT = 40
HISTORY_LIMIT = 200
ENTITY_KINDS = ("create_entity", "add_observation", "update_observation", "delete_observation", "delete_entity")
MOVING_KINDS = ("rename_entity", "merge_entity")  # these also carry the relations they repointed
Line = list[dict[str, str]]  # segments: {op, text}
Description = tuple[str, list[Line]]  # a summary, and lines of what changed
Describer = Callable[[Any, Any, Any], Description]  # (target, old, new) -> Description
EVENTS_ABOUT_SQL = """
SELECT id, ts, actor, session, kind, target, old, new FROM events
WHERE project = :project AND (
    (kind IN ('create_entity', 'add_observation', 'update_observation', 'delete_observation', 'delete_entity',
        'rename_entity', 'merge_entity') AND target IN (SELECT value FROM json_each(:names)))
    OR CASE
        WHEN kind IN ('create_relation', 'delete_relation') AND json_valid(target) THEN
            json_extract(target, '$[0]') IN (SELECT value FROM json_each(:names))
            OR json_extract(target, '$[2]') IN (SELECT value FROM json_each(:names))
        WHEN kind IN ('rename_entity', 'merge_entity') AND json_valid(new) THEN EXISTS (
            SELECT 1 FROM json_each(new, '$.relations') AS moved
            WHERE json_extract(moved.value, '$.from') IN (SELECT value FROM json_each(:names))
            OR json_extract(moved.value, '$.to') IN (SELECT value FROM json_each(:names)))
        ELSE 0
    END
)
ORDER BY id
"""


def current_name(conn: sqlite3.Connection, project: str, name: str) -> str | None:
    """
    The name the entity called ``name`` goes by now: ``name`` itself, the
    entity an old name (an alias) leads to, or None if neither.

    :param project: the project
    :param name: a name or an old name
    """
    if entity_id(conn, project, name) is not None:
        return name
    row = conn.execute(
        "SELECT e.name FROM memory_aliases a JOIN entities e ON e.id = a.entity_id WHERE a.project = ? AND a.alias = ?",
        [project, name],
    ).fetchone()
    return row[0] if row else None


def entity_outline(conn: sqlite3.Connection, project: str, name: str) -> dict[str, Any]:
    """
    The entity as stored: ``{name, entityType, created_at, aliases, observations, relations}``,
    its observations as text in order and its relations (out, then in) as
    ``{from, to, relationType, target}``, ``target`` naming the relation as the ledger does.

    :raises NotFound: naming ``name`` when the project has no such entity
    """
    row = conn.execute(
        "SELECT id, entity_type, created_at FROM entities WHERE project = ? AND name = ?", [project, name]
    ).fetchone()
    if row is None:
        raise NotFound(f"name: no entity named {name!r} in project {project!r}; search finds entities by any of their names")
    id, entity_type, created_at = row
    observations = [c for (c,) in conn.execute("SELECT content FROM observations WHERE entity_id = ? ORDER BY id", [id])]
    aliases = [a for (a,) in conn.execute("SELECT alias FROM memory_aliases WHERE entity_id = ? ORDER BY id", [id])]
    relations = [{**r, "target": relation_target(r)} for r in relations_touching(conn, project, [name])]
    ordered = [r for r in relations if r["from"] == name] + [r for r in relations if r["from"] != name]
    return {
        "name": name, "entityType": entity_type, "created_at": created_at,
        "aliases": aliases, "observations": observations, "relations": ordered,
    }


def entity_page(conn: sqlite3.Connection, project: str, name: str, history_limit: int = HISTORY_LIMIT) -> dict[str, Any]:
    """
    Everything a person sees about one entity: ``{entity, observations,
    relations, neighbourhood, history, history_total}``.

    :param project: the project
    :param name: the entity's current name
    :param history_limit: most events of its history to return, newest first
    :raises NotFound: naming ``name`` when the project has no such entity
    """
    outline = entity_outline(conn, project, name)
    story = replay(conn, project, name, outline["aliases"])
    history = [describe_event(event) for event in reversed(story.events)]
    return {
        "entity": {k: outline[k] for k in ("name", "entityType", "created_at", "aliases")},
        "observations": observations_with_provenance(conn, project, name, story),
        "relations": relations_of(conn, project, name),
        "neighbourhood": neighbourhood(conn, project, name),
        "history": history[:history_limit],
        "history_total": len(history),
    }


# Who and when: replaying the ledger


def provenance(event: dict[str, Any]) -> dict[str, Any]:
    "Who put something there, and how: the parts of an event an observation shows."
    return {"event_id": event["id"], "kind": event["kind"], "actor": event["actor"], "session": event["session"], "ts": event["ts"]}


@dataclass
class Story:
    """
    The ledger replayed for one entity.

    :param events: every event about it, oldest first
    :param observations: for each current observation's text, the provenance of the event that put it there
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    observations: dict[str, dict[str, Any]] = field(default_factory=dict)


class Replay:
    """Names bound to entities as the ledger goes, each entity known by a number the replay gives it."""

    def __init__(self, names: set[str]):
        self.names = names  # the names whose events were read: only these are tracked
        self.numbers = itertools.count()
        self.bound: dict[str, int] = {}
        self.merged_into: dict[int, int] = {}
        self.pending: dict[str, list[set[int]]] = defaultdict(list)  # relation events on a name before it meant an entity
        self.observations: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)

    def bind(self, name: str, number: int | None = None) -> int:
        """
        The entity ``name`` means now: ``number`` if given (a rename), else the
        one it meant, else a new one (created, or in a file older than its ledger).
        Relation events that named it before it meant anything are its too.
        """
        if number is not None:
            self.bound[name] = number
        elif name not in self.bound:
            self.bound[name] = next(self.numbers)
        for touched in self.pending.pop(name, []):
            touched.add(self.bound[name])
        return self.bound[name]

    def touching(self, names: Iterable[str], touched: set[int]) -> None:
        "Add to ``touched`` the entities ``names`` mean now; remember the tracked names that mean none yet."
        for name in names:
            if name in self.bound:
                touched.add(self.bound[name])
            elif name in self.names:
                self.pending[name].append(touched)

    def apply(self, event: dict[str, Any]) -> set[int]:
        "Replay one event; the entities it was about."
        kind, target = event["kind"], event["target"]
        touched: set[int] = set()
        if kind in RELATION_KINDS:
            self.touching((target[0], target[2]), touched)
            return touched
        if kind in MOVING_KINDS:
            moved = as_dict(event["new"]).get("relations") or []
            self.touching([r[end] for r in moved for end in ("from", "to")], touched)
        if kind == "create_entity":
            self.bound.pop(target, None)  # a new entity, whatever the name meant before
        if kind in ENTITY_KINDS or kind in MOVING_KINDS:
            touched.add(self.bind(target))
            self.replay_entity(event, touched)
        return touched

    def replay_entity(self, event: dict[str, Any], touched: set[int]) -> None:
        kind, target, old, new = event["kind"], event["target"], event["old"], event["new"]
        number = self.bound[target]
        held = self.observations[number]
        if kind == "create_entity":
            for content in as_dict(new).get("observations", []):
                held.setdefault(content, provenance(event))
        elif kind == "add_observation":
            held[new] = provenance(event)
        elif kind == "update_observation":
            held.pop(old, None)
            held[new] = provenance(event)
        elif kind == "delete_observation":
            held.pop(old, None)
        elif kind == "delete_entity":
            del self.bound[target]
        elif kind == "rename_entity":
            del self.bound[target]
            if "name" in as_dict(new):  # else redacted: what it became is not known
                self.bind(new["name"], number)
        elif kind == "merge_entity":
            del self.bound[target]
            if "into" in as_dict(new):
                into = self.bind(new["into"])
                touched.add(into)
                for content in new.get("observations", []):
                    self.observations[into][content] = {**provenance(event), "merged_from": target, "origin": held.get(content)}
                self.merged_into[number] = into

    def root(self, number: int) -> int:
        "The entity that ``number`` was merged into, at the end of all merges."
        while number in self.merged_into:
            number = self.merged_into[number]
        return number


def as_dict(value: Any) -> dict[str, Any]:
    "An event's value when it is an object; empty when it is not (a value redacted from the ledger reads as None)."
    return value if isinstance(value, dict) else {}


def parsed_event(row: tuple[Any, ...]) -> dict[str, Any]:
    "An events row as a dict, its JSON values (and a relation event's target) decoded."
    event = dict(zip(("id", "ts", "actor", "session", "kind", "target", "old", "new"), row))
    for key in ("old", "new"):
        event[key] = None if event[key] is None else json.loads(event[key])
    if event["kind"] in RELATION_KINDS:
        event["target"] = json.loads(event["target"])
    return event


def replay(conn: sqlite3.Connection, project: str, name: str, aliases: list[str]) -> Story:
    """
    The ledger replayed for entity ``name``, looking under all its names.

    :param aliases: its old names (``memory_aliases``)
    """
    names = {name, *aliases}
    rows = conn.execute(EVENTS_ABOUT_SQL, {"project": project, "names": json.dumps(sorted(names))}).fetchall()
    replayed = Replay(names)
    about = [(event, replayed.apply(event)) for event in map(parsed_event, rows)]
    if name not in replayed.bound:
        return Story()
    ours = replayed.bound[name]
    events = [event for event, touched in about if any(replayed.root(n) == ours for n in touched)]
    return Story(events, replayed.observations[ours])


def observations_with_provenance(conn: sqlite3.Connection, project: str, name: str, story: Story) -> list[dict[str, Any]]:
    """
    The entity's observations in order, each with who put its current text
    there and when: ``{content, created_at, added}``; ``added`` is None when
    the ledger does not say (memory stored before its ledger).
    """
    rows = conn.execute(
        "SELECT o.content, o.created_at FROM observations o JOIN entities e ON e.id = o.entity_id "
        "WHERE e.project = ? AND e.name = ? ORDER BY o.id",
        [project, name],
    ).fetchall()
    return [{"content": content, "created_at": created_at, "added": story.observations.get(content)} for content, created_at in rows]


# What it touches


def stored_types(conn: sqlite3.Connection, project: str, names: Iterable[str]) -> dict[str, str]:
    "The entity type of each of ``names`` that names a stored entity."
    rows = conn.execute(
        "SELECT name, entity_type FROM entities WHERE project = ? AND name IN (SELECT value FROM json_each(?))",
        [project, json.dumps(sorted(set(names)))],
    )
    return dict(rows.fetchall())


def relations_of(conn: sqlite3.Connection, project: str, name: str) -> dict[str, list[dict[str, Any]]]:
    """
    The relations from and to entity ``name``, in creation order: ``{out, in}``,
    each ``{from, to, relationType, created_at, target, other, stored, otherType}``;
    ``target`` names the relation as the ledger does, ``stored`` says whether
    the other end names a stored entity.
    """
    rows = conn.execute(
        "SELECT from_entity, to_entity, relation_type, created_at FROM relations "
        "WHERE project = ? AND (from_entity = ? OR to_entity = ?) ORDER BY id",
        [project, name, name],
    ).fetchall()
    types = stored_types(conn, project, [end for row in rows for end in row[:2]])
    found: dict[str, list[dict[str, Any]]] = {"out": [], "in": []}
    for source, target, relation_type, created_at in rows:
        relation = {"from": source, "to": target, "relationType": relation_type, "created_at": created_at}
        relation["target"] = relation_target(relation)
        for direction, here, other in (("out", source, target), ("in", target, source)):
            if here == name:
                found[direction].append({**relation, "other": other, "stored": other in types, "otherType": types.get(other)})
    return found


def neighbourhood(
    conn: sqlite3.Connection, project: str, name: str, hops: int = NEIGHBOURHOOD_HOPS, limit: int = NEIGHBOURHOOD_LIMIT
) -> dict[str, Any]:
    """
    The names within ``hops`` relations of ``name`` (either direction), and
    the relations between them: ``{centre, nodes, edges, total, left_out}``.
    Nodes are ``{name, hops, stored, entityType}``, nearest first, then by
    name; past ``limit`` nodes the farthest are left out (``left_out`` counts them).
    """
    distance = {name: 0}
    frontier = [name]
    for hop in range(1, hops + 1):
        touching = relations_touching(conn, project, frontier)
        frontier = sorted({r[end] for r in touching for end in ("from", "to")} - distance.keys())
        distance.update((n, hop) for n in frontier)
    ordered = sorted(distance, key=lambda n: (distance[n], n))
    kept = ordered[:limit]
    types = stored_types(conn, project, kept)
    rows = conn.execute(
        "SELECT from_entity, to_entity, relation_type FROM relations WHERE project = ? "
        "AND from_entity IN (SELECT value FROM json_each(?)) AND to_entity IN (SELECT value FROM json_each(?)) ORDER BY id",
        [project, json.dumps(kept), json.dumps(kept)],
    ).fetchall()
    return {
        "centre": name,
        "nodes": [{"name": n, "hops": distance[n], "stored": n in types, "entityType": types.get(n)} for n in kept],
        "edges": [dict(zip(RELATION_FIELDS, row)) for row in rows],
        "total": len(ordered),
        "left_out": len(ordered) - len(kept),
    }


# What changed: events as readable changes


def word_diff(old: str, new: str) -> Line:
    "``old`` to ``new`` as segments ``{op, text}``, word by word, as the ledger page shows it (:func:`timeline.word_diff`)."
    return segments(timeline.word_diff(old, new))


def segments(parts: Iterable[tuple[str, str]]) -> Line:
    "Non-empty parts as segments, neighbours of one kind joined."
    joined: Line = []
    for op, text in parts:
        if not text:
            continue
        if joined and joined[-1]["op"] == op:
            joined[-1]["text"] += text
        else:
            joined.append({"op": op, "text": text})
    return joined


def relation_text(relation: dict[str, Any]) -> str:
    return f"{relation['from']} —{relation['relationType']}→ {relation['to']}"


def moved_relations(moved: list[dict[str, Any]]) -> list[Line]:
    "A rename's or merge's repointed relations: each one's old form changed into its new one, or removed."
    return [
        word_diff(relation_text(r), relation_text(r["became"])) if r["became"] else segments([("delete", relation_text(r))])
        for r in moved
    ]


def text_of(value: Any) -> str:
    "An event's text value; a redacted one (None) says so."
    return value if isinstance(value, str) else "(redacted)"


def one(op: str, text: Any) -> Line:
    "A line holding one segment."
    return segments([(op, text_of(text))])


def created(target: Any, old: Any, new: Any) -> Description:
    entity = as_dict(new)
    return f"created {target} ({entity.get('entityType', '')})", [one("insert", c) for c in entity.get("observations", [])]


def renamed(target: Any, old: Any, new: Any) -> Description:
    name = text_of(as_dict(new).get("name"))
    line = segments([("delete", target), ("equal", " → "), ("insert", name)])
    return f"renamed {target} to {name}", [line] + moved_relations(as_dict(new).get("relations", []))


def merged(target: Any, old: Any, new: Any) -> Description:
    into = as_dict(new)
    moved = [one("insert", c) for c in into.get("observations", [])]
    return f"merged {target} into {text_of(into.get('into'))}", moved + moved_relations(into.get("relations", []))


def related(op: str) -> Describer:
    "How a relation event reads: its relation, added or removed."
    def describe(target: Any, old: Any, new: Any) -> Description:
        relation = dict(zip(("from", "relationType", "to"), target))
        return ("added" if op == "insert" else "deleted") + " a relation", [one(op, relation_text(relation))]
    return describe


DESCRIBERS: dict[str, Describer] = {
    "create_entity": created,
    "add_observation": lambda target, old, new: (f"added an observation to {target}", [one("insert", new)]),
    "update_observation": lambda target, old, new: (f"edited an observation of {target}", [word_diff(text_of(old), text_of(new))]),
    "delete_observation": lambda target, old, new: (f"deleted an observation of {target}", [one("delete", old)]),
    "delete_entity": lambda target, old, new: (f"deleted {target}", [one("delete", c) for c in as_dict(old).get("observations", [])]),
    "rename_entity": renamed,
    "merge_entity": merged,
    "create_relation": related("insert"),
    "delete_relation": related("delete"),
}


def describe_event(event: dict[str, Any]) -> dict[str, Any]:
    """
    A parsed event with ``summary`` (one line) and ``changes``: lines of
    segments (see :func:`word_diff`) showing what it removed and added.
    """
    describe = DESCRIBERS.get(event["kind"])
    summary, changes = describe(event["target"], event["old"], event["new"]) if describe else (event["kind"].replace("_", " "), [])
    return {**event, "summary": summary, "changes": changes}


def ledger_head_id(conn: sqlite3.Connection) -> int:
    "The id of the newest event, 0 for an empty ledger."
    return conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def events_since(conn: sqlite3.Connection, project: str, after: int) -> list[dict[str, Any]]:
    """
    The events of ``project`` after event ``after``, oldest first, described (see :func:`describe_event`).

    :param after: an event id, as :func:`ledger_head_id` gave it
    """
    rows = conn.execute(
        "SELECT id, ts, actor, session, kind, target, old, new FROM events WHERE project = ? AND id > ? ORDER BY id",
        [project, after],
    ).fetchall()
    return [describe_event(parsed_event(row)) for row in rows]


def entity_names(conn: sqlite3.Connection, project: str, limit: int = 500) -> list[str]:
    "Names of the project's entities, alphabetically, at most ``limit`` (to offer as choices)."
    return [n for (n,) in conn.execute("SELECT name FROM entities WHERE project = ? ORDER BY name LIMIT ?", [project, limit])]
