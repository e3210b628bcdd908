"""Facts: what a person decided memory holds, bitemporal and never deleted.

Valid time (``valid_from``, ``valid_to``) is when a fact holds in the world;
record time (``recorded_at``, ``retracted_at``) is when memory learned or
retired it. Retiring a fact (supersede, invalidate) only closes its validity;
revalidating reopens it. Each change appends a ``fact_history`` row at its
record time, so reads can answer "what held at valid time T, as memory knew it
at record time R". Only a person reaches the changing functions here (see
:mod:`datasette_memory.governed.gate`); the caller provides the transaction.
"""

import sqlite3
from typing import Any

from ..core.database import inserted_id
from ..core.errors import InvalidInput, NotFound
from ..core.ledger import Caller, append_event
from .bitemporal import END_OF_TIME, record_time
from .statements import check_statement, value_key

FACT_COLUMNS = (
    "id", "project", "subject", "predicate", "object", "valid_from", "valid_to",
    "recorded_at", "retracted_at", "recorded_by", "rationale", "claim_id", "supersedes", "superseded_by",
)
RETIRING_ACTS = ("supersede", "invalidate")


def insert_fact(conn: sqlite3.Connection, caller: Caller, project: str, statement: dict, rationale: str,
                valid_from: Any = None, valid_to: Any = None, claim_id: Any = None, supersedes: Any = None, recorded_at: Any = None) -> dict[str, Any]:
    """
    Store a new fact with its first history row and a ``record_fact`` event.

    :param statement: a mapping with ``subject``, ``predicate`` and ``object``
    :param valid_from: when it starts to hold; default its record time
    :param valid_to: when it stops holding; None for no end
    """
    statement = check_statement(statement["subject"], statement["predicate"], statement["object"])
    recorded_at = recorded_at or record_time(conn)
    valid_from = valid_from or recorded_at
    if valid_to is not None and valid_to < valid_from:
        raise InvalidInput(f"valid_to: {valid_to} is before valid_from {valid_from}; a fact cannot stop before it starts")
    cursor = conn.execute(
        "INSERT INTO facts (project, subject, predicate, object, subject_key, predicate_key, object_key, "
        "valid_from, valid_to, recorded_at, recorded_by, rationale, claim_id, supersedes) "
        "VALUES (:project, :subject, :predicate, :object, :subject_key, :predicate_key, :object_key, "
        ":valid_from, :valid_to, :recorded_at, :recorded_by, :rationale, :claim_id, :supersedes)",
        {**statement, "project": project, "valid_from": valid_from, "valid_to": valid_to,
         "recorded_at": recorded_at, "recorded_by": caller.actor, "rationale": rationale,
         "claim_id": claim_id, "supersedes": supersedes},
    )
    fact_id = inserted_id(cursor)
    add_history(conn, caller, fact_id, "record", valid_to, None, recorded_at, rationale)
    fact = load_fact(conn, project, fact_id)
    append_event(conn, caller, project, "record_fact", f"fact:{fact['id']}", new=fact, ts=recorded_at)
    return fact


def add_history(
    conn: sqlite3.Connection, caller: Caller, fact_id: int, act: str, valid_to: str | None, superseded_by: int | None,
    recorded_at: str, rationale: str,
) -> None:
    conn.execute(
        "INSERT INTO fact_history (fact_id, act, valid_to, superseded_by, recorded_at, actor, rationale) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [fact_id, act, valid_to, superseded_by, recorded_at, caller.actor, rationale],
    )


def load_fact(conn: sqlite3.Connection, project: str, fact_id: Any) -> dict[str, Any]:
    "Fact ``fact_id`` of ``project`` as it stands now, or :class:`NotFound`."
    if isinstance(fact_id, bool) or not isinstance(fact_id, int):
        raise InvalidInput(f"fact_id: must be an integer, got {fact_id!r}")
    row = conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project = ? AND id = ?", [project, fact_id]
    ).fetchone()
    if row is None:
        raise NotFound(f"fact {fact_id} not found in project {project!r}; get_facts shows the project's facts")
    return dict(zip(FACT_COLUMNS, row))


def require_holds_after(fact: dict[str, Any], effective: str) -> None:
    "Raise unless ``fact`` holds at some time at or after ``effective``."
    if effective < fact["valid_from"]:
        raise InvalidInput(
            f"effective: {effective} is before fact {fact['id']} starts to hold ({fact['valid_from']}); "
            "use a time at or after it"
        )
    if fact["valid_to"] is not None and effective >= fact["valid_to"]:
        raise InvalidInput(
            f"effective: fact {fact['id']} already stops holding at {fact['valid_to']}, not after {effective}; "
            "revalidate it first if it holds again"
        )


def change_validity(conn: sqlite3.Connection, caller: Caller, project: str, fact: dict, act: str, valid_to: Any, superseded_by: Any,
                    rationale: str, recorded_at: str) -> dict[str, Any]:
    "Close or reopen ``fact``'s validity, with a history row and a ledger event."
    retracted_at = recorded_at if act in RETIRING_ACTS else None
    conn.execute(
        "UPDATE facts SET valid_to = ?, retracted_at = ?, superseded_by = ? WHERE id = ?",
        [valid_to, retracted_at, superseded_by, fact["id"]],
    )
    add_history(conn, caller, fact["id"], act, valid_to, superseded_by, recorded_at, rationale)
    changed = load_fact(conn, project, fact["id"])
    append_event(
        conn, caller, project, f"{act}_fact", f"fact:{fact['id']}",
        old={k: fact[k] for k in ("valid_to", "retracted_at", "superseded_by")},
        new={**{k: changed[k] for k in ("valid_to", "retracted_at", "superseded_by")}, "rationale": rationale},
        ts=recorded_at,
    )
    return changed


