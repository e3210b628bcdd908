"""Reads of one project's ledger by kind and session, for the coding agents' hooks.

A hook knows its agent's session id, and records the session's start and what the
agent did as events of its own kinds. These reads find such an event, and count
what else happened after one, walking the ``events_by_kind`` (project, kind, id)
and ``events_by_project`` (project, id) indexes from the newest end, so they cost
the same on a ledger of a million events. A count stops at ``cap``: a hook needs
to know whether something happened, and roughly how much, not the exact total.
"""

import sqlite3
from typing import Any

from .ledger import EVENT_COLUMNS, event_dict

COUNT_CAP = 1000


def event_of_kind(
    conn: sqlite3.Connection, project: str, kind: str, session: str | None = None, newest: bool = True
) -> dict[str, Any] | None:
    """
    The newest (or oldest) event of ``kind`` in ``project``, of ``session`` if given; None if there is none.

    :param conn: an open connection
    :param project: the project scope
    :param kind: the event kind, such as ``checkpoint``
    :param session: only events recorded in this session; None for any
    :param newest: the newest such event; False for the oldest
    """
    row = conn.execute(
        f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE project = ? AND kind = ? AND (? IS NULL OR session = ?) "
        f"ORDER BY id {'DESC' if newest else 'ASC'} LIMIT 1",
        [project, kind, session, session],
    ).fetchone()
    return event_dict(dict(zip(EVENT_COLUMNS, row))) if row else None


def count_after(
    conn: sqlite3.Connection, project: str, after_id: int, skip_kinds: tuple[str, ...] = (), cap: int = COUNT_CAP,
    in_sessions_only: bool = False,
) -> int:
    """
    How many events ``project`` recorded after event ``after_id``, leaving out ``skip_kinds``, counted up to ``cap``.

    :param conn: an open connection
    :param project: the project scope
    :param after_id: count the events after this one (0 for all)
    :param skip_kinds: kinds not counted
    :param cap: stop counting here
    :param in_sessions_only: count only events recorded in a session (an agent's: its MCP server's or its
        hooks'), leaving out what a person did in Datasette or a command run by hand, which have none
    """
    skipped = list(dict.fromkeys(skip_kinds))
    kept = f" AND kind NOT IN ({', '.join('?' for _ in skipped)})" if skipped else ""
    kept += " AND session IS NOT NULL" if in_sessions_only else ""
    return int(conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM events WHERE project = ? AND id > ?{kept} ORDER BY id DESC LIMIT ?)",
        [project, after_id, *skipped, cap],
    ).fetchone()[0])
