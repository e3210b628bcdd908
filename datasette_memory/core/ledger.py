"""The hash-chained, append-only ledger of every mutation.

Each event holds who, where (machine and a per-machine logical clock), what,
the old and new value, and a sha256 over a canonical serialization that
includes the previous event's hash. Values enter the hash by digest, so a later
redaction can clear a value and keep the chain valid.
"""

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import plugins, redacted, witness
from .clock import now
from .log_heads import GENESIS_HASH
from .log_heads import file_machine as machine_id  # noqa: F401 (the file's machine id, as events record it: read here by others)

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
# The kinds memory records for its own changes and a person's acts. A note an
# agent appends may not take one: it would be replayed as a change, taken for a
# checkpoint or passed off as a person's acknowledgement.
RECORDED_KINDS = frozenset({
    "create_entity", "add_observation", "delete_observation", "update_observation", "delete_entity",
    "create_relation", "delete_relation", "rename_entity", "merge_entity", "checkpoint",
    "propose_claim", "add_claim_evidence", "approve_claim", "reject_claim", "reopen_claim",
    "record_fact", "supersede_fact", "invalidate_fact", "revalidate_fact", witness.ACKNOWLEDGE_KIND, redacted.KIND,
})


CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Any) -> str:
    "The one serialization that hashes are computed over."
    return CANONICAL.encode(value)


def digest(text: str | None) -> str | None:
    "sha256 of a stored value, or None for no value."
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chained_hash(record: dict[str, Any], prev_hash: str) -> str:
    """
    The hash of a row of an append-only log chained like the ledger (the SQL
    audit log): over its fields and the previous row's hash.

    :param record: the row's fields, without ``id``, ``prev_hash`` and ``hash``
    :param prev_hash: the previous row's hash, or ``GENESIS_HASH``
    """
    return hashlib.sha256(canonical({**record, "prev_hash": prev_hash}).encode("utf-8")).hexdigest()


def event_hash(event: dict[str, Any]) -> str:
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


def head(conn: sqlite3.Connection) -> tuple[int | None, str]:
    "The newest event as ``(id, hash)``, or ``(None, GENESIS_HASH)``."
    row = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return row if row else (None, GENESIS_HASH)


# The file's machine id, its next clock and the head's hash, in one statement (each
# an indexed lookup): what an event is chained to
NEXT_EVENT = f"""
    SELECT m.value, (SELECT coalesce(max(clock), 0) + 1 FROM events WHERE machine = m.value),
        coalesce((SELECT hash FROM events ORDER BY id DESC LIMIT 1), '{GENESIS_HASH}')
    FROM memory_meta m WHERE m.key = 'machine_id'
"""


INSERTED_COLUMNS = HASHED_FIELDS + ("old", "new", "hash")
INSERT_EVENT = f"INSERT INTO events ({', '.join(INSERTED_COLUMNS)}) VALUES ({', '.join(':' + c for c in INSERTED_COLUMNS)})"


@dataclass(frozen=True)
class Change:
    """
    One change for the ledger, as :func:`append_events` takes it.

    :param kind: what happened, such as ``create_entity``
    :param target: what it happened to, such as an entity name
    :param old: the value before, JSON-serializable, or None
    :param new: the value after, JSON-serializable, or None
    :param ts: the change's time, when the rows it wrote carry one; default now
    """

    kind: str
    target: str
    old: Any = None
    new: Any = None
    ts: str | None = None


def append_event(
    conn: sqlite3.Connection, caller: Caller, project: str, kind: str, target: str, old: Any = None, new: Any = None,
    ts: str | None = None,
) -> dict[str, Any]:
    """
    Append one event to the ledger. Call inside the transaction making the change.

    :param conn: a connection inside an IMMEDIATE transaction
    :param caller: who made the change
    :param project: the project scope of the change
    :param kind: what happened, such as ``create_entity``
    :param target: what it happened to, such as an entity name
    :param old: the value before, JSON-serializable, or None
    :param new: the value after, JSON-serializable, or None
    :param ts: the change's time, when the rows it wrote carry one (so replay
        rebuilds them exactly); default now
    """
    return append_events(conn, caller, project, [Change(kind, target, old, new, ts)])[0]


