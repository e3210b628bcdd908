"""A bundle: a file of ledger events for machines that never meet a hub.

A bundle is a small SQLite file (one table of events keyed on their origin, in
the form they travel in), so two laptops can pass one file back and forth:
``sync`` with a bundle takes the events it holds and writes back the union, in
one transaction (the file is whole before and after). It holds what the
machines that wrote it share, and opaque links of the rest of their chains.
"""

import pathlib
import sqlite3
from typing import Any

from ..memory import Memory
from ..core import redacted
from ..core.ledger import canonical
from .events import NO_END, WIRE_FIELDS, SyncRefused, holdings, opaque, redactions_travel
from .exchange import SyncReport, apply_pending, record_peer, take, to_send
from .shared import shared_projects

FORMAT = "datasette-memory sync bundle 1"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS bundle_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bundle_events (
    {', '.join(f'{field} {"INTEGER NOT NULL" if field == "clock" else "TEXT"}' for field in WIRE_FIELDS)},
    opaque INTEGER NOT NULL,
    PRIMARY KEY (machine, clock)
);
"""


def open_bundle(path: pathlib.Path, creating: bool) -> sqlite3.Connection:
    """
    Open the bundle at ``path``: a new one (``creating``) or one that exists.

    :raises SyncRefused: if a new one's path is taken, an old one is missing, or the file is not a bundle
    """
    if creating and path.exists():
        raise SyncRefused(f"{path} exists already; sync with it (datasette-memory sync {path}) or give a new path")
    if not creating and not path.is_file():
        raise SyncRefused(f"{path}: no such bundle; make one with datasette-memory bundle {path} (nothing was changed)")
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = DELETE")  # one file to carry: no -wal beside it
        conn.execute("PRAGMA secure_delete = ON")  # a row replaced (made whole, or redacted) leaves no old text in a free page
        if creating:
            conn.executescript(f"BEGIN; {SCHEMA} INSERT INTO bundle_meta VALUES ('format', '{FORMAT}'); COMMIT;")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        conn.close()
        raise SyncRefused(f"{path} is not a sync bundle ({e}); nothing was changed")
    if "events" in tables:
        conn.close()
        raise SyncRefused(f"{path} is a memory file, not a bundle: make a bundle from it with "
                          f"datasette-memory bundle --db {path} BUNDLE, or sync with its hub; nothing was changed")
    row = conn.execute("SELECT value FROM bundle_meta WHERE key = 'format'").fetchone() if "bundle_meta" in tables else None
    if row is None or row[0] != FORMAT:
        conn.close()
        raise SyncRefused(f"{path} is not a sync bundle of this version (format {row[0] if row else 'missing'}); nothing was changed")
    return conn


def bundle_events(bundle: sqlite3.Connection, held: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """
    The events of the bundle a file holding ``held`` lacks (or holds only opaque where the bundle holds them
    whole), and of each origin the one at the newest clock both hold: a chain whose newest common event
    agrees agrees all the way back, so comparing it finds a fork without reading the rest.

    :param held: the file's :func:`~.events.holdings`
    """
    events = []
    select = f"SELECT {', '.join(WIRE_FIELDS)}, opaque FROM bundle_events WHERE machine = ? AND clock BETWEEN ? AND ?"
    for (machine,) in bundle.execute("SELECT DISTINCT machine FROM bundle_events").fetchall():
        mine = held.get(machine, {"clock": 0, "opaque": []})
        rows = bundle.execute(f"{select} ORDER BY clock DESC LIMIT 1", [machine, 1, mine["clock"]]).fetchall()
        for first, last in mine["opaque"]:
            rows += bundle.execute(f"{select} AND opaque = 0 ORDER BY clock", [machine, first, last]).fetchall()
        rows += bundle.execute(f"{select} ORDER BY clock", [machine, mine["clock"] + 1, NO_END]).fetchall()
        for *values, is_opaque in rows:
            event = dict(zip(WIRE_FIELDS, values))
            events.append(opaque(event) if is_opaque else event)
    return events


def bundle_holdings(bundle: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    "What the bundle holds of each origin, in the shape of :func:`~.events.holdings`."
    held: dict[str, dict[str, Any]] = {}
    for machine, clock in bundle.execute("SELECT machine, max(clock) FROM bundle_events GROUP BY machine"):
        runs = bundle.execute(
            "SELECT min(clock), max(clock) FROM (SELECT clock, clock - row_number() OVER (ORDER BY clock) AS run "
            "FROM bundle_events WHERE machine = ? AND opaque = 1) GROUP BY run ORDER BY 1", [machine]
        ).fetchall()
        held[machine] = {"clock": clock, "opaque": [list(run) for run in runs]}
    return held


def write_events(bundle: sqlite3.Connection, events: list[dict[str, Any]]) -> None:
    "Add ``events`` to the bundle in one transaction (a whole event replaces its opaque link)."
    columns = WIRE_FIELDS + ("opaque",)
    rows = [[event.get(field) for field in WIRE_FIELDS] + [bool(event.get("opaque"))] for event in events]
    bundle.execute("BEGIN IMMEDIATE")
    try:
        bundle.executemany(
            f"INSERT OR REPLACE INTO bundle_events ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
        )
        bundle.execute("COMMIT")
    except BaseException:
        bundle.execute("ROLLBACK")
        raise


def redact_held(bundle: sqlite3.Connection, by_project: dict[str, redacted.Resolver]) -> int:
    """
    Rewrite the bundle's copies of events holding a text a redaction removed (the
    bundle held them before the redaction reached it), then the file, so no page
    of it keeps the text.

    :param by_project: the redactions the memory file holds, resolved by project
    :return: how many events were rewritten
    """
    changed = []
    for project, resolver in by_project.items():
        rows = bundle.execute(
            "SELECT machine, clock, kind, old, new FROM bundle_events WHERE project = ? AND opaque = 0", [project]
        ).fetchall()
        for machine, clock, kind, old, new in rows:
            values = [redacted.redacted_text(value, resolver, canonical, kind) for value in (old, new)]
            if values != [None, None]:
                changed.append([values[0] or old, values[1] or new, machine, clock])
    if changed:
        bundle.execute("BEGIN IMMEDIATE")
        try:
            bundle.executemany("UPDATE bundle_events SET old = ?, new = ? WHERE machine = ? AND clock = ?", changed)
            bundle.execute("COMMIT")
        except BaseException:
            bundle.execute("ROLLBACK")
            raise
        bundle.execute("VACUUM")
    return len(changed)


def make_bundle(memory: Memory, path: pathlib.Path, only: str | None = None) -> int:
    """
    Write a new bundle at ``path`` holding what this file shares (and opaque links of the rest).

    :return: how many events it holds
    """
    bundle = open_bundle(path, creating=True)
    try:
        events = to_send(memory.conn, {}, only)
        write_events(bundle, events)
    except BaseException:
        bundle.close()
        path.unlink(missing_ok=True)
        raise
    bundle.close()
    return len(events)


def sync_bundle(memory: Memory, path: pathlib.Path, only: str | None = None) -> SyncReport:
    """
    Take the events the bundle at ``path`` holds, apply them, and write the union back to it.

    :param only: apply and send whole only this project's events
    """
    bundle = open_bundle(path, creating=False)
    peer = f"bundle {path.name}"
    try:
        received = take(memory, bundle_events(bundle, holdings(memory.conn)), peer)
        report = apply_pending(memory, peer, only)
        report.received = received
        sending = to_send(memory.conn, bundle_holdings(bundle), only)
        write_events(bundle, sending)
        report.sent = len(sending)
        if redacted.any_held(memory.conn):
            travelling = redactions_travel(memory.conn, shared_projects(memory.conn))
            held = redacted.held_redactions(memory.conn)
            redact_held(bundle, redacted.resolvers({project: held[project] for project in held.keys() & travelling}))
    finally:
        bundle.close()
    record_peer(memory, report)
    return report

