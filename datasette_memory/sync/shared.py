"""Which projects leave the machine: only those a person shared (``datasette-memory share``)."""

import sqlite3

from ..core.clock import now
from ..core.database import write_transaction
from ..core.validation import check_project


def shared_projects(conn: sqlite3.Connection) -> set[str]:
    "The projects whose events sync; every other project's stay on this machine."
    return {row[0] for row in conn.execute("SELECT project FROM memory_sync_projects")}


def share(conn: sqlite3.Connection, project: str, actor: str) -> bool:
    """
    Mark ``project`` shared: its events leave the machine from the next sync on, its older ones too.

    :return: False if it was shared already
    """
    check_project(project)
    with write_transaction(conn):
        cursor = conn.execute(
            "INSERT OR IGNORE INTO memory_sync_projects (project, shared_at, shared_by) VALUES (?, ?, ?)",
            [project, now(), actor],
        )
    return bool(cursor.rowcount)


def unshare(conn: sqlite3.Connection, project: str) -> bool:
    """
    Keep ``project`` on this machine from now on (what went out before stays where it went).

    :return: False if it was not shared
    """
    check_project(project)
    with write_transaction(conn):
        cursor = conn.execute("DELETE FROM memory_sync_projects WHERE project = ?", [project])
    return bool(cursor.rowcount)
