"""Checkpoints anchored to the ledger head, and the resume context a new session starts from.

The ledger is the truth: a project's checkpoint is its latest ``checkpoint``
event, and the ``checkpoints`` row anchored to that event is checked against it,
never trusted instead of it. The resume context fits in a byte budget (the
summary first, cut if it alone is too long, then the newest events that fit) and
says what it left out. Its chain status walks only from the checkpoint's event to
the head, so it stays quick however long the ledger grows; ``verify`` walks it all.
"""

import json
import sqlite3
from typing import Any

from . import evidence, redacted
from .budget import json_bytes
from .errors import InvalidInput
from .ledger import EVENT_COLUMNS, GENESIS_HASH, Caller, append_event, event_dict, event_problem, head
from .stored_data import STORED_DATA_NOTE

DEFAULT_BUDGET = 16_000
MIN_BUDGET = 1_000
MAX_BUDGET = 200_000
SELECT_EVENTS = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events"


def add_checkpoint(conn: sqlite3.Connection, caller: Caller, project: str, summary: str) -> dict[str, Any]:
    """
    Record a checkpoint: a ``checkpoint`` event, then a row anchored to its hash.

    :param conn: a connection inside an IMMEDIATE transaction
    :param caller: who is checkpointing
    :param project: the project scope
    :param summary: what the session has done so far, in the caller's words
    """
    event = append_event(conn, caller, project, "checkpoint", project, new={"summary": summary})
    row = {
        "project": project,
        "ts": event["ts"],
        "actor": caller.actor,
        "session": caller.session,
        "summary": summary,
        "head_event_id": event["id"],
        "head_hash": event["hash"],
    }
    cursor = conn.execute(
        "INSERT INTO checkpoints (project, ts, actor, session, summary, head_event_id, head_hash) "
        "VALUES (:project, :ts, :actor, :session, :summary, :head_event_id, :head_hash)",
        row,
    )
    return {"id": cursor.lastrowid, **row}


def resume_context(
    conn: sqlite3.Connection, project: str, max_events: int = 50, budget: int = DEFAULT_BUDGET,
    skip_kinds: tuple[str, ...] = (),
) -> dict[str, Any]:
    """
    Where to pick up, in at most ``budget`` bytes of JSON: the project's latest
    checkpoint as the ledger records it, the newest events since it that fit
    (oldest first), the chain checked from the checkpoint's event to the head
    and against the records kept outside the file (the head witness, the last
    clean check: a rewound or rewritten ledger is a warning, whatever was written
    since), warnings where the ``checkpoints`` table disagrees with the ledger,
    and an accounting of what was left out.

    :param conn: an open connection
    :param project: the project scope
    :param max_events: most events to return
    :param budget: most bytes of the whole result's JSON (UTF-8)
    :param skip_kinds: kinds of events left out and not counted (such as the hooks' ``activity``,
        which would crowd out decisions); the accounting then says how many in ``left_out_by_kind``
    """
    checkpoint, warnings = ledger_checkpoint(conn, project)
    integrity = evidence.report(conn, noticed_by="get_resume_context")
    since = checkpoint["head_event_id"] if checkpoint else 0
    skipped = skipped_since(conn, project, since, skip_kinds)
    total = conn.execute("SELECT count(*) FROM events WHERE project = ? AND id > ?", [project, since]).fetchone()[0] - skipped
    newest = newest_events(conn, project, since, max_events, skip_kinds)
    first_checked = since or (newest[-1]["id"] if newest else head(conn)[0])
    context: dict[str, Any] = {
        "project": project,
        "checkpoint": checkpoint,
        "events": [],
        "chain": with_witness(window_status(conn, first_checked), integrity),
        "warnings": warnings,
        "accounting": {
            "events_since_checkpoint": total,
            "returned": 0,
            "left_out_by_max_events": total - len(newest),
            "left_out_by_budget": len(newest),
            "summary_bytes_cut": 0,
            "bytes": 0,
            "budget": budget,
        },
        "note": STORED_DATA_NOTE,
    }
    if skip_kinds:
        context["accounting"]["left_out_by_kind"] = skipped
    return with_newest_that_fit(cut_summary(context, newest, budget), newest, budget)


def skipped_since(conn: sqlite3.Connection, project: str, since: int, skip_kinds: tuple[str, ...]) -> int:
    "How many events of ``skip_kinds`` the project recorded after event ``since`` (on the (project, kind, id) index)."
    if not skip_kinds:
        return 0
    kinds = list(dict.fromkeys(skip_kinds))
    return int(conn.execute(
        f"SELECT count(*) FROM events WHERE project = ? AND kind IN ({', '.join('?' for _ in kinds)}) AND id > ?",
        [project, *kinds, since],
    ).fetchone()[0])


