"""The one order every peer applies a project's events in, and replay that tolerates concurrent edits.

The events of one project from every origin (this machine's own, less its echoes
of foreign ones, and the whole foreign events held) are put in a total order:
by time, then machine id, then clock, where an event's time is never earlier
than the one before it from the same origin (a clock set back cannot reorder a
machine's own events). Every peer holding the same events computes the same
order, so replay gives every peer the same memory, whichever order events came in.

Concurrent edits meet in that order. Replay applies them as a merge would:
two machines creating one name make one entity holding both sets of
observations (its type the first's); an observation added to, edited in or
deleted from a name since renamed or merged away follows the alias to its
entity; an event that still does not apply (an observation for an entity
deleted before it in the order, a relation already there) is skipped, on every
peer alike. So a deletion ordered after a value's creation removes it on every
peer, whichever peer still held the value.
"""

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ..core.ledger import EVENT_COLUMNS
from ..core.log_heads import file_machine
from ..history import replay as replay_module
from ..history.replay import Observation, Project, Replay
from .events import graph_kinds_sql


def order_key(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    "``events`` in the total order (each origin's events in clock order, their times made non-decreasing)."
    by_origin: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_origin.setdefault(event["machine"], []).append(event)
    keyed = []
    for machine, own in by_origin.items():
        own.sort(key=lambda event: event["clock"])
        latest = ""
        for event in own:
            latest = max(latest, event["ts"])
            keyed.append(((latest, machine, event["clock"]), event))
    keyed.sort(key=lambda pair: pair[0])
    return [event for _, event in keyed]


def origin_events(conn: sqlite3.Connection, project: str) -> list[dict[str, Any]]:
    "Every event of ``project`` that shapes its synced memory: this machine's own (not its echoes) and the foreign ones held."
    columns = [c for c in EVENT_COLUMNS if c != "id"]
    own = conn.execute(
        f"SELECT {', '.join(columns)} FROM events WHERE machine = ? AND project = ? AND kind IN ({graph_kinds_sql()}) "
        "AND id NOT IN (SELECT event_id FROM memory_sync_derived) ORDER BY id",
        [file_machine(conn), project],
    ).fetchall()
    foreign = conn.execute(
        f"SELECT {', '.join(columns)} FROM memory_sync_events WHERE project = ? AND kind IN ({graph_kinds_sql()}) AND opaque = 0",
        [project],
    ).fetchall()
    return [dict(zip(columns, row)) for row in [*own, *foreign]]


def converged_state(conn: sqlite3.Connection, project: str) -> Project:
    "The memory ``project`` holds once every event held of it is applied in the total order."
    state = TolerantReplay()
    for position, event in enumerate(order_key(origin_events(conn, project)), 1):
        state.apply({**event, "id": position})
    return state.project(project)


def create_entity(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    "A second creation of a name adds the observations the entity lacks."
    existing = p.entities.get(new["name"])
    if existing is None:
        return replay_module.create_entity(p, event, ts, old, new)
    missing = [content for content in new["observations"] if content not in existing.contents()]
    existing.observations += [Observation(content, ts, (event["id"], i)) for i, content in enumerate(missing)]
    return None


def update_observation(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
    "An edit that makes an observation equal to another leaves one of them."
    problem = replay_module.update_observation(p, event, ts, old, new)
    entity = p.entities.get(event["target"])
    if problem is None and entity is not None:
        kept: dict[str, list[Any]] = {}
        for observation in entity.observations:
            kept.setdefault(observation[0], observation)
        entity.observations = list(kept.values())
    return problem


def following_aliases(handler: Any) -> Any:
    "``handler`` applied to the entity a renamed or merged-away name now is."

    def inner(p: Project, event: dict, ts: str | None, old: Any, new: Any) -> str | None:
        target = event["target"]
        if target not in p.entities and target in p.aliases:
            event = {**event, "target": p.aliases[target][0]}
        return handler(p, event, ts, old, new)

    return inner


TOLERANT_HANDLERS = {
    **replay_module.HANDLERS,
    "create_entity": create_entity,
    "add_observation": following_aliases(replay_module.add_observation),
    "delete_observation": following_aliases(replay_module.delete_observation),
    "update_observation": following_aliases(update_observation),
    "delete_entity": following_aliases(replay_module.delete_entity),
}


class TolerantReplay(Replay):
    """Replay with the merge rules above; what still does not apply is skipped (and listed in ``anomalies``)."""

    def apply(self, event: dict[str, Any]) -> None:
        self.last_event = event["id"]
        handler = TOLERANT_HANDLERS.get(event["kind"])
        if handler is None:
            return
        old = None if event["old"] is None else json.loads(event["old"])
        new = None if event["new"] is None else json.loads(event["new"])
        try:
            problem = handler(self.project(event["project"]), event, event["ts"], old, new)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            problem = f"its value has not the shape a {event['kind']} event has ({type(e).__name__}: {e})"
        if problem:
            self.anomalies.append({"event": event["id"], "kind": event["kind"], "project": event["project"], "problem": problem})
