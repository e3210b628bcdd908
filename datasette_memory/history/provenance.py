"""Provenance: where a piece of memory came from, read from the ledger.

For an entity: each of its observations and relations with the events that
created and changed it (who, in which session, on which machine, when),
following renames and merges, and the entity's whole history. For a claim: who
proposed it, on what evidence, and each review. For a fact: the person who
recorded it and why, the claim and evidence they approved, and each change to
its validity. Results are within a byte budget and say what they left out.
"""

import json
import sqlite3
from typing import Any

from ..core.budget import json_bytes
from ..core.errors import NotFound
from ..core.stored_data import noted
from ..core.validation import check_limit
from ..governed.claims import claim_dict, load_claim
from ..governed.facts import load_fact
from .replay import events
from .touching import events_shaping

DEFAULT_BUDGET = 16_000
DESCRIBED = ("id", "kind", "ts", "actor", "session", "machine")


def described(event: dict[str, Any]) -> dict[str, Any]:
    "An event as provenance shows it: what, when, who, in which session, on which machine."
    return {key: event[key] for key in DESCRIBED}


def entity_provenance(conn: sqlite3.Connection, project: str, name: str, budget: Any = DEFAULT_BUDGET) -> dict[str, Any]:
    """
    Where entity ``name`` and each of its observations and relations came from.

    :raises NotFound: if the ledger never had such an entity
    :return: ``{entity, observations: [{content, events}], relations: [{from, to, relationType, events}], history, accounting}``
    """
    budget = check_limit(budget, "budget", 1_000, 200_000)
    event_ids, _ = events_shaping(conn, project, [name])
    walk = Origins()
    for event in events(conn, "id IN (SELECT value FROM json_each(?))", [json.dumps(sorted(event_ids))]):
        walk.apply(event)
    if name not in walk.entity:
        raise NotFound(f"entity {name!r}: the ledger of project {project!r} has no such entity now")
    observations = [{"content": content, "events": walk.observation[(name, content)]}
                    for content in walk.contents[name]]
    relations = [{"from": f, "to": t, "relationType": r, "events": walk.relation[(f, t, r)]}
                 for (f, t, r) in walk.relation if name in (f, t)]
    history = walk.entity[name]
    return within_budget(noted({"entity": name, "project": project, "observations": observations,
                                "relations": relations, "history": history}), budget)


class Origins:
    """Walks an entity's events, keeping for each observation and relation the events that made it what it is."""

    def __init__(self) -> None:
        self.entity: dict[str, list[dict]] = {}
        self.contents: dict[str, list[str]] = {}
        self.observation: dict[tuple[str, str], list[dict]] = {}
        self.relation: dict[tuple[str, str, str], list[dict]] = {}

    def apply(self, event: dict[str, Any]) -> None:
        kind, target, step = event["kind"], event["target"], described(event)
        new = None if event["new"] is None else json.loads(event["new"])
        old = None if event["old"] is None else json.loads(event["old"])
        if kind == "create_entity" and new is not None:
            self.entity[target], self.contents[target] = [step], []
            for content in new["observations"]:
                self.observe(target, content, [step])
        elif kind in ("create_relation", "delete_relation"):
            key = tuple(json.loads(target)[i] for i in (0, 2, 1))
            if kind == "create_relation":
                self.relation[key] = [step]
            else:
                self.relation.pop(key, None)
            for endpoint in (key[0], key[1]):
                self.entity.get(endpoint, []).append(step)
        elif target in self.entity:
            self.entity[target].append(step)
            self.entity_event(kind, target, old, new, step)

    def observe(self, name: str, content: str, steps: list[dict]) -> None:
        if content not in self.contents[name]:
            self.contents[name].append(content)
        self.observation[(name, content)] = steps

    def entity_event(self, kind: str, name: str, old: Any, new: Any, step: dict) -> None:
        if kind == "add_observation" and new is not None:
            self.observe(name, new, [step])
        elif kind == "delete_observation" and old is not None:
            self.contents[name] = [c for c in self.contents[name] if c != old]
            self.observation.pop((name, old), None)
        elif kind == "update_observation" and old is not None and new is not None:
            self.contents[name] = [new if c == old else c for c in self.contents[name]]
            self.observation[(name, new)] = self.observation.pop((name, old), []) + [step]
        elif kind == "delete_entity":
            self.forget(name)
        elif kind in ("rename_entity", "merge_entity") and new is not None:
            self.reshape(kind, name, new, step)

    def reshape(self, kind: str, name: str, new: dict[str, Any], step: dict) -> None:
        "A rename moves everything to the new name; a merge moves the merged observations and relations to the survivor."
        survivor = new["name"] if kind == "rename_entity" else new["into"]
        if kind == "rename_entity":
            self.entity[survivor] = self.entity.pop(name)
            self.contents[survivor] = self.contents.pop(name)
            for content in self.contents[survivor]:
                self.observation[(survivor, content)] = self.observation.pop((name, content), [])
        elif survivor in self.entity:
            self.entity[survivor].append(step)
            for content in new["observations"]:
                self.observe(survivor, content, self.observation.get((name, content), []) + [step])
            self.forget(name)
        for moved in new["relations"]:
            steps = self.relation.pop((moved["from"], moved["to"], moved["relationType"]), [])
            if moved["became"] is not None:
                became = moved["became"]
                self.relation[(became["from"], became["to"], became["relationType"])] = steps + [step]

    def forget(self, name: str) -> None:
        self.entity.pop(name, None)
        for content in self.contents.pop(name, []):
            self.observation.pop((name, content), None)


