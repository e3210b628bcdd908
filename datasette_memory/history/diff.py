"""``memory_diff``: what was added, changed and deleted in a project between two moments.

Both sides are replays (:mod:`.as_of`), so the diff is of states, not a list
of events: something added and deleted in between does not appear. Changes
are listed entities first, then relations, aliases, claims and facts, within a
byte budget that says what it left out, like search.
"""

from collections import Counter
from typing import Any

from ..core.budget import leading_within
from ..core.stored_data import noted
from ..core.validation import check_limit
from .replay import Project

DEFAULT_BUDGET = 16_000


def changes(before: Project, after: Project) -> list[dict[str, Any]]:
    "Every change from ``before`` to ``after``, one item each."
    out: list[dict[str, Any]] = []
    for name, entity in after.entities.items():
        old = before.entities.get(name)
        if old is None:
            out.append({"change": "entity added", "entity": entity.as_official()})
            continue
        if old.entity_type != entity.entity_type:
            out.append({"change": "entity type changed", "entity": name, "from": old.entity_type, "to": entity.entity_type})
        added = [c for c in entity.contents() if c not in old.contents()]
        removed = [c for c in old.contents() if c not in entity.contents()]
        if added:
            out.append({"change": "observations added", "entity": name, "observations": added})
        if removed:
            out.append({"change": "observations deleted", "entity": name, "observations": removed})
    out += [{"change": "entity deleted", "entity": entity.as_official()}
            for name, entity in before.entities.items() if name not in after.entities]
    out += [{"change": "relation added", "relation": {"from": f, "to": t, "relationType": r}}
            for f, t, r in after.relations if (f, t, r) not in before.relations]
    out += [{"change": "relation deleted", "relation": {"from": f, "to": t, "relationType": r}}
            for f, t, r in before.relations if (f, t, r) not in after.relations]
    out += [{"change": "alias added", "alias": alias, "entity": target[0]}
            for alias, target in after.aliases.items() if before.aliases.get(alias, [None])[0] != target[0]]
    out += governed_changes("claim", before.claims, after.claims, ("status",))
    out += governed_changes("fact", before.facts, after.facts, ("valid_to", "retracted_at", "superseded_by"))
    return out


def governed_changes(kind: str, before: dict[int, dict], after: dict[int, dict], moving: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for id, row in after.items():
        statement = {k: row[k] for k in ("subject", "predicate", "object")}
        if id not in before:
            out.append({"change": f"{kind} added", f"{kind}_id": id, **statement, **{k: row[k] for k in moving}})
        elif any(before[id][k] != row[k] for k in moving):
            out.append({"change": f"{kind} changed", f"{kind}_id": id, **statement,
                        "from": {k: before[id][k] for k in moving}, "to": {k: row[k] for k in moving}})
    return out


def memory_diff(before: Project, after: Project, moments: tuple[dict, dict], budget: Any = DEFAULT_BUDGET) -> dict[str, Any]:
    """
    The changes between two replays of one project, within ``budget`` bytes.

    :param moments: the two moments, as :func:`.as_of.resolve` gives them
    :param budget: most bytes of changes, 1,000 to 200,000
    :return: ``{from, to, changes, counts, accounting}``
    """
    budget = check_limit(budget, "budget", 1_000, 200_000)
    found = changes(before, after)
    counts = Counter(item["change"] for item in found)
    included, used = leading_within(found, budget, separator=2)  # ", " between changes
    left_out = Counter(item["change"] for item in found[len(included):])
    return noted({
        "from": {k: moments[0][k] for k in ("event_id", "ts", "asked")},
        "to": {k: moments[1][k] for k in ("event_id", "ts", "asked")},
        "changes": included,
        "counts": dict(counts),
        "accounting": {"changes": len(found), "returned": len(included), "left_out_by_budget": len(found) - len(included),
                       "left_out": dict(left_out), "bytes": used, "budget": budget},
    })
