"""One entity whole, as a person reads it: what it says, who said it, what it touches, how it came to be.

The ledger is the source of "who and when". An entity's events are found
through ``memory_event_names`` (the ledger indexed by the names each event
touches) under every name it has had (its aliases: names it was renamed from,
names of entities merged into it), then replayed in order, tracking which
entity each name meant at the time: a name deleted and used again, or renamed
away and reused, belongs to another entity before or after. The replay gives
each observation and relation the events that made it what it is (the one
that created it, and each that edited or moved it), and the history of
everything that touched the entity.

The page reads memory as it is now (:class:`StoredGraph`, the tables) or as it
was just after some event (:class:`PastGraph`, memory's ``open_nodes`` as of
that event); the replay then stops at that event too.
"""

import itertools
import json
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core import timeline
from ..core.errors import NotFound
from ..core.timeline import RELATION_KINDS
from .parsing import RELATION_FIELDS, relation_target
from .reads import entity_id

NEIGHBOURHOOD_HOPS = 2
NEIGHBOURHOOD_LIMIT = 40
HISTORY_LIMIT = 200
ENTITY_KINDS = ("create_entity", "add_observation", "update_observation", "delete_observation", "delete_entity")
MOVING_KINDS = ("rename_entity", "merge_entity")  # these also carry the relations they repointed
GRAPH_KINDS = ENTITY_KINDS + MOVING_KINDS + RELATION_KINDS
EVENT_FIELDS = ("id", "ts", "actor", "session", "machine", "kind", "target", "old", "new")
NO_LIMIT = 1 << 62  # an event id beyond any ledger's head
Line = list[dict[str, str]]  # segments: {op, text}
Description = tuple[str, list[Line]]  # a summary, and lines of what changed
Describer = Callable[[Any, Any, Any], Description]  # (target, old, new) -> Description
RelationKey = tuple[str, str, str]  # (from, to, relationType)
EVENTS_NAMING_SQL = f"""
SELECT {', '.join(EVENT_FIELDS)} FROM events
WHERE id IN (
    SELECT event_id FROM memory_event_names
    WHERE project = :project AND name IN (SELECT value FROM json_each(:names)) AND event_id <= :upto
)
AND kind IN (SELECT value FROM json_each(:kinds))
ORDER BY id
"""  # one entity's events through the index, not a scan of its project's ledger
RELATIONS = "SELECT id, from_entity, to_entity, relation_type, created_at FROM relations"
FROM_IN = "from_entity IN (SELECT value FROM json_each(:names))"
TO_IN = "to_entity IN (SELECT value FROM json_each(:names))"


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


def aliases_of(conn: sqlite3.Connection, project: str, name: str) -> list[str]:
    "The old names of entity ``name`` (names it was renamed from, names of entities merged into it), oldest first."
    rows = conn.execute(
        "SELECT a.alias FROM memory_aliases a JOIN entities e ON e.id = a.entity_id WHERE e.project = ? AND e.name = ? ORDER BY a.id",
        [project, name],
    )
    return [alias for (alias,) in rows]


def names_it_had(conn: sqlite3.Connection, project: str, name: str) -> set[str]:
    "``name`` and every name of the entity it leads to now: the names its events are indexed under."
    now = current_name(conn, project, name)
    return {name} if now is None else {name, now, *aliases_of(conn, project, now)}


def entity_outline(conn: sqlite3.Connection, project: str, name: str) -> dict[str, Any]:
    """
    The entity as stored: ``{name, entityType, created_at, aliases, observations, relations}``,
    its observations as text in order and its relations (out, then in) as
    ``{from, to, relationType, target}``, ``target`` naming the relation as the ledger does.

    :raises NotFound: naming ``name`` when the project has no such entity
    """
    graph = StoredGraph(conn, project)
    outline = graph.outline(name)
    relations = [{**r, "target": relation_target(r)} for r in graph.relations_touching([name])]
    ordered = [r for r in relations if r["from"] == name] + [r for r in relations if r["from"] != name]
    return {
        **outline, "observations": [o["content"] for o in outline["observations"]],
        "relations": [{k: r[k] for k in ("from", "to", "relationType", "target")} for r in ordered],
    }


