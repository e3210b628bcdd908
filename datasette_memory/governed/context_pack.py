"""Context packs: what memory holds about a query, sized for an agent's context.

Facts that hold now are rendered as FACT; pending claims as PROPOSED (or left
out, by option); retired and not-yet-valid facts are left out. Items are ranked
by how many query words they match, so a stronger match never ranks lower, and
filled greedily into a character budget. Above them all come the items about
what the query names: a subject or object that is a name the query holds,
however its words are written (``checkout-api``, ``checkoutApi``, ``checkout api``),
or a name, current or former, of an entity the query names. Every stored value is rendered as a
JSON string, so no value can break its line or pose as a header; the header
labels them untrusted data. The accounting says what was considered, included
and left out, and why.
"""

import json
import sqlite3
from typing import Any

from ..core.clock import now
from ..core.errors import InvalidInput
from ..core.name_keys import NAME_WORD, every_name, index_keys, name_key, names_by_key, word_runs
from ..core.stored_data import STORED_DATA_NOTE
from .claims import list_claims
from .contradictions import find_contradictions
from .facts import all_facts
from .statements import PARTS, describe, value_key

NO_MATCH = "did not match the query"
RETIRED = "retired: its validity has ended"
NOT_YET_VALID = "not yet valid"
PROPOSED_EXCLUDED = "proposed claims excluded by option"
OVER_BUDGET = "over budget"
REASONS = (NO_MATCH, RETIRED, NOT_YET_VALID, PROPOSED_EXCLUDED, OVER_BUDGET)
MAX_CLAIMS = 10_000


def header(project: str, at: str) -> str:
    return (
        f"# Memory context pack: project {json.dumps(project, ensure_ascii=False)}, as of {at}\n"
        f"# {STORED_DATA_NOTE}\n"
        "# FACT: approved by a person and holding now. PROPOSED: an agent's claim no person has approved.\n"
    )


def footer(considered: int, included: int, counts: dict) -> str:
    reasons = ", ".join(f"{counts.get(reason, 0)} {reason}" for reason in REASONS)
    return f"# Accounting: considered {considered}; included {included}; left out {considered - included} ({reasons})"


def query_terms(query: str) -> list[Any]:
    "The distinct normalized words of ``query``."
    return list(dict.fromkeys(value_key(query).split()))


def matched_terms(terms: list, item: dict) -> list[Any]:
    text = " ".join(value_key(item[part]) for part in PARTS)
    return [term for term in terms if term in text]


def named_keys(conn: sqlite3.Connection, project: str, query: str) -> set[str]:
    """
    The name keys ``query`` names: each run of its words, and every name
    (current and former) of the entities whose name or former name is such a run.
    """
    words = NAME_WORD.findall(query)
    runs = [words[start:end] for start, end in word_runs(len(words))]
    ids = {entity_id for entity_id, _, _ in names_by_key(conn, project, {key for run in runs for key in index_keys(run)})}
    return {name_key("".join(run)) for run in runs} | {name_key(n) for names in every_name(conn, ids).values() for n in names}


def named_part(keys: set[str], item: dict[str, Any]) -> str | None:
    "The item's subject or object that the query names, if any."
    return next((item[part] for part in ("subject", "object") if name_key(item[part]) in keys), None)


def exclusion(kind: str, item: dict[str, Any], at: str, include_proposed: bool) -> str | None:
    "Why ``item`` stays out of a pack made at ``at``, or None."
    if kind == "PROPOSED":
        return None if include_proposed else PROPOSED_EXCLUDED
    if item["valid_from"] > at:
        return NOT_YET_VALID
    if item["valid_to"] is not None and item["valid_to"] <= at:
        return RETIRED
    return None


def render(kind: str, item: dict, contested: dict) -> str:
    "One line for ``item``: its kind, id and statement, then what a reader should know about it."
    if kind == "FACT":
        until = item["valid_to"] or "no end"
        notes = [f"valid {item['valid_from']} to {until}", f"recorded by {json.dumps(item['recorded_by'], ensure_ascii=False)}"]
        notes += [f"CONTRADICTED by {other} (awaiting review)" for other in contested.get(item["id"], [])]
    else:
        notes = [f"not approved; proposed by {json.dumps(item['proposed_by'], ensure_ascii=False)}"]
        if item["confidence"] is not None:
            notes.append(f"confidence {item['confidence']}")
    return f"{kind} #{item['id']}: {describe(item)} | " + "; ".join(notes)


