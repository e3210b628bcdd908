"""Time in one text format: UTC ISO 8601 with microseconds.

Every stored time (ledger events, observations, claims, facts) uses it, so
comparing two times as text compares them as times.
"""

import datetime

from .errors import InvalidInput
from .validation import check_text


def now() -> str:
    "The current UTC time as ISO 8601 with microseconds."
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


def format_time(moment: datetime.datetime) -> str:
    "``moment`` in the stored format: UTC, ISO 8601, microseconds."
    return moment.astimezone(datetime.timezone.utc).isoformat(timespec="microseconds")


def parse_time(value: object, field: str, default: str | None = None) -> str | None:
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