def entity_page(
    conn: sqlite3.Connection, project: str, name: str, history_limit: int = HISTORY_LIMIT, past: "PastGraph | None" = None
) -> dict[str, Any]:
    """
    Everything a person sees about one entity: ``{entity, observations,
    relations, neighbourhood, history, history_total}``, each observation and
    relation with the events that made it (``events``, oldest first).

    :param project: the project
    :param name: the entity's name (now, or at the past moment)
    :param history_limit: most events of its history to return, newest first
    :param past: read memory as it was at this moment instead of now
    :raises NotFound: naming ``name`` when the project has (or had) no such entity
    """
    graph: Graph = past or StoredGraph(conn, project)
    outline = graph.outline(name)
    story = replay(conn, project, name, names_it_had(conn, project, name), upto=graph.upto)
    history = [describe_event(event) for event in reversed(story.events)]
    entity = {k: outline[k] for k in ("name", "entityType", "created_at", "aliases")}
    if past is not None:
        entity.update(created_at=story.created["ts"] if story.created else None, aliases=story.aliases)
    return {
        "entity": entity,
        "observations": observations_with_provenance(outline["observations"], story),
        "relations": relations_of(graph, name, story),
        "neighbourhood": neighbourhood(graph, name),
        "history": history[:history_limit],
        "history_total": len(history),
    }


# Where the graph is read: the tables, or the past


class Graph(Protocol):
    """The graph as the page reads it: now, or as of event ``upto``."""

    @property
    def upto(self) -> int | None:
        "The event the graph is read as of; None for now."

    def outline(self, name: str) -> dict[str, Any]:
        "``{name, entityType, created_at, aliases, observations: [{content, created_at}]}``; NotFound if there is none."

    def relations_touching(self, names: list[str]) -> list[dict[str, Any]]:
        "Relations ``{from, to, relationType, created_at}`` with an end in ``names``, in creation order."

    def relations_between(self, names: list[str]) -> list[dict[str, Any]]:
        "Relations with both ends in ``names``."

    def types(self, names: Iterable[str]) -> dict[str, str]:
        "The entity type of each of ``names`` that names an entity."


@dataclass
class StoredGraph:
    """The graph as stored now."""

    conn: sqlite3.Connection
    project: str
    upto: int | None = None

    def outline(self, name: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT id, entity_type, created_at FROM entities WHERE project = ? AND name = ?", [self.project, name]
        ).fetchone()
        if row is None:
            raise NotFound(f"name: no entity named {name!r} in project {self.project!r}; search finds entities by any of their names")
        id, entity_type, created_at = row
        observations = self.conn.execute("SELECT content, created_at FROM observations WHERE entity_id = ? ORDER BY id", [id])
        return {
            "name": name, "entityType": entity_type, "created_at": created_at, "aliases": aliases_of(self.conn, self.project, name),
            "observations": [{"content": content, "created_at": at} for content, at in observations],
        }

    def relations_touching(self, names: list[str]) -> list[dict[str, Any]]:
        # a UNION, not an OR: each side searches its own index (an OR scans the project's relations)
        return self.relations_where(f"{FROM_IN} UNION {RELATIONS} WHERE project = :project AND {TO_IN}", names)

    def relations_between(self, names: list[str]) -> list[dict[str, Any]]:
        return self.relations_where(f"{FROM_IN} AND {TO_IN}", names)

    def relations_where(self, condition: str, names: list[str]) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            f"{RELATIONS} WHERE project = :project AND {condition} ORDER BY id",
            {"project": self.project, "names": json.dumps(sorted(set(names)))},
        )
        return [dict(zip((*RELATION_FIELDS, "created_at"), row[1:])) for row in rows]

    def types(self, names: Iterable[str]) -> dict[str, str]:
        rows = self.conn.execute(
            "SELECT name, entity_type FROM entities WHERE project = ? AND name IN (SELECT value FROM json_each(?))",
            [self.project, json.dumps(sorted(set(names)))],
        )
        return dict(rows.fetchall())


