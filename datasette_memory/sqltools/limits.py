"""The SQL tools' caps: defaults, and applying them to a connection and a call.

Every cap is a field of :class:`Limits`; the doors set them (``--sql-max-rows``
and friends on the command line, ``sql:`` in Datasette's plugin configuration).
"""

import dataclasses
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from ..core.errors import InvalidInput

# How many SQLite VM instructions run between two looks at the clock.
PROGRESS_STEPS = 1000


def cap(default: int, help: str) -> Any:
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True)
class Limits:
    """
    The caps every SQL tool call runs under. All are absolute: no argument raises them.
    """

    max_rows: int = cap(1000, "Most rows read_query and write_query's RETURNING return; the largest `limit`")
    default_rows: int = cap(100, "Rows read_query returns when `limit` is not given")
    max_result_bytes: int = cap(65_536, "Most bytes of CSV in one result, header and first row included")
    max_cell_chars: int = cap(2_000, "Longest value shown in one CSV cell; longer ones are cut and marked")
    timeout_ms: int = cap(5_000, "Longest a call's statement may run; it is interrupted and rolled back")
    max_value_bytes: int = cap(1_000_000, "Largest string or blob a write can make (SQLite's length limit on write connections)")
    max_read_value_bytes: int = cap(16_000_000, "Largest string or blob a read can make or load (SQLite's length limit on read connections)")
    max_query_bytes: int = cap(100_000, "Longest SQL text accepted (also SQLite's SQL length limit)")
    max_columns: int = cap(200, "Most columns in a table, index or result (SQLite's column limit)")
    max_changed_rows: int = cap(100, "Most existing rows one write_query may change or delete, REPLACE and cascades included")
    max_schema_bytes: int = cap(1_000_000, "Most bytes of CREATE statements for the agent's own tables, views, indexes and triggers")
    max_description_chars: int = cap(2_000, "Longest view description create_view accepts")
    max_name_chars: int = cap(128, "Longest name of a new table, view, index or trigger")
    snapshots_keep: int = cap(10, "Manual snapshots kept; older manual ones are removed")
    destructive_snapshots_keep: int = cap(10, "Snapshots taken before destructive_query kept; manual snapshots never remove them")
    max_scan_rows: int = cap(10_000, "Most rows search_text reads before it stops")
    max_scan_bytes: int = cap(16_000_000, "Most bytes of values search_text reads before it stops")
    max_context_chars: int = cap(200, "Largest `context_chars` search_text accepts")
    max_pattern_chars: int = cap(1_000, "Longest search_text pattern")
    audit_text_chars: int = cap(8_000, "Longest argument text kept in an audit row; longer text is cut and marked")

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> "Limits":
        """
        Limits from a mapping of cap names to values (flags, Datasette's plugin
        configuration); missing caps keep their defaults.

        :param values: cap names, such as ``max_rows``, to whole numbers of at least 1
        :raises InvalidInput: naming an unknown cap or a value that is not a whole number of at least 1
        """
        names = {field.name for field in dataclasses.fields(cls)}
        for name in values:
            if name not in names:
                raise InvalidInput(f"sql.{name}: unknown cap; the caps are {', '.join(sorted(names))}")
        return cls(**{name: positive_int(value, f"sql.{name}") for name, value in values.items()})


def positive_int(value: object, name: str) -> int:
    "``value`` as an integer of at least 1, or :class:`InvalidInput` naming ``name``."
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidInput(f"{name}: must be a whole number, got {value!r}")
    if number < 1:
        raise InvalidInput(f"{name}: must be at least 1, got {number}")
    return number


def apply_limits(conn: sqlite3.Connection, limits: Limits, write: bool) -> None:
    """
    Set SQLite's own run-time limits on a connection the agent's SQL will use.

    ATTACH is made impossible (it is also refused by the authorizer), which
    stops ``VACUUM INTO`` too: it works by attaching its target.

    :param conn: the connection
    :param limits: the caps
    :param write: True for a write connection, which gets the smaller value size
    """
    length = limits.max_value_bytes if write else limits.max_read_value_bytes
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)
    conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, limits.max_query_bytes + 1024)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, limits.max_columns)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)


class Deadline:
    """
    A progress handler that interrupts SQLite once ``seconds`` have passed.

    :param seconds: the time allowed from now
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self.expired = False

    def __call__(self) -> int:
        if time.monotonic() > self.expires:
            self.expired = True
            return 1
        return 0

    def remaining(self) -> float:
        "Seconds left, never below zero."
        return max(0.0, self.expires - time.monotonic())

    def install(self, conn: sqlite3.Connection) -> None:
        "Make ``conn`` stop when the deadline passes."
        conn.set_progress_handler(self, PROGRESS_STEPS)
