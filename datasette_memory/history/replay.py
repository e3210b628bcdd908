"""Replay: memory rebuilt from the ledger alone.

Every change appends an event saying exactly what changed, so applying a
project's events in order rebuilds its graph (entities, observations in
order, relations, aliases), its claims and facts and its checkpoints. Replay
is deterministic and reads nothing but events: ``verify`` compares it with
the tables, as-of reads replay up to a moment, diffs compare two replays, and
provenance reads the events replay applied. No door replays on its own.

Times: a row written since migration m009 carries its event's time, which
replay rebuilds exactly. Older rows took their time apart from their event;
replay leaves those times unknown (None) and comparisons skip them.
"""

import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..core.ledger import EVENT_COLUMNS
from ..governed.statements import value_key

CLAIM_FIELDS = ("project", "subject", "predicate", "object", "valid_from", "confidence", "proposed_by", "proposed_at")
FACT_FIELDS = ("project", "subject", "predicate", "object", "valid_from", "valid_to", "recorded_at", "retracted_at",
               "recorded_by", "rationale", "claim_id", "supersedes", "superseded_by")
GRAPH_KINDS = (
    "create_entity", "add_observation", "delete_observation", "update_observation", "delete_entity",
    "rename_entity", "merge_entity", "create_relation", "delete_relation",
)
CLAIM_KINDS = ("propose_claim", "add_claim_evidence", "approve_claim", "reject_claim", "reopen_claim")
FACT_KINDS = ("record_fact", "supersede_fact", "invalidate_fact", "revalidate_fact")
REVIEW_ACTS = {"approve_claim": "approve", "reject_claim": "reject", "reopen_claim": "reopen"}
REVIEW_STATUS = {"approve_claim": "approved", "reject_claim": "rejected", "reopen_claim": "candidate"}


class Observation(list):
    """
    ``[content, created_at]``, and ``made``: the event that stored it and its
    place in that event, which orders observations as their rows' ids do
    (search breaks ties by them).
    """

    def __init__(self, content: str, created_at: str | None, made: tuple[int, int] = (0, 0)):
        super().__init__([content, created_at])
        self.made = made


@dataclass
class Entity:
    """An entity as replay rebuilds it: observations in order, each ``[content, created_at]`` (an :class:`Observation`)."""

    name: str
    entity_type: str
    created_at: str | None
    observations: list[list[Any]] = field(default_factory=list)

    def contents(self) -> list[str]:
        return [content for content, _ in self.observations]

    def as_official(self) -> dict[str, Any]:
        "The entity in the official memory server's shape."
        return {"name": self.name, "entityType": self.entity_type, "observations": self.contents()}


@dataclass
class Project:
    """One project's memory as replay rebuilds it."""

    name: str
    entities: dict[str, Entity] = field(default_factory=dict)
    # (from, to, relationType) -> created_at, in creation order
    relations: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    # alias -> [entity name, created_at]
    aliases: dict[str, list[Any]] = field(default_factory=dict)
    claims: dict[int, dict[str, Any]] = field(default_factory=dict)
    evidence: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    reviews: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    facts: dict[int, dict[str, Any]] = field(default_factory=dict)
    fact_history: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)

    def graph(self) -> dict[str, list[Any]]:
        "The graph in the official memory server's shape: ``{entities, relations}``."
        return {
            "entities": [entity.as_official() for entity in self.entities.values()],
            "relations": [{"from": f, "to": t, "relationType": r} for f, t, r in self.relations],
        }


@dataclass
class Replay:
    """Memory rebuilt from events, every project, with what could not be applied."""

    exact_from: int = 1
    projects: dict[str, Project] = field(default_factory=dict)
    last_event: int = 0
    # events that do not apply to the state before them: [{event, problem}]
    anomalies: list[dict[str, Any]] = field(default_factory=list)

    def project(self, name: str) -> Project:
        if name not in self.projects:
            self.projects[name] = Project(name)
        return self.projects[name]

    def apply(self, event: dict[str, Any]) -> None:
        """
        Apply one event (a row of ``events``, values still JSON text).

        :param event: a mapping with every name in ``EVENT_COLUMNS``
        """
        self.last_event = event["id"]
        handler = HANDLERS.get(event["kind"])
        if handler is None:
            return
        project = self.project(event["project"])
        ts = event["ts"] if event["id"] >= self.exact_from else None
        problem: str | None
        try:
            old = None if event["old"] is None else json.loads(event["old"])
            new = None if event["new"] is None else json.loads(event["new"])
        except (TypeError, ValueError) as e:
            problem = f"its value is not JSON ({type(e).__name__}: {e})"
        else:
            problem = applied(handler, project, event, ts, old, new)
        if problem:
            self.anomalies.append({"event": event["id"], "kind": event["kind"], "project": event["project"], "problem": problem})


def applied(handler: Any, project: Project, event: dict[str, Any], ts: str | None, old: Any, new: Any) -> str | None:
    "Apply ``event`` with its ``handler``; the problem if it does not apply, or if its values have not its kind's shape."
    try:
        return handler(project, event, ts, old, new)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        return f"its value has not the shape a {event['kind']} event has ({type(e).__name__}: {e})"


