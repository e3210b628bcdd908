"""One sync: take what a peer sent, apply it, and say what it lacks.

The same steps serve a bundle file and a hub: :func:`take` holds a peer's events
(checked, in one write transaction) and marks their projects pending; :func:`apply_pending`
converges each pending project that is shared here; :func:`to_send` lists what
the peer lacks. Taking the same events again changes nothing.
"""

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import redacted
from ..core.clock import now
from ..core.ledger import Caller
from ..history import redaction
from ..memory import Memory
from .converge import converge
from .events import FACT_SYNCED, GRAPH_SYNCED, outgoing, receive
from .shared import shared_projects


@dataclass
class SyncReport:
    """What one sync did."""

    peer: str
    received: int = 0
    sent: int = 0
    applied: int = 0
    projects: list[str] = field(default_factory=list)
    # projects whose foreign events are held but not applied here: not shared on this machine
    waiting: list[str] = field(default_factory=list)

    def summary(self) -> str:
        "One line for people."
        line = (f"synced with {self.peer}: {self.received} events received, {self.sent} sent, "
                f"{self.applied} local changes applied")
        if self.projects:
            line += f" (projects: {', '.join(self.projects)})"
        if self.waiting:
            line += (f"; held but not applied, as they are not shared here: {', '.join(self.waiting)} "
                     "(datasette-memory share PROJECT applies them)")
        return line

    def to_dict(self) -> dict[str, Any]:
        return {"peer": self.peer, "received": self.received, "sent": self.sent, "applied": self.applied,
                "projects": self.projects, "waiting": self.waiting, "summary": self.summary()}


def sync_caller(memory: Memory, peer: str) -> Memory:
    "The memory a sync writes through: actor ``sync``, a session naming the peer, text already accepted where it was written."
    return Memory(memory.conn, project=memory.project, actor="sync", session=f"sync with {peer}", allow_secrets=True,
                  config=memory.config)


def take(memory: Memory, items: Iterable[Any], peer: str) -> int:
    """
    Hold the events a peer sent (one write transaction; nothing if any is refused) and
    mark their projects pending.

    :return: how many events were newly held or made whole
    """

    def hold(conn: sqlite3.Connection, caller: Caller, project: str) -> list[dict[str, Any]]:
        taken = receive(conn, items, peer)
        projects = sorted({event["project"] for event in taken if not event["opaque"] and event["kind"] in GRAPH_SYNCED | FACT_SYNCED})
        conn.executemany("INSERT OR IGNORE INTO memory_sync_pending (project) VALUES (?)", [[p] for p in projects])
        return taken

    taken = sync_caller(memory, peer).scope.write(hold)
    redactions = [event for event in taken if event["kind"] == redacted.KIND and not event["opaque"]]
    if redactions:
        # a redaction arrived and was applied: its text leaves the vectors and every free page too
        for project in sorted({event["project"] for event in redactions}):
            names = sorted({name for name, in memory.conn.execute(
                "SELECT e.name FROM entities e JOIN observations o ON o.entity_id = e.id "
                "WHERE e.project = ? AND instr(o.content, '[redacted ')", [project])})
            redaction.re_embed(memory.conn, project, names)
        redaction.purge(memory.conn)
    return len(taken)


def apply_pending(memory: Memory, peer: str, only: str | None = None) -> SyncReport:
    """
    Converge every pending project shared here (only ``only``, if given), each in a write transaction of its own.

    :return: the report's applied, projects and waiting
    """
    report = SyncReport(peer)
    writer = sync_caller(memory, peer)
    shared = shared_projects(memory.conn)
    pending = [row[0] for row in memory.conn.execute("SELECT project FROM memory_sync_pending ORDER BY project")]
    for project in pending:
        if project not in shared:
            report.waiting.append(project)
        elif only is None or project == only:
            report.applied += writer.scope.write(lambda conn, caller, _, p=project: converge(conn, caller, p))
            report.projects.append(project)
    return report


def to_send(conn: sqlite3.Connection, their: dict[str, dict[str, Any]], only: str | None = None) -> list[dict[str, Any]]:
    "What a peer holding ``their`` lacks: this machine's shared projects whole (only ``only``, if given), the rest opaque."
    shared = shared_projects(conn)
    return list(outgoing(conn, their, shared if only is None else shared & {only}))


def record_peer(memory: Memory, report: SyncReport) -> None:
    "Remember when this peer last synced and what moved."

    def record(conn: sqlite3.Connection, caller: Caller, project: str) -> None:
        conn.execute(
            "INSERT INTO memory_sync_peers (peer, synced_at, sent, received, applied) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (peer) DO UPDATE SET synced_at = excluded.synced_at, sent = excluded.sent, "
            "received = excluded.received, applied = excluded.applied",
            [report.peer, now(), report.sent, report.received, report.applied],
        )

    memory.scope.write(record)
