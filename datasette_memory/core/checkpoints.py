"""Checkpoints anchored to the ledger head, and the resume context a new session starts from."""

import sqlite3
from typing import Any

from .ledger import EVENT_COLUMNS, Caller, append_event, event_dict, verify_chain


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


def resume_context(conn: sqlite3.Connection, project: str, max_events: int = 50) -> dict[str, Any]:
    """
    Where to pick up: the project's latest checkpoint, the project's events
    since it (newest ``max_events``, oldest first) and the chain status.

    :param conn: an open connection
    :param project: the project scope
    :param max_events: most events to return
    """
    checkpoint = conn.execute(
        "SELECT id, project, ts, actor, session, summary, head_event_id, head_hash "
        "FROM checkpoints WHERE project = ? ORDER BY id DESC LIMIT 1",
        [project],
    ).fetchone()
    if checkpoint:
        checkpoint = dict(zip(("id", "project", "ts", "actor", "session", "summary", "head_event_id", "head_hash"), checkpoint))
    since = checkpoint["head_event_id"] if checkpoint else 0
    total = conn.execute(
        "SELECT count(*) FROM events WHERE project = ? AND id > ?", [project, since]
    ).fetchone()[0]
    rows = conn.execute(
        f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE project = ? AND id > ? "
        "ORDER BY id DESC LIMIT ?",
        [project, since, max_events],
    ).fetchall()
    events = [event_dict(dict(zip(EVENT_COLUMNS, r))) for r in reversed(rows)]
    return {
        "project": project,
        "checkpoint": checkpoint,
        "events_since_checkpoint": total,
        "events": events,
        "events_omitted": total - len(events),
        "chain": verify_chain(conn).to_dict(),
    }
