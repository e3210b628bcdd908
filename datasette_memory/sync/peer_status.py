"""What the sync page shows: this machine, its shared projects, each peer's last sync and what waits to go out,
each origin's chain, and the events other machines sent, newest first, each with its origin."""

import json
import sqlite3
from typing import Any

from ..core.log_heads import file_machine
from ..history.origins import origin_chains, summary
from .events import SYNCED_KINDS
from .shared import shared_projects

RECENT = 100


def waiting_since(conn: sqlite3.Connection, shared: set[str], since: str | None) -> int:
    "This machine's own events of shared projects, of kinds that sync, made after ``since`` (all if None): not yet sent there."
    return conn.execute(
        "SELECT count(*) FROM events WHERE machine = ? AND ts > ? AND project IN (SELECT value FROM json_each(?)) "
        "AND kind IN (SELECT value FROM json_each(?)) AND id NOT IN (SELECT event_id FROM memory_sync_derived)",
        [file_machine(conn), since or "", json.dumps(sorted(shared), ensure_ascii=False), json.dumps(sorted(SYNCED_KINDS))],
    ).fetchone()[0]


def sync_status(conn: sqlite3.Connection, limit: int = RECENT) -> dict[str, Any]:
    """
    The sync page's data: ``{machine, shared, peers, waiting, origins, received, echoes}``.

    :param limit: most foreign events listed
    """
    shared = shared_projects(conn)
    peers = [dict(zip(("peer", "synced_at", "sent", "received", "applied"), row)) for row in conn.execute(
        "SELECT peer, synced_at, sent, received, applied FROM memory_sync_peers ORDER BY synced_at DESC")]
    for peer in peers:
        peer["waiting"] = waiting_since(conn, shared, peer["synced_at"])
    columns = ("machine", "clock", "ts", "actor", "project", "kind", "target", "opaque", "received_at", "received_from")
    received = [dict(zip(columns, row)) for row in conn.execute(
        f"SELECT {', '.join(columns)} FROM memory_sync_events ORDER BY received_at DESC, machine, clock DESC LIMIT ?", [limit])]
    chains = origin_chains(conn)
    return {
        "machine": file_machine(conn),
        "shared": sorted(shared),
        "peers": peers,
        "waiting": waiting_since(conn, shared, None) if not peers else min(peer["waiting"] for peer in peers),
        "origins": [{**chain, "summary": summary(chain)} for chain in chains],
        "received": received,
        "echoes": conn.execute("SELECT count(*) FROM memory_sync_derived").fetchone()[0],
    }