def contested_facts(conn: sqlite3.Connection, project: str) -> dict[int, list[str]]:
    "Fact id to the facts and claims it contradicts, as ``fact #N`` / ``claim #N``."
    contested: dict[int, list[str]] = {}
    for c in find_contradictions(conn, project):
        other = f"{c['other']['kind']} #{c['other']['id']}"
        contested.setdefault(c["fact"]["id"], []).append(other)
        if c["other"]["kind"] == "fact":
            contested.setdefault(c["other"]["id"], []).append(f"fact #{c['fact']['id']}")
    return contested


def build_context_pack(conn: sqlite3.Connection, project: str, query: str, budget: int, include_proposed: bool = True) -> dict[str, Any]:
    """
    The pack for ``query`` in ``project``, at most ``budget`` characters of text.

    :param query: words to match against subjects, predicates and objects; empty matches everything
    :param budget: most characters in the pack's ``text``
    :param include_proposed: include pending claims, marked PROPOSED
    :return: ``{project, query, as_of, budget, text, items, accounting}``
    """
    at = now()
    terms = query_terms(query)
    keys = named_keys(conn, project, query)
    candidates = [("FACT", f) for f in all_facts(conn, project)]
    candidates += [("PROPOSED", c) for c in list_claims(conn, project, "candidate", MAX_CLAIMS)]
    counts: dict[str, int] = {}
    left_out: list[dict[str, Any]] = []
    ranked: list[tuple[int, str, dict[str, Any], list[str], str | None]] = []
    for kind, item in candidates:
        hits, named = matched_terms(terms, item), named_part(keys, item)
        reason = NO_MATCH if terms and not hits and not named else exclusion(kind, item, at, include_proposed)
        if reason:
            counts[reason] = counts.get(reason, 0) + 1
            if reason != NO_MATCH:
                left_out.append({"kind": kind, "id": item["id"], "reason": reason})
            continue
        ranked.append((len(hits), kind, item, hits, named))
    ranked.sort(key=lambda r: (r[4] is None, -r[0], r[1] != "FACT", -r[2]["id"]))
    return fill(project, query, at, budget, len(candidates), ranked, counts, left_out, contested_facts(conn, project))


def fill(project: Any, query: Any, at: Any, budget: Any, considered: Any, ranked: Any, counts: Any, left_out: Any, contested: Any) -> dict[str, Any]:
    "Add ranked items while they fit in ``budget``, then render the accounting."
    top = header(project, at)
    reserve = len(footer(considered, considered, dict.fromkeys(REASONS, considered)))
    if len(top) + reserve > budget:
        raise InvalidInput(
            f"budget: {budget} characters cannot hold the pack's header and accounting; "
            f"use at least {len(top) + reserve}"
        )
    used, lines, items = len(top) + reserve, [], []
    for score, kind, item, hits, named in ranked:
        line = render(kind, item, contested)
        if used + len(line) + 1 > budget:
            counts[OVER_BUDGET] = counts.get(OVER_BUDGET, 0) + 1
            left_out.append({"kind": kind, "id": item["id"], "reason": f"{OVER_BUDGET}: {len(line) + 1} characters"})
            continue
        used += len(line) + 1
        lines.append(line)
        why = "; ".join(
            ([f"names {named}"] if named else []) + ([f"matched {', '.join(hits)}"] if hits else [])
        ) or "empty query: everything current is included"
        items.append({"kind": kind, "id": item["id"], **{p: item[p] for p in PARTS}, "why": why, "line": line})
    text = top + "".join(line + "\n" for line in lines) + footer(considered, len(items), counts)
    accounting = {
        "considered": considered,
        "included": len(items),
        "left_out": {reason: counts.get(reason, 0) for reason in REASONS},
        "left_out_items": left_out,
    }
    return {"project": project, "query": query, "as_of": at, "budget": budget, "text": text,
            "items": items, "accounting": accounting}
