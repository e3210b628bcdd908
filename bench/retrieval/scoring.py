"""Scoring one search answer: what it returned, in rank order, and how good that was for its query.

Both runners use these: run.py on answers read from MCP results, calibrate.py on
``search_memory``'s result computed in process.
"""

import math

from corpora import Data, answer_texts

TOP = 5  # the k of recall@k and turn recall@k


def strings(value):
    "Every string inside a JSON value."
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def ranked_entities(data) -> list[tuple[str, object]]:
    """
    ``(name, item)`` in rank order, one per entity, from a search result: {"entities": [...]}
    (search_nodes) or {"results": [{"entity": {...} or "name"} or {"name": ...}]} (search_memory),
    also when wrapped as {"result": ...}.
    """
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    items = data if isinstance(data, list) else (data or {}).get("results") or (data or {}).get("entities") or []
    ranked: dict[str, object] = {}
    for item in items:
        entity = item.get("entity", item) if isinstance(item, dict) else item
        name = entity.get("name") if isinstance(entity, dict) else entity
        if isinstance(name, str) and name not in ranked:
            ranked[name] = item
    return list(ranked.items())


def returned(data, texts: list[str], size: int, error: str | None, ms: float) -> dict:
    """
    What a search returned: entity names in order, all its text, the text of its top
    results, its size in bytes, its error if any and how long it took.

    :param data: the result as JSON
    :param texts: the result's text as sent (searched for leaks along with ``data``'s strings)
    :param size: the result's size in bytes
    :param error: the error message of a failed call, else None
    :param ms: the call's time in milliseconds
    """
    ranked = [] if error else ranked_entities(data)
    related = [] if error or not isinstance(data, dict) else ranked_entities({"results": data.get("related") or []})
    return {
        "names": [name for name, _ in ranked],
        "related": [name for name, _ in related],
        "text": "\n".join([*texts, *strings(data)]),
        "top_text": "\n".join(s for _, item in ranked[:TOP] for s in strings(item)),
        "bytes": size,
        "error": error,
        "ms": ms,
    }


def recall(names, relevant, k):
    return float(bool(set(names[:k]) & set(relevant)))


def reciprocal_rank(names, relevant):
    return next((1 / (i + 1) for i, n in enumerate(names) if n in relevant), 0.0)


def ndcg(names, relevant, k=10):
    gain = {n: (2 if i == 0 else 1) for i, n in enumerate(relevant)}
    dcg = sum(gain.get(n, 0) / math.log2(i + 2) for i, n in enumerate(names[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gain.values(), reverse=True)[:k]))
    return dcg / ideal


def leaks(data: Data, q: dict, a: dict) -> tuple[int, int]:
    "(cross-project, deleted-item) leaks in one answer."
    project = q["project"]
    foreign = [n for n in a["names"] if n not in data.names[project]]
    own_text = "\n".join(o for obs in data.original[project].values() for o in obs)
    forbidden_foreign = [f for f in q["forbidden_text"] if f not in own_text and f in a["text"]]
    deleted = {*data.deleted_texts[project], *(f for f in q["forbidden_text"] if f in own_text)}
    deleted_hits = [t for t in deleted if t in a["text"]] + [n for n in a["names"] if n in data.deleted_entities[project]]
    return len(foreign) + len(forbidden_foreign), len(deleted_hits)


def score(data: Data, q: dict, a: dict) -> dict:
    "All metrics for one query's answer (``a`` as :func:`returned` makes it)."
    cross, deleted = leaks(data, q, a)
    m = {"entities": len(a["names"]), "bytes": a["bytes"], "cross": cross, "deleted": deleted, "error": bool(a["error"]), "ms": a["ms"]}
    rel = q["relevant"]
    if rel:
        names = a["names"]
        m.update(r1=recall(names, rel, 1), r5=recall(names, rel, TOP), mrr=reciprocal_rank(names, rel), ndcg=ndcg(names, rel))
        m["unanswered"] = float(not names)
        m["r5_or_related"] = float(bool(set(names[:TOP]) & set(rel)) or bool(set(a["related"]) & set(rel)))
        if answer_texts(q):
            m["turn_r5"] = float(any(t in a["top_text"] for t in answer_texts(q)))
    else:
        m["abstained"] = float(not a["names"])
        m["silent"] = float(not a["names"] and not a["related"])
    return m


def mean(rows, key):
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else None
