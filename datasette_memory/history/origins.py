"""Each origin's chain, as this file holds it: ``verify`` reports them one by one.

This machine's own chain is the ledger (checked by ``verify``'s ledger chain);
another machine's is the run of its events in ``memory_sync_events``, clock 1
onwards, each linked to the one before by its previous hash, each whole one's
digests and hash recomputed. An opaque event is a link whose contents stayed
on a machine that did not share them: its hash is taken as sent, and the next
event must name it.
"""

import sqlite3
from typing import Any

from ..core import redacted
from ..core.ledger import EVENT_COLUMNS, event_problem
from ..core.log_heads import GENESIS_HASH, file_machine

COLUMNS = [c for c in EVENT_COLUMNS if c != "id"] + ["opaque"]


def origin_chains(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """
    Every origin whose events this file holds: ``{machine, own, events, opaque, head_clock, head_hash, ok, problem}``.

    :param conn: a connection (read-only is enough)
    """
    own = file_machine(conn)
    count, clock, head = conn.execute(
        "SELECT count(*), max(clock), (SELECT hash FROM events WHERE machine = ? ORDER BY clock DESC LIMIT 1) "
        "FROM events WHERE machine = ?", [own, own]
    ).fetchone()
    found = [{"machine": own, "own": True, "events": count, "opaque": 0, "head_clock": clock or 0,
              "head_hash": head or GENESIS_HASH, "ok": True, "problem": None}]
    current: dict[str, Any] | None = None
    allowed = redacted.accepted(conn)
    for values in conn.execute(f"SELECT {', '.join(COLUMNS)} FROM memory_sync_events ORDER BY machine, clock"):
        event = dict(zip(COLUMNS, values))
        if current is None or current["machine"] != event["machine"]:
            current = {"machine": event["machine"], "own": False, "events": 0, "opaque": 0, "head_clock": 0,
                       "head_hash": GENESIS_HASH, "ok": True, "problem": None}
            found.append(current)
        if current["ok"]:
            follow(current, event, allowed)
    return found


def follow(chain: dict[str, Any], event: dict[str, Any], allowed: frozenset[str] = frozenset()) -> None:
    "Extend ``chain`` with ``event``, or mark where it breaks."
    problem: str | None
    if event["clock"] != chain["head_clock"] + 1:
        problem = f"event {chain['head_clock'] + 1} is missing (the next held is {event['clock']})"
    elif event["opaque"]:
        problem = None if event["prev_hash"] == chain["head_hash"] else "its prev_hash does not match the event before it"
    else:
        problem = event_problem({**event, "id": None}, chain["head_hash"], allowed)
    if problem:
        chain.update(ok=False, problem=f"event {event['clock']}: {problem}")
        return
    chain.update(events=chain["events"] + 1, opaque=chain["opaque"] + bool(event["opaque"]),
                 head_clock=event["clock"], head_hash=event["hash"])


def summary(chain: dict[str, Any]) -> str:
    "One origin in one line."
    who = "this machine" if chain["own"] else f"machine {chain['machine']}"
    if not chain["ok"]:
        return f"{who}: broken after {chain['events']} events at {chain['problem']}"
    held = f"{chain['events']} events" + (f" ({chain['opaque']} opaque)" if chain["opaque"] else "")
    return f"{who}: {held}, head {chain['head_clock']} {chain['head_hash'][:12]}"
