"""Times as every memory page shows them: how long ago (or how soon), with the exact time on hover.

Memory stores a time as ISO 8601 in UTC with microseconds, which no person
wants to read. The ``when`` filter (registered in :mod:`.templates`) writes
``<time datetime="2025-06-01T09:30:12.123456+00:00" title="2025-06-01 09:30:12
UTC">3 hours ago</time>``: the words say how long ago, the browser shows the
exact time when the pointer rests on them, and no script is needed. Where no
markup can go (an attribute, the message after an act), :func:`exact_time` gives
the exact form alone.
"""

import datetime
import re

from markupsafe import Markup

from .stored_text import stored

STORED_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d")

MINUTE, HOUR, DAY = 60, 3600, 86400
# (below this many seconds, how to say it): the last step says years
STEPS = (
    (45, lambda s: "just now"),
    (90, lambda s: "a minute"),
    (45 * MINUTE, lambda s: f"{round(s / MINUTE)} minutes"),
    (90 * MINUTE, lambda s: "an hour"),
    (22 * HOUR, lambda s: f"{round(s / HOUR)} hours"),
    (36 * HOUR, lambda s: "a day"),
    (26 * DAY, lambda s: f"{round(s / DAY)} days"),
    (45 * DAY, lambda s: "a month"),
    (320 * DAY, lambda s: f"{round(s / (30.44 * DAY))} months"),
    (548 * DAY, lambda s: "a year"),
)


def parsed(value: object) -> datetime.datetime | None:
    "A stored time as an aware datetime (UTC when it names no offset), or None if ``value`` is not one."
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def is_stored_time(value: object) -> bool:
    "Whether ``value`` is a time as memory stores one (the templates' ``stored_time`` test): a value shown through ``when``."
    return isinstance(value, str) and STORED_TIME.match(value) is not None and parsed(value) is not None


def exact_time(value: object) -> str:
    "``2025-06-01 09:30:12 UTC``: a stored time to the second, for a tooltip or a message; anything else as it is."
    moment = parsed(value)
    if moment is None:
        return "" if value is None else str(value)
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative_time(moment: datetime.datetime, now: datetime.datetime) -> str:
    "How long before or after ``now`` ``moment`` is, in words: ``3 hours ago``, ``in 2 days``, ``just now``."
    seconds = (now - moment).total_seconds()
    span = abs(seconds)
    for below, say in STEPS:
        if span < below:
            words = say(span)
            break
    else:
        words = f"{round(span / (365.25 * DAY))} years"
    if words == "just now":
        return words
    if words == "a day":
        return "yesterday" if seconds > 0 else "tomorrow"
    return f"{words} ago" if seconds > 0 else f"in {words}"


def when(value: object, now: datetime.datetime | None = None) -> Markup:
    """
    The ``when`` filter: a stored time as ``<time>``, saying how long ago, its exact time on hover.

    :param value: a stored time; None says the time was not recorded, and anything else shows as stored text
    :param now: the moment to count from (default: now)
    """
    moment = parsed(value)
    if moment is None:
        return Markup('<span class="memory-meta">time not recorded</span>') if value is None else Markup(stored(str(value)))
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return Markup('<time datetime="{}" title="{}">{}</time>').format(value, exact_time(value), relative_time(moment, now))