def within_budget(result: dict[str, Any], budget: int, lists: tuple[str, ...] = ("history", "observations", "relations")) -> dict[str, Any]:
    """
    Cut ``result`` to ``budget`` bytes by shortening its ``lists``, the longest
    first: a history or events list keeps its first item (the creation) and its
    newest ones; the others keep their first ones. Says what was left out.
    """
    full = {key: len(result[key]) for key in lists}

    def accounting() -> dict[str, Any]:
        # counted while cutting: "bytes" holds the budget until the end, never fewer digits than the result's size
        return {"budget": budget, "bytes": budget, "left_out_by_budget": {key: full[key] - len(result[key]) for key in full}}

    result["accounting"] = accounting()
    while json_bytes(result) > budget:
        longest = max(lists, key=lambda key: json_bytes(result[key]) if result[key] else -1)
        if not result[longest]:
            break
        items = result[longest]
        result[longest] = items[:1] + items[2:] if longest in ("history", "events") and len(items) > 1 else items[:-1]
        result["accounting"] = accounting()
    result["accounting"]["bytes"] = json_bytes(result)
    return result


def budgeted(result: dict[str, Any], budget: Any) -> dict[str, Any]:
    """
    A claim's or fact's provenance (from :func:`claim_provenance` or
    :func:`fact_provenance`) cut to ``budget`` bytes, for an agent; a fact's
    claim gets half the budget.
    """
    budget = check_limit(budget, "budget", 1_000, 200_000)
    result = noted(result)
    claim_lists = ("events", "evidence", "reviews")
    if "fact" not in result:
        return within_budget(result, budget, claim_lists)
    claim = result["claim"]
    if claim is not None:
        result["claim"] = within_budget(claim, budget // 2, claim_lists)
    result = within_budget(result, budget, ("events", "validity"))
    if claim is not None and json_bytes(result) > budget:
        # the fact's own lists are cut to the bone: the claim gets whatever room is left
        result["claim"] = within_budget(result["claim"], max(0, budget - (json_bytes(result) - json_bytes(result["claim"]))), claim_lists)
        result["accounting"]["bytes"] = json_bytes(result)
    return result


def target_events(conn: sqlite3.Connection, project: str, target: str) -> list[dict[str, Any]]:
    "The events of ``target`` (``claim:N`` or ``fact:N``), oldest first, values decoded."
    found = []
    for event in events(conn, "id IN (SELECT event_id FROM memory_event_names WHERE project = ? AND name = ?)", [project, target]):
        found.append({**described(event), "new": None if event["new"] is None else json.loads(event["new"])})
    return found


def claim_provenance(conn: sqlite3.Connection, project: str, claim_id: Any) -> dict[str, Any]:
    """
    Who proposed claim ``claim_id``, on what evidence, and each review.

    :return: ``{claim, proposed, evidence, reviews, events}``
    """
    claim = claim_dict(conn, load_claim(conn, project, claim_id))
    steps = target_events(conn, project, f"claim:{claim['id']}")
    reviews = [{**{k: s[k] for k in DESCRIBED}, "rationale": (s["new"] or {}).get("rationale")}
               for s in steps if s["kind"] in ("approve_claim", "reject_claim", "reopen_claim")]
    return {
        "claim": {k: claim[k] for k in ("id", "subject", "predicate", "object", "status", "confidence", "fact_id")},
        "proposed": next((described_only(s) for s in steps if s["kind"] == "propose_claim"), None),
        "evidence": claim["evidence"],
        "reviews": reviews,
        "events": [described_only(s) for s in steps],
    }


def described_only(step: dict[str, Any]) -> dict[str, Any]:
    return {k: step[k] for k in DESCRIBED}


def fact_provenance(conn: sqlite3.Connection, project: str, fact_id: Any) -> dict[str, Any]:
    """
    Who made fact ``fact_id`` true and why: the person who recorded it and
    their rationale, the claim and evidence they approved, and each change to its validity.

    :return: ``{fact, recorded, claim, validity, events}``
    """
    fact = load_fact(conn, project, fact_id)
    steps = target_events(conn, project, f"fact:{fact['id']}")
    recorded = next((s for s in steps if s["kind"] == "record_fact"), None)
    if recorded is None:
        raise NotFound(f"fact {fact['id']}: the ledger has no record_fact event for it; run verify")
    return {
        "fact": fact,
        "recorded": {**described_only(recorded), "rationale": fact["rationale"]},
        "claim": None if fact["claim_id"] is None else claim_provenance(conn, project, fact["claim_id"]),
        "validity": [{**described_only(s), "rationale": (s["new"] or {}).get("rationale"),
                      **{k: (s["new"] or {}).get(k) for k in ("valid_to", "superseded_by")}}
                     for s in steps if s["kind"] != "record_fact"],
        "events": [described_only(s) for s in steps],
    }
