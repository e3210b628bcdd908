"""Events on the wire: what a peer holds of each origin, what it sends, and how it takes what it is sent.

An event travels as its ledger row without its local id: every hashed field, its
old and new values, its hash. An event of a project that is not shared (or of a
kind that does not sync, or a local echo of a foreign event) travels opaque:
its origin, its clock, its previous hash and its hash, nothing else, so each
origin's chain can be followed link by link on every peer while the text stays
home. A peer takes an origin's events only as a continuation of what it holds
of that origin's chain, each whole event's digests and hash recomputed; a second,
different event at a held (machine, clock) is a fork and refuses the whole sync.
"""

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from ..core import redacted
from ..core.clock import now
from ..core.errors import MemoryStoreError
from ..core.ledger import HASHED_FIELDS, canonical, digest, event_problem
from ..core.log_heads import GENESIS_HASH, file_machine
from ..history import redaction
from ..history.replay import GRAPH_KINDS

# The kinds whose events sync: the graph's, applied by replay on every peer, and a claim's proposal
# and the reviews that reject or reopen it, so a rejection blocks the value on every peer (approval,
# a person's act where it was made, does not travel)
GRAPH_SYNCED = frozenset(GRAPH_KINDS)
CLAIM_SYNCED = frozenset({"propose_claim", "reject_claim", "reopen_claim"})
# a fact and each change to its validity; their echoes travel whole too (see sync/fact_sync.py)
FACT_SYNCED = frozenset({"record_fact", "supersede_fact", "invalidate_fact", "revalidate_fact"})
# a person's redaction, applied by every peer it reaches (see history/redaction.py)
REDACTION_SYNCED = frozenset({redacted.KIND})
SYNCED_KINDS = GRAPH_SYNCED | CLAIM_SYNCED | FACT_SYNCED | REDACTION_SYNCED
WIRE_FIELDS = HASHED_FIELDS + ("old", "new", "hash")
OPAQUE_FIELDS = ("machine", "clock", "prev_hash", "hash")
NO_END = 2**62  # a clock past every clock, for a range with no end
HASH_PATTERN = re.compile(r"^[0-9a-f]{64}$")
STORED_COLUMNS = WIRE_FIELDS + ("opaque", "received_at", "received_from")
INSERT_FOREIGN = (
    f"INSERT INTO memory_sync_events ({', '.join(STORED_COLUMNS)}) VALUES ({', '.join(':' + c for c in STORED_COLUMNS)})"
)


class SyncRefused(MemoryStoreError):
    """A peer sent what cannot be taken (a fork, a broken chain, a malformed event); nothing was changed."""


def graph_kinds_sql() -> str:
    "The graph's synced kinds, as an SQL list."
    return ", ".join(f"'{kind}'" for kind in sorted(GRAPH_SYNCED))