def record_fact(conn: sqlite3.Connection, caller: Caller, project: str, statement: dict, rationale: str, valid_from: Any = None, valid_to: Any = None) -> dict[str, Any]:
    "A person enters a fact directly, without a claim."
    return {"fact": insert_fact(conn, caller, project, statement, rationale, valid_from, valid_to)}


def supersede_fact(conn: sqlite3.Connection, caller: Caller, project: str, fact_id: Any, object: Any, rationale: str, effective: Any = None) -> dict[str, Any]:
    """
    Replace fact ``fact_id`` from ``effective`` (default now) with a new fact
    saying ``object`` about the same subject and predicate, for the rest of the
    old fact's validity. The two are linked both ways.

    :return: ``{superseded, fact}``
    """
    fact = load_fact(conn, project, fact_id)
    recorded_at = record_time(conn)
    effective = effective or recorded_at
    require_holds_after(fact, effective)
    statement = check_statement(fact["subject"], fact["predicate"], object)
    if statement["object_key"] == value_key(fact["object"]):
        raise InvalidInput(
            f"object: is the value fact {fact['id']} already holds; to end the fact instead, invalidate it"
        )
    new = insert_fact(conn, caller, project, statement, rationale, effective, fact["valid_to"],
                      supersedes=fact["id"], recorded_at=recorded_at)
    old = change_validity(conn, caller, project, fact, "supersede", effective, new["id"], rationale, recorded_at)
    return {"superseded": old, "fact": new}


def invalidate_fact(conn: sqlite3.Connection, caller: Caller, project: str, fact_id: Any, rationale: str, effective: Any = None) -> dict[str, Any]:
    "Fact ``fact_id`` stops holding from ``effective`` (default now; a future time schedules it)."
    fact = load_fact(conn, project, fact_id)
    recorded_at = record_time(conn)
    effective = effective or recorded_at
    require_holds_after(fact, effective)
    changed = change_validity(
        conn, caller, project, fact, "invalidate", effective, fact["superseded_by"], rationale, recorded_at
    )
    return {"fact": changed}


def revalidate_fact(conn: sqlite3.Connection, caller: Caller, project: str, fact_id: Any, rationale: str) -> dict[str, Any]:
    "Fact ``fact_id`` holds again, with no end; a fact that superseded it is not touched."
    fact = load_fact(conn, project, fact_id)
    if fact["valid_to"] is None:
        raise InvalidInput(f"fact_id: fact {fact['id']} already holds with no end; there is nothing to revalidate")
    changed = change_validity(conn, caller, project, fact, "revalidate", None, None, rationale, record_time(conn))
    return {"fact": changed}


AS_OF_SQL = f"""
SELECT f.id, f.project, f.subject, f.predicate, f.object, f.valid_from, h.valid_to, f.recorded_at,
    CASE WHEN h.act IN ('supersede', 'invalidate') THEN h.recorded_at END,
    f.recorded_by, f.rationale, f.claim_id, f.supersedes, h.superseded_by
FROM facts f JOIN fact_history h ON h.id = (
    SELECT id FROM fact_history WHERE fact_id = f.id AND recorded_at <= :recorded
    ORDER BY recorded_at DESC, id DESC LIMIT 1
)
WHERE f.project = :project
    AND (:subject IS NULL OR f.subject_key = :subject)
    AND (:predicate IS NULL OR f.predicate_key = :predicate)
    AND f.valid_from <= :valid AND :valid < coalesce(h.valid_to, '{END_OF_TIME}')
ORDER BY f.id
"""


def facts_as_of(conn: sqlite3.Connection, project: str, valid: str, recorded: str, subject: Any = None, predicate: Any = None) -> list[Any]:
    """
    The facts of ``project`` that held at valid time ``valid``, as memory knew
    them at record time ``recorded``, each with its validity as known then.

    :param valid: a time in the stored format
    :param recorded: a time in the stored format
    :param subject: only facts about this subject (compared normalized)
    :param predicate: only facts with this predicate (compared normalized)
    """
    rows = conn.execute(AS_OF_SQL, {
        "project": project, "valid": valid, "recorded": recorded,
        "subject": None if subject is None else value_key(subject),
        "predicate": None if predicate is None else value_key(predicate),
    }).fetchall()
    return [dict(zip(FACT_COLUMNS, row)) for row in rows]


def holding_fact(conn: sqlite3.Connection, project: str, statement: dict[str, Any], at: str) -> dict[str, Any] | None:
    "The fact of ``project`` saying ``statement``'s value that holds at ``at``, or None."
    row = conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project = ? AND subject_key = ? AND predicate_key = ? "
        f"AND object_key = ? AND valid_from <= ? AND ? < coalesce(valid_to, '{END_OF_TIME}') ORDER BY id LIMIT 1",
        [project, statement["subject_key"], statement["predicate_key"], statement["object_key"], at, at],
    ).fetchone()
    return dict(zip(FACT_COLUMNS, row)) if row else None


def all_facts(conn: sqlite3.Connection, project: str) -> list[Any]:
    "Every fact of ``project`` as it stands now, oldest first."
    rows = conn.execute(f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project = ? ORDER BY id", [project])
    return [dict(zip(FACT_COLUMNS, row)) for row in rows]