class PastGraph:
    """
    The graph as it was just after event ``upto``, read through ``open_nodes``
    as of that event (memory's, which replays only the events shaping the names
    asked for), each name read once.

    :param open_nodes: names -> ``{entities, relations}`` as of event ``upto``, in the official shape
    :param project: the project, for errors
    :param upto: the event
    """

    def __init__(self, open_nodes: Callable[[list[str]], dict[str, list[Any]]], project: str, upto: int):
        self.open_nodes, self.project, self.upto = open_nodes, project, upto
        self.entities: dict[str, dict[str, Any] | None] = {}
        self.touching: dict[str, list[dict[str, Any]]] = {}

    def load(self, names: Iterable[str]) -> None:
        "Read the names not read yet: whether each was an entity, and the relations touching it."
        missing = sorted(set(names) - self.entities.keys())
        if not missing:
            return
        found = self.open_nodes(missing)
        for name in missing:
            self.entities[name], self.touching[name] = None, []
        for entity in found["entities"]:
            if entity["name"] in missing:
                self.entities[entity["name"]] = entity
        for relation in found["relations"]:
            for end in {relation["from"], relation["to"]} & set(missing):
                self.touching[end].append({**relation, "created_at": None})

    def outline(self, name: str) -> dict[str, Any]:
        self.load([name])
        entity = self.entities[name]
        if entity is None:
            raise NotFound(
                f"name: no entity named {name!r} in project {self.project!r} as of event {self.upto}; "
                "pick a later moment, or show current memory"
            )
        return {
            "name": name, "entityType": entity["entityType"], "created_at": None, "aliases": [],
            "observations": [{"content": content, "created_at": None} for content in entity["observations"]],
        }

    def relations_touching(self, names: list[str]) -> list[dict[str, Any]]:
        self.load(names)
        found: dict[RelationKey, dict[str, Any]] = {}
        for name in names:
            for r in self.touching[name]:
                found.setdefault((r["from"], r["to"], r["relationType"]), r)
        return list(found.values())

    def relations_between(self, names: list[str]) -> list[dict[str, Any]]:
        inside = set(names)
        return [r for r in self.relations_touching(names) if r["from"] in inside and r["to"] in inside]

    def types(self, names: Iterable[str]) -> dict[str, str]:
        names = list(names)
        self.load(names)
        return {name: entity["entityType"] for name in names if (entity := self.entities[name]) is not None}


# Who and when: replaying the ledger


def provenance(event: dict[str, Any]) -> dict[str, Any]:
    "Who made a change, and how: the parts of an event an observation or relation shows."
    return {key: event[key] for key in ("kind", "actor", "session", "machine", "ts")} | {"event_id": event["id"]}