def holdings(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """
    What this file holds of each origin's chain: ``{machine: {clock, opaque}}``, the
    newest clock held and the runs of clocks held only opaque (``[[first, last], ...]``).
    """
    held: dict[str, dict[str, Any]] = {}
    own = file_machine(conn)
    newest = conn.execute("SELECT max(clock) FROM events WHERE machine = ?", [own]).fetchone()[0]
    if newest:
        held[own] = {"clock": newest, "opaque": []}
    for machine, clock in conn.execute("SELECT machine, max(clock) FROM memory_sync_events GROUP BY machine"):
        held[machine] = {"clock": clock, "opaque": opaque_runs(conn, machine)}
    return held


def opaque_runs(conn: sqlite3.Connection, machine: str) -> list[list[int]]:
    "The runs of consecutive clocks of ``machine`` held only opaque."
    return [list(row) for row in conn.execute(
        "SELECT min(clock), max(clock) FROM (SELECT clock, clock - row_number() OVER (ORDER BY clock) AS run "
        "FROM memory_sync_events WHERE machine = ? AND opaque = 1) GROUP BY run ORDER BY 1",
        [machine],
    )]


def outgoing(conn: sqlite3.Connection, their: dict[str, dict[str, Any]], shared: set[str]) -> Iterator[dict[str, Any]]:
    """
    The events a peer holding ``their`` lacks (or holds only opaque where this file holds them whole).

    :param their: the peer's :func:`holdings`
    :param shared: the projects of this machine's own events that go out whole
    """
    own = file_machine(conn)
    mine = their.get(own, {"clock": 0, "opaque": []})
    for first, last in [*mine["opaque"], [mine["clock"] + 1, None]]:
        yield from own_events(conn, own, first, last, shared, whole_only=last is not None)
    travelling = redactions_travel(conn, shared)
    for (machine,) in conn.execute("SELECT DISTINCT machine FROM memory_sync_events ORDER BY machine").fetchall():
        theirs = their.get(machine, {"clock": 0, "opaque": []})
        for first, last in theirs["opaque"]:
            yield from held_events(conn, machine, first, last, whole_only=True, travelling=travelling)
        yield from held_events(conn, machine, theirs["clock"] + 1, None, whole_only=False, travelling=travelling)


def own_events(conn: sqlite3.Connection, machine: str, first: int, last: int | None, shared: set[str],
               whole_only: bool) -> Iterator[dict[str, Any]]:
    "This machine's events from clock ``first`` to ``last`` (None: the newest): whole where shared, else opaque."
    rows = conn.execute(
        f"SELECT {', '.join('e.' + f for f in WIRE_FIELDS)}, d.event_id IS NOT NULL FROM events e "
        "LEFT JOIN memory_sync_derived d ON d.event_id = e.id "
        "WHERE e.machine = ? AND e.clock BETWEEN ? AND ? "
        # whole ones only: those of a shared project, of a kind that syncs, not an echo (but a fact's)
        "AND (NOT ? OR (e.project IN (SELECT value FROM json_each(?)) AND e.kind IN (SELECT value FROM json_each(?)) "
        "AND (d.event_id IS NULL OR e.kind IN (SELECT value FROM json_each(?))))) ORDER BY e.clock",
        [machine, first, NO_END if last is None else last, whole_only, json.dumps(sorted(shared), ensure_ascii=False),
         json.dumps(sorted(SYNCED_KINDS)), json.dumps(sorted(FACT_SYNCED))],
    )
    for *values, derived in rows:
        event = dict(zip(WIRE_FIELDS, values))
        if (not derived or event["kind"] in FACT_SYNCED) and event["project"] in shared and event["kind"] in SYNCED_KINDS:
            yield event
        elif not whole_only:
            yield opaque(event)


def redactions_travel(conn: sqlite3.Connection, shared: set[str]) -> set[str]:
    """
    The projects whose redactions leave this machine: those shared here, and those another machine
    sent a redaction of (relayed as held). A held event redacted here goes out whole only in one of
    them; else opaque, as the redaction stays home, and a bundle's copies are left as they are.
    """
    return shared | {project for (project,) in conn.execute(
        "SELECT DISTINCT project FROM memory_sync_events WHERE kind = 'redact' AND opaque = 0")}


def held_events(conn: sqlite3.Connection, machine: str, first: int, last: int | None, whole_only: bool,
                travelling: set[str]) -> Iterator[dict[str, Any]]:
    """
    The events of another origin this file holds, from clock ``first`` to ``last`` (None: the newest), as held;
    one redacted here goes opaque unless its project is among ``travelling`` (its redaction goes out too).
    """
    rows = conn.execute(
        f"SELECT {', '.join(WIRE_FIELDS)}, opaque FROM memory_sync_events "
        "WHERE machine = ? AND clock BETWEEN ? AND ? AND (opaque = 0 OR ?) ORDER BY clock",
        [machine, first, NO_END if last is None else last, not whole_only],
    )
    for *values, is_opaque in rows:
        event = dict(zip(WIRE_FIELDS, values))
        if is_opaque or (event["project"] not in travelling and redacted_here(event)):
            if not whole_only:
                yield opaque(event)
        else:
            yield event


def redacted_here(event: dict[str, Any]) -> bool:
    "Whether a held event's values were redacted (they no longer match their digests)."
    return any(event[side] is not None and redacted.MARK_START in event[side] and digest(event[side]) != event[f"{side}_digest"]
               for side in ("old", "new"))


def opaque(event: dict[str, Any]) -> dict[str, Any]:
    "An event as it leaves a machine that does not share it: its place in its origin's chain and nothing else."
    return {**{field: event[field] for field in OPAQUE_FIELDS}, "opaque": True}


def checked(item: Any, position: int) -> dict[str, Any]:
    "One received event, its fields' types checked; :class:`SyncRefused` naming what is wrong."
    where = f"event {position} of what the peer sent"
    if not isinstance(item, dict):
        raise SyncRefused(f"{where} is not an object; the peer is not a datasette-memory sync peer")
    is_opaque = item.get("opaque") is True
    fields = OPAQUE_FIELDS if is_opaque else WIRE_FIELDS
    missing = [field for field in fields if field not in item]
    if missing:
        raise SyncRefused(f"{where} lacks {', '.join(missing)}; nothing was changed")
    if not isinstance(item["machine"], str) or not 0 < len(item["machine"]) <= 64:
        raise SyncRefused(f"{where}: machine must be a machine id (text of 1 to 64 characters); nothing was changed")
    if isinstance(item["clock"], bool) or not isinstance(item["clock"], int) or item["clock"] < 1:
        raise SyncRefused(f"{where}: clock must be a positive integer; nothing was changed")
    for field in ("prev_hash", "hash"):
        if not isinstance(item[field], str) or not HASH_PATTERN.match(item[field]):
            raise SyncRefused(f"{where}: {field} must be 64 lowercase hex digits; nothing was changed")
    event = {field: item.get(field) for field in WIRE_FIELDS}
    if not is_opaque:
        for field in ("ts", "actor", "project", "kind", "target"):
            if not isinstance(event[field], str):
                raise SyncRefused(f"{where}: {field} must be text; nothing was changed")
        for field in ("session", "old", "new", "old_digest", "new_digest"):
            if event[field] is not None and not isinstance(event[field], str):
                raise SyncRefused(f"{where}: {field} must be text or null; nothing was changed")
    event["opaque"] = is_opaque
    return event


def receive(conn: sqlite3.Connection, items: Iterable[Any], source: str) -> list[dict[str, Any]]:
    """
    Take the events a peer sent, inside the caller's write transaction: each origin's
    chain checked link by link, whole events' digests and hashes recomputed.

    :param items: the events as they came (decoded JSON)
    :param source: the peer, recorded with each event
    :raises SyncRefused: on a fork, a gap, a broken link or a malformed event (the caller rolls back)
    :return: the events newly held or made whole (the whole ones are applied afterwards by :mod:`.converge`)
    """
    by_machine: dict[str, list[dict[str, Any]]] = {}
    for position, item in enumerate(items, 1):
        event = checked(item, position)
        by_machine.setdefault(event["machine"], []).append(event)
    own = file_machine(conn)
    taken: list[dict[str, Any]] = []
    received_at = now()
    redactions = Redactions(conn, [event for events in by_machine.values() for event in events])
    for machine, events in by_machine.items():
        events.sort(key=lambda event: event["clock"])
        if machine == own:
            check_own(conn, events)
        else:
            taken += receive_origin(conn, machine, events, received_at, source, redactions)
    for project in sorted({event["project"] for event in taken if event["kind"] == redacted.KIND and not event["opaque"]}):
        redaction.apply(conn, project)
    return taken


class Redactions:
    """
    The redactions a peer knows while it takes a sync: those it holds and those the
    sync brings. A whole event arriving is checked against what they put in place
    (its value may be a redacted one), then held redacted by them, so a copy that
    still holds a redacted text never lands here, whenever and from whom it arrives.
    """

    def __init__(self, conn: sqlite3.Connection, arriving: list[dict[str, Any]]):
        by_project = redacted.held_redactions(conn) if redacted.any_held(conn) else {}
        for event in arriving:
            if event["kind"] == redacted.KIND and not event["opaque"]:
                by_project.setdefault(event["project"], []).append(
                    redacted.Redaction.of(event["ts"], event["machine"], event["clock"], event["new"]))
        self.resolvers = redacted.resolvers(by_project)
        self.accepted = redacted.accepted_strings(self.resolvers)

    def held(self, event: dict[str, Any]) -> dict[str, Any]:
        "``event`` as it is held here: its values with every text a redaction of its project removed replaced."
        resolver = self.resolvers.get(event["project"])
        if event["opaque"] or not resolver:
            return event
        values = {side: redacted.redacted_text(event[side], resolver, canonical, event["kind"]) for side in ("old", "new")}
        return {**event, **{side: value for side, value in values.items() if value is not None}}


def check_own(conn: sqlite3.Connection, events: list[dict[str, Any]]) -> None:
    "This file's own events coming back: each must be the one this file holds."
    for event in events:
        row = conn.execute("SELECT hash FROM events WHERE machine = ? AND clock = ?", [event["machine"], event["clock"]]).fetchone()
        if row is None:
            raise SyncRefused(
                f"the peer holds event {event['clock']} of this file's machine ({event['machine']}), which this file lacks: "
                "this file was rewound, or restored from an older copy, or another file shares its machine id; "
                "run datasette-memory verify, and sync from a file that is not a copy of another; nothing was changed"
            )
        if row[0] != event["hash"]:
            raise SyncRefused(fork_message(event, "this file's own ledger"))


def fork_message(event: dict[str, Any], holder: str) -> str:
    return (
        f"the peer's event {event['clock']} of machine {event['machine']} differs from the one {holder} holds: "
        "two files claim one machine id (a copied memory file) or one of them was rewritten; run datasette-memory "
        "verify on both, and give a copied file a machine of its own before syncing it; nothing was changed"
    )


def receive_origin(conn: sqlite3.Connection, machine: str, events: list[dict[str, Any]], received_at: str,
                   source: str, redactions: "Redactions") -> list[dict[str, Any]]:
    "One other origin's events, in clock order: those held compared, new ones checked as the chain's continuation."
    head = conn.execute(
        "SELECT clock, hash FROM memory_sync_events WHERE machine = ? ORDER BY clock DESC LIMIT 1", [machine]
    ).fetchone() or (0, GENESIS_HASH)
    taken = []
    for event in events:
        if event["clock"] <= head[0]:
            if upgrade(conn, event, received_at, source, redactions):
                taken.append(event)
            continue
        if event["clock"] != head[0] + 1 or event["prev_hash"] != head[1]:
            raise SyncRefused(
                f"the peer's event {event['clock']} of machine {machine} does not follow the {head[0]} this file holds "
                f"of that machine (a gap or a broken link in its chain); nothing was changed"
            )
        whole_problem(event, redactions.accepted)
        conn.execute(INSERT_FOREIGN, {**redactions.held(event), "received_at": received_at, "received_from": source})
        head = (event["clock"], event["hash"])
        taken.append(event)
    return taken


def whole_problem(event: dict[str, Any], accepted: frozenset[str]) -> None:
    "Refuse a whole event whose values, digests and hash do not agree (a value a known redaction produced may differ)."
    if event["opaque"]:
        return
    problem = event_problem(event, event["prev_hash"], accepted)
    if problem:
        raise SyncRefused(f"the peer's event {event['clock']} of machine {event['machine']}: {problem}; nothing was changed")


def upgrade(conn: sqlite3.Connection, event: dict[str, Any], received_at: str, source: str, redactions: Redactions) -> bool:
    "An event already held: the same hash or a fork; held opaque and now whole, it becomes whole. True if it did."
    held = conn.execute(
        "SELECT hash, prev_hash, opaque FROM memory_sync_events WHERE machine = ? AND clock = ?", [event["machine"], event["clock"]]
    ).fetchone()
    if held[0] != event["hash"] or held[1] != event["prev_hash"]:
        raise SyncRefused(fork_message(event, "this file"))
    if not held[2] or event["opaque"]:
        return False
    whole_problem(event, redactions.accepted)
    assignments = ", ".join(f"{field} = :{field}" for field in WIRE_FIELDS if field not in OPAQUE_FIELDS)
    conn.execute(
        f"UPDATE memory_sync_events SET {assignments}, opaque = 0, received_at = :received_at, received_from = :received_from "
        "WHERE machine = :machine AND clock = :clock",
        {**redactions.held(event), "received_at": received_at, "received_from": source},
    )
    return True


def encode(events: Iterable[dict[str, Any]]) -> str:
    "Events as JSON lines (one event a line)."
    return "".join(json.dumps(event, ensure_ascii=False) + "\n" for event in events)
