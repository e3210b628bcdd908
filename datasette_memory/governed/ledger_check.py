"""Checking the governed tables against the ledger.

Every claim and fact the core writes has ledger events saying what it says and
each change to it. A fact or claim written, or a validity changed, by editing
the file directly (outside the core) has no matching events, and this check
names it. It complements ``verify_chain``, which finds edits to the ledger itself.
"""

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

FACT_KINDS = {"record_fact": "record", "supersede_fact": "supersede", "invalidate_fact": "invalidate", "revalidate_fact": "revalidate"}
CLAIM_KINDS = {"propose_claim": None, "approve_claim": "approved", "reject_claim": "rejected", "reopen_claim": "candidate"}
FACT_SAYS = ("project", "subject", "predicate", "object", "valid_from", "recorded_at", "recorded_by", "claim_id", "supersedes")
CLAIM_SAYS = ("project", "subject", "predicate", "object", "valid_from", "proposed_by")


def ledger_events(conn: sqlite3.Connection, kinds: Iterable[str]) -> dict[str, list[tuple[str, str, Any]]]:
    "``{target: [(kind, project, new value)]}`` for events of ``kinds``, oldest first."
    found: dict[str, list[tuple[str, str, Any]]] = {}
    rows = conn.execute(
        "SELECT kind, project, target, new FROM events WHERE kind IN (SELECT value FROM json_each(?)) ORDER BY id",
        [json.dumps(list(kinds))],
    )
    for kind, project, target, new in rows:
        found.setdefault(target, []).append((kind, project, None if new is None else json.loads(new)))
    return found


def differences(row: dict, recorded: Any, fields: Any) -> list[Any]:
    "The fields where ``row`` and the ledger's ``recorded`` value differ (none if the value was redacted)."
    if recorded is None:
        return []
    return [field for field in fields if recorded.get(field) != row[field]]


def fact_problems(conn: sqlite3.Connection) -> list[Any]:
    events = ledger_events(conn, FACT_KINDS)
    problems = []
    columns = ("id",) + FACT_SAYS + ("valid_to", "superseded_by")
    for values in conn.execute(f"SELECT {', '.join(columns)} FROM facts ORDER BY id"):
        fact = dict(zip(columns, values))
        history = events.get(f"fact:{fact['id']}", [])
        if not history or history[0][0] != "record_fact" or history[0][1] != fact["project"]:
            problems.append(f"fact {fact['id']} has no record_fact event in its project: it was written outside the core")
            continue
        changed = differences(fact, history[0][2], FACT_SAYS)
        if changed:
            problems.append(f"fact {fact['id']}: {', '.join(changed)} differ from its record_fact event")
        problems += validity_problems(conn, fact, history)
    return problems


def validity_problems(conn: sqlite3.Connection, fact: dict, history: list) -> list[Any]:
    "Whether the fact's validity history and current validity match its ledger events."
    rows = [tuple(row) for row in conn.execute(
        "SELECT act, valid_to, superseded_by FROM fact_history WHERE fact_id = ? ORDER BY id", [fact["id"]]
    )]
    if len(rows) != len(history) or any(
        row != expected_history(kind, new, row) for row, (kind, _, new) in zip(rows, history)
    ):
        return [f"fact {fact['id']}: its validity history does not match its ledger events"]
    if (fact["valid_to"], fact["superseded_by"]) != rows[-1][1:]:
        return [f"fact {fact['id']}: its valid_to or superseded_by does not match its latest ledger event"]
    return []


def expected_history(kind: str, new: Any, row: tuple) -> tuple[Any, ...]:
    "The fact_history row an event implies; only the act, if the event's value was redacted."
    if new is None:
        return (FACT_KINDS[kind],) + row[1:]
    return (FACT_KINDS[kind], new.get("valid_to"), None if kind == "record_fact" else new.get("superseded_by"))


def claim_problems(conn: sqlite3.Connection) -> list[Any]:
    events = ledger_events(conn, CLAIM_KINDS)
    problems = []
    columns = ("id",) + CLAIM_SAYS + ("status",)
    for values in conn.execute(f"SELECT {', '.join(columns)} FROM claims ORDER BY id"):
        claim = dict(zip(columns, values))
        history = events.get(f"claim:{claim['id']}", [])
        if not history or history[0][0] != "propose_claim" or history[0][1] != claim["project"]:
            problems.append(f"claim {claim['id']} has no propose_claim event in its project: it was written outside the core")
            continue
        changed = differences(claim, history[0][2], CLAIM_SAYS)
        if changed:
            problems.append(f"claim {claim['id']}: {', '.join(changed)} differ from its propose_claim event")
        reviews = [CLAIM_KINDS[kind] for kind, _, _ in history if CLAIM_KINDS[kind]]
        if claim["status"] != (reviews[-1] if reviews else "candidate"):
            problems.append(f"claim {claim['id']}: status {claim['status']} does not match its review events")
    return problems


def audit_governed(conn: sqlite3.Connection) -> dict[str, Any]:
    """
    Check every claim and fact (every project) against the ledger.

    :param conn: an open connection to a memory file
    :return: ``{ok, problems}``, each problem naming the claim or fact
    """
    problems = claim_problems(conn) + fact_problems(conn)
    return {"ok": not problems, "problems": problems}
