"""Times in the governed tier: one text format, and a record clock that never runs backwards.

Every stored time is UTC ISO 8601 with microseconds (the ledger's format), so
comparing two times as text compares them as times. As-of reads compare these
values with a clock; they never test whether a column is present.
"""

import datetime

from .errors import InvalidInput
from .ledger import now
from .validation import check_text

END_OF_TIME = "9999-12-31T23:59:59.999999+00:00"
ONE_MICROSECOND = datetime.timedelta(microseconds=1)


def format_time(moment: datetime.datetime) -> str:
    "``moment`` in the stored format: UTC, ISO 8601, microseconds."
    return moment.astimezone(datetime.timezone.utc).isoformat(timespec="microseconds")


def parse_time(value, field: str, default: str | None = None) -> str | None:
    """
    An ISO 8601 date or time in the stored format; times without an offset are UTC.

    :param value: text such as ``2025-03-01`` or ``2025-03-01T09:30:00+01:00``, or None
    :param field: where it came from, for the error
    :param default: returned when ``value`` is None
    """
    if value is None:
        return default
    text = check_text(value, field, max_bytes=64).strip()
    try:
        moment = datetime.datetime.fromisoformat(text.replace("z", "Z"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return format_time(moment)
    except (ValueError, OverflowError):
        raise InvalidInput(
            f"{field}: {text!r} is not an ISO 8601 date or time; "
            "use a form such as 2025-03-01 or 2025-03-01T09:30:00Z"
        )


def record_time(conn) -> str:
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
