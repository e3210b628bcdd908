"""The governed tier's two time axes: an end of time, and a record clock that never runs backwards.

Valid time (``valid_from``, ``valid_to``) says when a fact holds in the world;
record time (``recorded_at``, ``retracted_at``) when memory learned or retired
it. As-of reads compare these values with a clock; they never test whether a
column is present, so an open end is compared as :data:`END_OF_TIME`.
"""

import datetime
import sqlite3

from ..core.clock import format_time, now

END_OF_TIME = "9999-12-31T23:59:59.999999+00:00"
ONE_MICROSECOND = datetime.timedelta(microseconds=1)


def record_time(conn: sqlite3.Connection) -> str:
    """
    The record time for a change to facts: now, or just after the latest
    recorded change if the system clock has gone backwards, so that "as the
    memory knew it at R" always has one answer.

    :param conn: a connection inside the transaction making the change
    """
    latest = conn.execute("SELECT max(recorded_at) FROM fact_history").fetchone()[0]
    current = now()
    if latest is None or current > latest:
        return current
    return format_time(datetime.datetime.fromisoformat(latest) + ONE_MICROSECOND)
