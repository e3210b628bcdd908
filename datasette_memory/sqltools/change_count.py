"""Counting the existing rows a write changed or deleted, whatever the mechanism.

SQLite's change counter counts inserted, updated and deleted rows, cascades
and trigger changes included, but not rows that REPLACE conflict resolution
(``REPLACE``, ``INSERT OR REPLACE``, ``UPDATE OR REPLACE``) deletes. Row counts
taken before and after catch those: with C the change counter's increase and
N the net growth of every table,

    C - N = updated + deleted (all of them) + deleted (the counted ones)

which is at least the number of existing rows changed or deleted, and at most
twice it: inserts cancel out, uncounted deletes are counted once, counted ones
twice. The mass-change cap is checked against this upper bound.
"""

import sqlite3

from .names import fold, is_memory, quote


def agent_tables(conn: sqlite3.Connection) -> list[str]:
    "The main schema's tables other than memory's and SQLite's (virtual and shadow tables included)."
    return [
        name
        for _, name, type, *_ in conn.execute("PRAGMA main.table_list")
        if type in ("table", "virtual", "shadow") and not fold(name).startswith("sqlite_") and not is_memory(name)
    ]


def row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    "``{table: rows}`` for every agent table."
    return {name: conn.execute(f"SELECT count(*) FROM main.{quote(name)}").fetchone()[0] for name in agent_tables(conn)}


class ChangeCounter:
    """
    Measures one statement's effect on existing rows.

    :param conn: the write connection, inside the call's transaction
    """

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.total_before = conn.total_changes
        self.counts_before = row_counts(conn)

    def existing_rows_changed(self) -> int:
        "The upper bound described in the module docstring, never below zero."
        counts_after = row_counts(self.conn)
        net = sum(counts_after.values()) - sum(self.counts_before.values())
        return max(0, self.conn.total_changes - self.total_before - net)