def kind_condition(skip_kinds: tuple[str, ...]) -> tuple[str, list[str]]:
    "The condition (to append after a WHERE) leaving out events of ``skip_kinds``, and its parameters."
    skipped = list(dict.fromkeys(skip_kinds))
    return (f" AND kind NOT IN ({', '.join('?' for _ in skipped)})" if skipped else ""), skipped


def ledger_checkpoint(conn: sqlite3.Connection, project: str) -> tuple[dict[str, Any] | None, list[str]]:
    """
    The project's latest checkpoint as its latest ``checkpoint`` event records it,
    and a warning for each way the ``checkpoints`` row anchored to that event differs.

    :param conn: an open connection
    :param project: the project scope
    """
    row = conn.execute(
        f"{SELECT_EVENTS} WHERE project = ? AND kind = 'checkpoint' ORDER BY id DESC LIMIT 1", [project]
    ).fetchone()
    if row is None:
        return None, []
    event = dict(zip(EVENT_COLUMNS, row))
    anchored = conn.execute(
        "SELECT id, summary, head_hash FROM checkpoints WHERE project = ? AND head_event_id = ? ORDER BY id DESC LIMIT 1",
        [project, event["id"]],
    ).fetchone()
    checkpoint = {
        "id": anchored[0] if anchored else None,
        "ts": event["ts"],
        "actor": event["actor"],
        "session": event["session"],
        "summary": ledger_summary(event),
        "head_event_id": event["id"],
        "head_hash": event["hash"],
    }
    return checkpoint, row_differences(anchored, checkpoint)


def ledger_summary(event: dict[str, Any]) -> str | None:
    "The summary a ``checkpoint`` event holds; None if its value was redacted."
    value = None if event["new"] is None else json.loads(event["new"])
    return value.get("summary") if isinstance(value, dict) else None


def row_differences(row: tuple[Any, ...] | None, checkpoint: dict[str, Any]) -> list[str]:
    """
    A warning for each way a ``checkpoints`` row differs from the ledger event it is anchored to.

    :param row: the row's ``(id, summary, head_hash)``, or None if there is none
    :param checkpoint: the checkpoint as the ledger records it
    """
    event_id = checkpoint["head_event_id"]
    if row is None:
        return [f"checkpoint event {event_id} has no row in the checkpoints table (it was deleted); showing the ledger's"]
    row_id, summary, head_hash = row
    differs = [
        field
        for field, differ in (
            ("summary", checkpoint["summary"] is not None and summary != checkpoint["summary"]),
            ("head_hash", head_hash != checkpoint["head_hash"]),
        )
        if differ
    ]
    return [f"checkpoint {row_id}'s {field} does not match its ledger event {event_id}; showing the ledger's" for field in differs]


