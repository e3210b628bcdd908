"""The hash-chained, append-only ledger of every mutation, and checkpoints."""

import datetime
import hashlib
import json
import sqlite3
from dataclasses import dataclass

GENESIS_HASH = "0" * 64
HASHED_FIELDS = (
    "machine",
    "clock",
    "ts",
    "actor",
    "session",
    "project",
    "kind",
    "target",
    "old_digest",
    "new_digest",
    "prev_hash",
)
EVENT_COLUMNS = ("id",) + HASHED_FIELDS + ("old", "new", "hash")


def now() -> str:
    "The current UTC time as ISO 8601 with microseconds."
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def canonical(value) -> str:
    "The one serialization that hashes are computed over."
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(text):
    "sha256 of a stored value, or None for no value."
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_hash(event: dict) -> str:
    """
    The hash of one event: over its metadata, its values' digests (so redacting
    a value keeps the chain valid) and the previous event's hash.

    :param event: a mapping holding every name in ``HASHED_FIELDS``
    """
    return hashlib.sha256(
        canonical({field: event[field] for field in HASHED_FIELDS}).encode("utf-8")
    ).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who is making a change: recorded on every event."""

    actor: str = "local"
    session: str | None = None


def machine_id(conn: sqlite3.Connection) -> str:
    "This memory file's machine id, made when the file was created."
    return conn.execute(
        "SELECT value FROM memory_meta WHERE key = 'machine_id'"
    ).fetchone()[0]


def head(conn: sqlite3.Connection):
    "The newest event as ``(id, hash)``, or ``(None, GENESIS_HASH)``."
    row = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return row if row else (None, GENESIS_HASH)


def append_event(conn, caller: Caller, project: str, kind: str, target: str, old=None, new=None) -> dict:
    """
    Append one event to the ledger. Call inside the transaction making the change.

    :param conn: a connection inside an IMMEDIATE transaction
    :param caller: who made the change
    :param project: the project scope of the change
    :param kind: what happened, such as ``create_entity``
    :param target: what it happened to, such as an entity name
    :param old: the value before, JSON-serializable, or None
    :param new: the value after, JSON-serializable, or None
    """
    machine = machine_id(conn)
    clock = conn.execute(
        "SELECT coalesce(max(clock), 0) + 1 FROM events WHERE machine = ?", [machine]
    ).fetchone()[0]
    old_text = None if old is None else canonical(old)
    new_text = None if new is None else canonical(new)
    event = {
        "machine": machine,
        "clock": clock,
        "ts": now(),
        "actor": caller.actor,
        "session": caller.session,
        "project": project,
        "kind": kind,
        "target": target,
        "old": old_text,
        "new": new_text,
        "old_digest": digest(old_text),
        "new_digest": digest(new_text),
        "prev_hash": head(conn)[1],
    }
    event["hash"] = event_hash(event)
    columns = list(event)
    cursor = conn.execute(
        f"INSERT INTO events ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
        [event[c] for c in columns],
    )
    event["id"] = cursor.lastrowid
    return event


@dataclass
class ChainStatus:
    """The result of :func:`verify_chain`."""

    ok: bool
    events: int
    head_hash: str
    broken_event_id: int | None = None
    problem: str | None = None

    def summary(self) -> str:
        "One line for people."
        if self.ok:
            return f"ledger intact: {self.events} events, head {self.head_hash[:12]}"
        return f"ledger broken at event {self.broken_event_id}: {self.problem}"

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "events": self.events,
            "head_hash": self.head_hash,
            "broken_event_id": self.broken_event_id,
            "problem": self.problem,
            "summary": self.summary(),
        }


def verify_chain(conn: sqlite3.Connection) -> ChainStatus:
    """
    Walk the ledger in order and report the first event that was edited,
    deleted, reordered or inserted out of turn.

    :param conn: an open connection
    """
    prev_hash = GENESIS_HASH
    count = 0
    rows = conn.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY id")
    for values in rows:
        event = dict(zip(EVENT_COLUMNS, values))
        problem = event_problem(event, prev_hash)
        if problem:
            return ChainStatus(False, count, prev_hash, event["id"], problem)
        prev_hash = event["hash"]
        count += 1
    return ChainStatus(True, count, prev_hash)


def event_problem(event: dict, prev_hash: str):
    "Why ``event`` does not follow ``prev_hash``, or None if it does."
    if event["prev_hash"] != prev_hash:
        return "its prev_hash does not match the previous event (an event was deleted, inserted or reordered)"
    for side in ("old", "new"):
        if event[side] is not None and digest(event[side]) != event[f"{side}_digest"]:
            return f"its {side} value does not match its digest (the value was edited)"
    if event_hash(event) != event["hash"]:
        return "its hash does not match its contents (the event was edited)"
    return None


def add_checkpoint(conn, caller: Caller, project: str, summary: str) -> dict:
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


def event_dict(event: dict) -> dict:
    "An event as callers see it: values decoded, digests left out."
    decoded = {k: event[k] for k in ("id", "machine", "clock", "ts", "actor", "session", "project", "kind", "target", "hash")}
    decoded["old"] = None if event["old"] is None else json.loads(event["old"])
    decoded["new"] = None if event["new"] is None else json.loads(event["new"])
    return decoded


def resume_context(conn, project: str, max_events: int = 50) -> dict:
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