def append_events(conn: sqlite3.Connection, caller: Caller, project: str, changes: Sequence[Change]) -> list[dict[str, Any]]:
    """
    Append an event for each change, in order, with one prepared INSERT: the rows are
    those one :func:`append_event` per change would write (each takes the next clock and
    is chained to the one before it), computed here from one look at the head instead of
    one per event. Call inside the transaction making the changes.

    :param conn: a connection inside an IMMEDIATE transaction
    :param caller: who made the changes
    :param project: the project scope of the changes
    :param changes: the changes, in the order they happened
    :return: the events appended, with their ids
    """
    if not changes:
        return []
    machine, clock, prev_hash = conn.execute(NEXT_EVENT).fetchone()
    events: list[dict[str, Any]] = []
    for change in changes:
        event = new_event(machine, clock + len(events), prev_hash, caller, project, change)
        prev_hash = event["hash"]
        events.append(event)
    if len(events) == 1:
        events[0]["id"] = conn.execute(INSERT_EVENT, events[0]).lastrowid
    else:
        conn.executemany(INSERT_EVENT, events)
        # a row inserted without an id gets one past the largest, so the batch's ids run up to the last one
        first = conn.execute("SELECT last_insert_rowid()").fetchone()[0] - len(events) + 1
        for offset, event in enumerate(events):
            event["id"] = first + offset
    witness.appended(conn, "events", events[-1]["id"], events[-1]["hash"], machine)
    for event in events:
        plugins.appended(conn, dict(event))
    return events


def new_event(machine: str, clock: int, prev_hash: str, caller: Caller, project: str, change: Change) -> dict[str, Any]:
    "The row of ``change``'s event at ``clock``, chained to ``prev_hash``, without its id."
    old_text = None if change.old is None else canonical(change.old)
    new_text = None if change.new is None else canonical(change.new)
    event = {
        "machine": machine,
        "clock": clock,
        "ts": change.ts or now(),
        "actor": caller.actor,
        "session": caller.session,
        "project": project,
        "kind": change.kind,
        "target": change.target,
        "old": old_text,
        "new": new_text,
        "old_digest": digest(old_text),
        "new_digest": digest(new_text),
        "prev_hash": prev_hash,
    }
    event["hash"] = event_hash(event)
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

    def to_dict(self) -> dict[str, Any]:
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
    allowed = redacted.accepted(conn)
    rows = conn.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY id")
    for values in rows:
        event = dict(zip(EVENT_COLUMNS, values))
        problem = event_problem(event, prev_hash, allowed)
        if problem:
            return ChainStatus(False, count, prev_hash, event["id"], problem)
        prev_hash = event["hash"]
        count += 1
    return ChainStatus(True, count, prev_hash)


def event_problem(event: dict[str, Any], prev_hash: str, redactions: frozenset[str] = frozenset()) -> str | None:
    """
    Why ``event`` does not follow ``prev_hash``, or None if it does.

    :param redactions: the strings the redactions a file holds put in place
        (:func:`.redacted.accepted`): a value holding one may differ from its digest
    """
    if event["prev_hash"] != prev_hash:
        return "its prev_hash does not match the previous event (an event was deleted, inserted or reordered)"
    for side in ("old", "new"):
        value = event[side]
        if value is not None and digest(value) != event[f"{side}_digest"] and not redacted.holds_redaction(value, redactions):
            return f"its {side} value does not match its digest (the value was edited)"
    if event_hash(event) != event["hash"]:
        return "its hash does not match its contents (the event was edited)"
    return None


def event_dict(event: dict[str, Any]) -> dict[str, Any]:
    "An event as callers see it: values decoded, digests left out."
    decoded = {k: event[k] for k in ("id", "machine", "clock", "ts", "actor", "session", "project", "kind", "target", "hash")}
    decoded["old"] = None if event["old"] is None else json.loads(event["old"])
    decoded["new"] = None if event["new"] is None else json.loads(event["new"])
    return decoded