def newest_events(
    conn: sqlite3.Connection, project: str, since: int, limit: int, skip_kinds: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """
    The project's newest ``limit`` events after event ``since``, newest first.

    :param conn: an open connection
    :param project: the project scope
    :param since: the checkpoint's event id, or 0
    :param limit: most events
    :param skip_kinds: kinds of events left out
    """
    kept, skipped = kind_condition(skip_kinds)
    rows = conn.execute(
        f"{SELECT_EVENTS} WHERE project = ? AND id > ?{kept} ORDER BY id DESC LIMIT ?", [project, since, *skipped, limit]
    )
    return [event_dict(dict(zip(EVENT_COLUMNS, row))) for row in rows]


def window_status(conn: sqlite3.Connection, first_id: int | None) -> dict[str, Any]:
    """
    The chain from event ``first_id`` to the head: each event's link to the one
    before it and its hash checked; events before it are left to ``verify``.

    :param conn: an open connection
    :param first_id: the first event to check, or None when the ledger is empty
    """
    head_id, head_hash = head(conn)
    status: dict[str, Any] = {"head": {"id": head_id, "hash": head_hash}, "checked": None, "ok": True,
                              "broken_event_id": None, "problem": None}
    if first_id is None or head_id is None:
        return {**status, "summary": "the ledger holds no events"}
    broken_id, problem = first_problem(conn, first_id, head_id)
    checked = f"events {first_id}..{head_id} checked; run verify for the whole file"
    return {
        **status,
        "checked": {"from": first_id, "to": head_id},
        "ok": problem is None,
        "broken_event_id": broken_id,
        "problem": problem,
        "summary": checked if problem is None else f"ledger broken at event {broken_id}: {problem}; {checked}",
    }


def with_witness(status: dict[str, Any], integrity: dict[str, Any]) -> dict[str, Any]:
    """
    The chain's status with what the records outside the file say (:func:`.evidence.report`):
    not ok if they disagree, and their summary leads (after a break in the window, which leads).
    """
    if integrity["ok"]:
        return {**status, "witness": evidence.brief(integrity)}
    parts = [status["summary"], integrity["summary"]] if not status["ok"] else [integrity["summary"], status["summary"]]
    return {**status, "ok": False, "witness": evidence.brief(integrity), "summary": "; ".join(parts)}


def first_problem(conn: sqlite3.Connection, first_id: int, last_id: int) -> tuple[int | None, str | None]:
    """
    The first event from ``first_id`` to ``last_id`` that does not follow the
    one before it, and why; ``(None, None)`` if every one does.

    :param conn: an open connection
    :param first_id: the first event to check; its link to the event before it is checked too
    :param last_id: the last event to check
    """
    before = conn.execute("SELECT hash FROM events WHERE id < ? ORDER BY id DESC LIMIT 1", [first_id]).fetchone()
    prev_hash = before[0] if before else GENESIS_HASH
    allowed = redacted.accepted(conn)
    for values in conn.execute(f"{SELECT_EVENTS} WHERE id BETWEEN ? AND ? ORDER BY id", [first_id, last_id]):
        event = dict(zip(EVENT_COLUMNS, values))
        problem = event_problem(event, prev_hash, allowed)
        if problem:
            return event["id"], problem
        prev_hash = event["hash"]
    return None, None


def with_events(context: dict[str, Any], newest: list[dict[str, Any]], count: int) -> dict[str, Any]:
    """
    ``context`` holding the newest ``count`` of ``newest``, oldest first, counted in its
    accounting, whose ``bytes`` is then the size of the whole result.

    :param context: a resume context
    :param newest: events, newest first
    :param count: how many of them to hold
    """
    accounting = {**context["accounting"], "returned": count, "left_out_by_budget": len(newest) - count}
    result = {**context, "events": newest[:count][::-1], "accounting": accounting}
    while (size := json_bytes(result)) != accounting["bytes"]:  # settles once its own digits are counted
        accounting["bytes"] = size
    return result


def cut_summary(context: dict[str, Any], newest: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """
    ``context`` with its checkpoint's summary cut, if it must be, so that the
    context fits in ``budget`` bytes holding none of ``newest``; the cut is marked and counted.

    :param context: a resume context holding no events
    :param newest: the events it could hold, newest first
    :param budget: most bytes of the result
    """
    summary = context["checkpoint"]["summary"] if context["checkpoint"] else None
    if not summary or with_events(context, newest, 0)["accounting"]["bytes"] <= budget:
        return context
    low, high = 0, len(summary)
    while low < high:  # the longest beginning that fits
        middle = (low + high + 1) // 2
        if with_events(summary_cut_to(context, summary, middle), newest, 0)["accounting"]["bytes"] <= budget:
            low = middle
        else:
            high = middle - 1
    return summary_cut_to(context, summary, low)


def summary_cut_to(context: dict[str, Any], summary: str, length: int) -> dict[str, Any]:
    """
    ``context`` whose checkpoint summary keeps its first ``length`` characters and ends
    with a marker saying how many bytes were cut.

    :param context: a resume context
    :param summary: the whole summary
    :param length: characters to keep
    """
    kept = summary[:length]
    cut = len(summary.encode("utf-8")) - len(kept.encode("utf-8"))
    checkpoint = {**context["checkpoint"], "summary": f"{kept} [... {cut} more bytes of this summary cut to fit the budget]"}
    return {**context, "checkpoint": checkpoint, "accounting": {**context["accounting"], "summary_bytes_cut": cut}}


def with_newest_that_fit(context: dict[str, Any], newest: list[dict[str, Any]], budget: int) -> dict[str, Any]:
    """
    ``context`` holding the newest of ``newest`` that fit in ``budget`` bytes together.

    :param context: a resume context holding no events
    :param newest: events, newest first
    :param budget: most bytes of the result
    """
    empty = with_events(context, newest, 0)["accounting"]["bytes"]
    if empty > budget:
        raise InvalidInput(
            f"budget: {budget} bytes cannot hold the resume context's checkpoint, chain status and accounting "
            f"({empty} bytes); use a larger budget"
        )
    room, count = budget - empty, 0
    for event in newest:
        room -= json_bytes(event) + (2 if count else 0)  # ", " between events
        if room < 0:
            break
        count += 1
    result = with_events(context, newest, count)
    while result["accounting"]["bytes"] > budget:  # a count in the accounting grew a digit
        count -= 1
        result = with_events(context, newest, count)
    return result