def exact_times_from(conn: sqlite3.Connection) -> int:
    "The first event whose rows carry its time exactly (see the module's docstring)."
    row = conn.execute("SELECT value FROM memory_meta WHERE key = 'exact_times_from'").fetchone()
    return int(row[0]) if row else 1


def events(conn: sqlite3.Connection, where: str = "1", params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
    "Events matching ``where``, oldest first, as mappings."
    for values in conn.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE {where} ORDER BY id", list(params)):
        yield dict(zip(EVENT_COLUMNS, values))


def replay(conn: sqlite3.Connection, project: str | None = None, upto: int | None = None,
           event_ids: Iterable[int] | None = None) -> Replay:
    """
    Rebuild memory from the ledger.

    :param conn: an open connection (read-only is enough)
    :param project: one project, or None for every project
    :param upto: the last event to apply (an event id), or None for all
    :param event_ids: only these events (the ones naming some entities, say); None for all
    """
    state = Replay(exact_from=exact_times_from(conn))
    conditions: list[str] = ["1"]
    params: list[Any] = []
    if project is not None:
        conditions.append("project = ?")
        params.append(project)
    if upto is not None:
        conditions.append("id <= ?")
        params.append(upto)
    if event_ids is not None:
        conditions.append("id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(set(event_ids))))
    for event in events(conn, " AND ".join(conditions), params):
        state.apply(event)
    return state


# Handlers: each applies one kind of event to a project and returns a problem, or None.
# A value of another shape raises (KeyError, TypeError, ...) before the project changes;
# every text replay keeps (names, types, observations, relation ends) is checked to be one.


def text(value: Any, what: str) -> str:
    "``value``, which must be a string (a forger may have written anything into a value)."
    if not isinstance(value, str):
        raise TypeError(f"{what} is {type(value).__name__}, not a string")
    return value


def texts(values: Any, what: str) -> list[str]:
    "``values``, which must be a list of strings."
    if not isinstance(values, list):
        raise TypeError(f"{what} is {type(values).__name__}, not a list")
    return [text(value, what) for value in values]


def relation(value: Any) -> tuple[str, str, str]:
    "A relation's key, ``(from, to, relationType)``, from its value."
    return (text(value["from"], "from"), text(value["to"], "to"), text(value["relationType"], "relationType"))


def create_entity(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    name, entity_type, contents = text(new["name"], "name"), text(new["entityType"], "entityType"), texts(new["observations"], "an observation")
    if name in p.entities:
        return f"entity {name!r} already exists"
    observations: list[list[Any]] = [Observation(content, ts, (event["id"], i)) for i, content in enumerate(contents)]
    p.entities[name] = Entity(name, entity_type, ts, observations)
    return None


def add_observation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    text(new, "the observation")
    entity = p.entities.get(event["target"])
    if entity is None:
        return f"entity {event['target']!r} does not exist"
    if new in entity.contents():
        return f"entity {event['target']!r} already has this observation"
    entity.observations.append(Observation(new, ts, (event["id"], 0)))
    return None


def delete_observation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    text(old, "the observation")
    entity = p.entities.get(event["target"])
    if entity is None or old not in entity.contents():
        return f"entity {event['target']!r} has no such observation to delete"
    entity.observations = [o for o in entity.observations if o[0] != old]
    return None


def update_observation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    text(old, "the old observation")
    text(new, "the new observation")
    entity = p.entities.get(event["target"])
    if entity is None or old not in entity.contents():
        return f"entity {event['target']!r} has no such observation to edit"
    for observation in entity.observations:
        if observation[0] == old:
            observation[0] = new
    return None


def delete_entity(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    if p.entities.pop(event["target"], None) is None:
        return f"entity {event['target']!r} does not exist"
    p.aliases = {alias: target for alias, target in p.aliases.items() if target[0] != event["target"]}
    return None


def create_relation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    key = relation(new)
    if key in p.relations:
        return "the relation already exists"
    p.relations[key] = ts
    return None


def delete_relation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    if p.relations.pop(relation(old), "absent") == "absent":
        return "the relation does not exist"
    return None


def moves_of(touched: Any) -> dict[tuple[str, str, str], tuple[str, str, str] | None]:
    "A rename's or merge's relation moves: each relation's key, and the key it became (None: dropped)."
    if not isinstance(touched, list):
        raise TypeError(f"relations is {type(touched).__name__}, not a list")
    return {relation(r): None if r["became"] is None else relation(r["became"]) for r in touched}


def repoint(p: Project, moves: dict[tuple[str, str, str], tuple[str, str, str] | None]) -> None:
    "Apply a rename's or merge's relation moves, in place and in order."
    relations: dict[tuple[str, str, str], str | None] = {}
    for key, created_at in p.relations.items():
        if key not in moves:
            relations[key] = created_at
        elif (became := moves[key]) is not None:
            relations[became] = created_at
    p.relations = relations


def add_alias(p: Project, alias: str, entity: str, ts: str | None) -> None:
    "Upsert, as the core does: an alias that exists keeps its time and names ``entity`` now."
    if alias in p.aliases:
        p.aliases[alias][0] = entity
    else:
        p.aliases[alias] = [entity, ts]


def rename_entity(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    name, new_name, moves = event["target"], text(new["name"], "the new name"), moves_of(new["relations"])
    if name not in p.entities or new_name in p.entities:
        return f"entity {name!r} cannot be renamed to {new_name!r}"
    p.entities = {(new_name if key == name else key): entity for key, entity in p.entities.items()}
    p.entities[new_name].name = new_name
    p.aliases.pop(new_name, None)
    for target in p.aliases.values():
        if target[0] == name:
            target[0] = new_name
    add_alias(p, name, new_name, ts)
    repoint(p, moves)
    return None


def merge_entity(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    name, into, contents = event["target"], text(new["into"], "into"), texts(new["observations"], "an observation")
    moves = moves_of(new["relations"])
    if name not in p.entities or into not in p.entities:
        return f"entity {name!r} cannot be merged into {into!r}"
    survivor = p.entities[into]
    moved = [content for content in contents if content not in survivor.contents()]
    survivor.observations += [Observation(content, ts, (event["id"], i)) for i, content in enumerate(moved)]
    repoint(p, moves)
    for target in p.aliases.values():
        if target[0] == name:
            target[0] = into
    del p.entities[name]
    add_alias(p, name, into, ts)
    return None


def checkpoint(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    p.checkpoints.append({
        "project": event["project"], "ts": event["ts"], "actor": event["actor"], "session": event["session"],
        "summary": None if new is None else new["summary"], "head_event_id": event["id"], "head_hash": event["hash"],
    })
    return None


def numbered(event: dict, prefix: str) -> int:
    "The id in a ``claim:N`` or ``fact:N`` target."
    kind, _, number = event["target"].partition(":")
    if kind != prefix or not number.isdigit():
        raise ValueError(f"target {event['target']!r} is not {prefix}:N")
    return int(number)


def propose_claim(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    id = numbered(event, "claim")
    if id in p.claims:
        return f"claim {id} already exists"
    claim = {name: new[name] for name in CLAIM_FIELDS}
    claim.update({f"{part}_key": value_key(new[part]) for part in ("subject", "predicate", "object")})
    claim.update(status="candidate", fact_id=None)
    p.claims[id] = claim
    p.evidence[id] = [evidence_row(item, event, ts) for item in new["evidence"]]
    p.reviews[id] = []
    return None


def evidence_row(item: dict[str, Any], event: dict, ts: str | None) -> tuple[Any, ...]:
    "A claim_evidence row: (kind, entity, content, added_by, added_at); a proposal's items carry their author and time."
    if "observation" in item:
        return ("observation", item["entityName"], item["observation"], item.get("added_by", event["actor"]), item.get("added_at", ts))
    return ("text", "", item["text"], item.get("added_by", event["actor"]), item.get("added_at", ts))


def add_claim_evidence(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    id = numbered(event, "claim")
    if id not in p.claims:
        return f"claim {id} does not exist"
    p.evidence[id] += [evidence_row(item, event, ts) for item in new]
    return None


def review_claim(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    id = numbered(event, "claim")
    if id not in p.claims:
        return f"claim {id} does not exist"
    p.claims[id]["status"] = REVIEW_STATUS[event["kind"]]
    if event["kind"] == "approve_claim":
        p.claims[id]["fact_id"] = new["fact_id"]
    p.reviews[id].append((REVIEW_ACTS[event["kind"]], event["actor"], ts, new["rationale"], new["fact_id"]))
    return None


def record_fact(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    id = numbered(event, "fact")
    if id in p.facts:
        return f"fact {id} already exists"
    fact = {name: new[name] for name in FACT_FIELDS}
    fact.update({f"{part}_key": value_key(new[part]) for part in ("subject", "predicate", "object")})
    p.facts[id] = fact
    p.fact_history[id] = [("record", new["valid_to"], None, new["recorded_at"], event["actor"], new["rationale"])]
    return None


def change_fact(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    id = numbered(event, "fact")
    if id not in p.facts:
        return f"fact {id} does not exist"
    p.facts[id].update(valid_to=new["valid_to"], retracted_at=new["retracted_at"], superseded_by=new["superseded_by"])
    act = event["kind"].removesuffix("_fact")
    p.fact_history[id].append((act, new["valid_to"], new["superseded_by"], ts, event["actor"], new["rationale"]))
    return None


HANDLERS = {
    "create_entity": create_entity,
    "add_observation": add_observation,
    "delete_observation": delete_observation,
    "update_observation": update_observation,
    "delete_entity": delete_entity,
    "create_relation": create_relation,
    "delete_relation": delete_relation,
    "rename_entity": rename_entity,
    "merge_entity": merge_entity,
    "checkpoint": checkpoint,
    "propose_claim": propose_claim,
    "add_claim_evidence": add_claim_evidence,
    "approve_claim": review_claim,
    "reject_claim": review_claim,
    "reopen_claim": review_claim,
    "record_fact": record_fact,
    "supersede_fact": change_fact,
    "invalidate_fact": change_fact,
    "revalidate_fact": change_fact,
}