@dataclass
class Story:
    """
    The ledger replayed for one entity.

    :param events: every event about it, oldest first
    :param observations: for each observation's text, the events that made it what it is (created it, edited it, moved it), oldest first
    :param relations: the same for each relation ``(from, to, relationType)``
    :param created: the event that created it
    :param aliases: the names it went by before, oldest first
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    observations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    relations: dict[RelationKey, list[dict[str, Any]]] = field(default_factory=dict)
    created: dict[str, Any] | None = None
    aliases: list[str] = field(default_factory=list)


class Replay:
    """Names bound to entities as the ledger goes, each entity known by a number the replay gives it."""

    def __init__(self, names: set[str]):
        self.names = names  # the names whose events were read: only these are tracked
        self.numbers = itertools.count()
        self.bound: dict[str, int] = {}
        self.merged_into: dict[int, int] = {}
        self.pending: dict[str, list[set[int]]] = defaultdict(list)  # relation events on a name before it meant an entity
        self.observations: dict[int, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
        self.relations: dict[RelationKey, list[dict[str, Any]]] = {}
        self.created: dict[int, dict[str, Any]] = {}
        self.aliases: dict[int, list[str]] = defaultdict(list)

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
            self.relate(event)
            self.touching((target[0], target[2]), touched)
            return touched
        if kind in MOVING_KINDS:
            moved = as_dict(event["new"]).get("relations") or []
            self.move_relations(moved, event)
            self.touching([r[end] for r in moved for end in ("from", "to")], touched)
        if kind == "create_entity":
            self.bound.pop(target, None)  # a new entity, whatever the name meant before
        if kind in ENTITY_KINDS or kind in MOVING_KINDS:
            touched.add(self.bind(target))
            self.replay_entity(event, touched)
        return touched

    def relate(self, event: dict[str, Any]) -> None:
        "A relation created (its first event) or deleted (forgotten)."
        source, relation_type, target = event["target"]
        if event["kind"] == "create_relation":
            self.relations[(source, target, relation_type)] = [provenance(event)]
        else:
            self.relations.pop((source, target, relation_type), None)

    def move_relations(self, moved: list[dict[str, Any]], event: dict[str, Any]) -> None:
        "A rename's or merge's relations, each carrying its events to what it became (if it was not dropped)."
        carried = [(r, self.relations.pop((r["from"], r["to"], r["relationType"]), [])) for r in moved if isinstance(r, dict)]
        for relation, steps in carried:
            became = relation.get("became")
            if isinstance(became, dict):
                self.relations[(became["from"], became["to"], became["relationType"])] = steps + [provenance(event)]

    def replay_entity(self, event: dict[str, Any], touched: set[int]) -> None:
        kind, target, old, new = event["kind"], event["target"], event["old"], event["new"]
        number = self.bound[target]
        held = self.observations[number]
        step = provenance(event)
        if kind == "create_entity":
            self.created[number] = step
            for content in as_dict(new).get("observations", []):
                held.setdefault(content, [step])
        elif kind == "add_observation":
            held[new] = [step]
        elif kind == "update_observation":
            held[new] = held.pop(old, []) + [step]
        elif kind == "delete_observation":
            held.pop(old, None)
        elif kind == "delete_entity":
            del self.bound[target]
        elif kind == "rename_entity":
            del self.bound[target]
            self.aliases[number].append(target)
            if "name" in as_dict(new):  # else redacted: what it became is not known
                self.bind(new["name"], number)
        elif kind == "merge_entity":
            del self.bound[target]
            if "into" in as_dict(new):
                into = self.bind(new["into"])
                touched.add(into)
                for content in new.get("observations", []):
                    self.observations[into][content] = held.get(content, []) + [{**step, "merged_from": target}]
                self.aliases[into] += [target, *self.aliases[number]]
                self.merged_into[number] = into

    def root(self, number: int) -> int:
        "The entity that ``number`` was merged into, at the end of all merges."
        while number in self.merged_into:
            number = self.merged_into[number]
        return number


def as_dict(value: Any) -> dict[str, Any]:
    "An event's value when it is an object; empty when it is not (a value redacted from the ledger reads as None)."
    return value if isinstance(value, dict) else {}


def parsed_event(row: tuple[Any, ...], fields: tuple[str, ...] = EVENT_FIELDS) -> dict[str, Any]:
    "An events row (its columns ``fields``) as a dict, its JSON values (and a relation event's target) decoded."
    event = dict(zip(fields, row))
    for key in ("old", "new"):
        event[key] = None if event[key] is None else json.loads(event[key])
    if event["kind"] in RELATION_KINDS:
        event["target"] = json.loads(event["target"])
    return event


def replay(conn: sqlite3.Connection, project: str, name: str, names: set[str], upto: int | None = None) -> Story:
    """
    The ledger replayed for entity ``name``, looking under all its names.

    :param names: every name it had (see :func:`names_it_had`): the ledger is read under these
    :param upto: stop after this event (memory as it was then); None for now
    """
    names = {name, *names}
    params = {"project": project, "names": json.dumps(sorted(names)), "upto": NO_LIMIT if upto is None else upto,
              "kinds": json.dumps(GRAPH_KINDS)}
    rows = conn.execute(EVENTS_NAMING_SQL, params).fetchall()
    replayed = Replay(names)
    about = [(event, replayed.apply(event)) for event in map(parsed_event, rows)]
    if name not in replayed.bound:
        return Story()
    ours = replayed.bound[name]
    events = [event for event, touched in about if any(replayed.root(n) == ours for n in touched)]
    relations = {key: steps for key, steps in replayed.relations.items() if name in key[:2]}
    return Story(events, replayed.observations[ours], relations, replayed.created.get(ours), replayed.aliases[ours])


def observations_with_provenance(observations: list[dict[str, Any]], story: Story) -> list[dict[str, Any]]:
    """
    The entity's observations in order, each with the events that made it what
    it is: ``{content, created_at, added, events}``. ``events`` is oldest first;
    ``added`` is the newest of them (the one that put its current text there),
    a merge's with the ``origin`` before it; both are empty when the ledger does
    not say (memory stored before its ledger).
    """
    return [
        {"content": o["content"], "created_at": o["created_at"] or first_time(steps), "added": newest(steps), "events": steps}
        for o in observations
        for steps in [story.observations.get(o["content"], [])]
    ]


def newest(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    "The newest of an observation's events; a merge's says which event it came from (``origin``)."
    if not steps:
        return None
    if steps[-1]["kind"] == "merge_entity":
        return {**steps[-1], "origin": steps[-2] if len(steps) > 1 else None}
    return steps[-1]


def first_time(steps: list[dict[str, Any]]) -> str | None:
    return steps[0]["ts"] if steps else None


# What it touches


def relations_of(graph: Graph, name: str, story: Story) -> dict[str, list[dict[str, Any]]]:
    """
    The relations from and to entity ``name``, in creation order: ``{out, in}``,
    each ``{from, to, relationType, created_at, target, other, stored, otherType, events}``;
    ``target`` names the relation as the ledger does, ``stored`` says whether
    the other end names an entity, ``events`` made the relation what it is (oldest first).
    """
    touching = graph.relations_touching([name])
    types = graph.types([end for r in touching for end in (r["from"], r["to"])])
    found: dict[str, list[dict[str, Any]]] = {"out": [], "in": []}
    for r in touching:
        steps = story.relations.get((r["from"], r["to"], r["relationType"]), [])
        relation = {**r, "created_at": r["created_at"] or first_time(steps), "target": relation_target(r), "events": steps}
        for direction, here, other in (("out", r["from"], r["to"]), ("in", r["to"], r["from"])):
            if here == name:
                found[direction].append({**relation, "other": other, "stored": other in types, "otherType": types.get(other)})
    return found


def neighbourhood(graph: Graph, name: str, hops: int = NEIGHBOURHOOD_HOPS, limit: int = NEIGHBOURHOOD_LIMIT) -> dict[str, Any]:
    """
    The names within ``hops`` relations of ``name`` (either direction), and
    the relations between them: ``{centre, nodes, edges, total, left_out}``.
    Nodes are ``{name, hops, stored, entityType}``, nearest first, then by
    name; past ``limit`` nodes the farthest are left out (``left_out`` counts them).
    """
    distance = {name: 0}
    frontier = [name]
    for hop in range(1, hops + 1):
        touching = graph.relations_touching(frontier)
        frontier = sorted({r[end] for r in touching for end in ("from", "to")} - distance.keys())
        distance.update((n, hop) for n in frontier)
    ordered = sorted(distance, key=lambda n: (distance[n], n))
    kept = ordered[:limit]
    types = graph.types(kept)
    return {
        "centre": name,
        "nodes": [{"name": n, "hops": distance[n], "stored": n in types, "entityType": types.get(n)} for n in kept],
        "edges": [{k: r[k] for k in RELATION_FIELDS} for r in graph.relations_between(kept)],
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


def relation_parts(relation: dict[str, Any]) -> list[str]:
    "A relation as whole tokens: its two names, its type, and the marks between them."
    return [str(relation["from"]), " —", str(relation["relationType"]), "→ ", str(relation["to"])]


def relation_text(relation: dict[str, Any]) -> str:
    return "".join(relation_parts(relation))


def moved_relations(moved: list[dict[str, Any]]) -> list[Line]:
    """
    A rename's or merge's repointed relations: each one's old form changed into
    its new one (a name that changed is removed and added whole, never diffed
    word by word against the other), or removed.
    """
    return [
        segments(timeline.token_diff(relation_parts(r), relation_parts(r["became"]))) if r["became"]
        else segments([("delete", relation_text(r))])
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
        f"SELECT {', '.join(EVENT_FIELDS)} FROM events WHERE project = ? AND id > ? ORDER BY id",
        [project, after],
    ).fetchall()
    return [describe_event(parsed_event(row)) for row in rows]


def entity_names(conn: sqlite3.Connection, project: str, limit: int = 500) -> list[str]:
    "Names of the project's entities, alphabetically, at most ``limit`` (to offer as choices)."
    return [n for (n,) in conn.execute("SELECT name FROM entities WHERE project = ? ORDER BY name LIMIT ?", [project, limit])]
