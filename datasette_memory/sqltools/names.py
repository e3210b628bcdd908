"""Which objects in a memory file are memory's own, and which names are reserved.

Memory objects are exactly what the migrations create, found by migrating an
empty in-memory database once per process: a new migration's tables are
protected the day it lands, with no list here to forget to update.
"""

import functools
import sqlite3
from typing import TypeGuard

from ..core.database import configure, migrate

# Tables with no project column whose rows belong to no project: readable when pinned.
GLOBAL_TABLES = frozenset({"memory_meta", "_sqlite_migrations", "sql_views"})
# Names kept free for memory's future tables and for SQLite's own.
RESERVED_NAMES = frozenset({"claims", "facts", "sql_audit", "sql_views", "query_errors"})
RESERVED_PREFIXES = ("sqlite_", "claim_", "fact_", "memory_", "sql_audit", "sql_view", "_sqlite")
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})


def fold(name: str) -> str:
    "A name as SQLite compares it: case-insensitively (Python's folding is a superset of SQLite's ASCII one)."
    return name.lower()


@functools.lru_cache(maxsize=1)
def memory_objects() -> dict[str, tuple[str, str]]:
    "Every object the migrations create, as ``{folded name: (type, table name)}``."
    conn = sqlite3.connect(":memory:")
    try:
        configure(conn)
        migrate(conn)
        rows = conn.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
    finally:
        conn.close()
    return {fold(name): (type, tbl_name) for type, name, tbl_name in rows}


def memory_tables() -> set[str]:
    "Folded names of memory's tables (virtual and shadow tables included)."
    return {name for name, (type, _) in memory_objects().items() if type == "table"}


def is_memory(name: str | None) -> TypeGuard[str]:
    "Is ``name`` one of memory's own tables, views, indexes or triggers?"
    return name is not None and fold(name) in memory_objects()


def is_reserved(name: str) -> bool:
    "May the agent not give ``name`` to an object of its own?"
    folded = fold(name)
    if is_memory(name) or folded in RESERVED_NAMES or folded.startswith(RESERVED_PREFIXES):
        return True
    return any(folded.startswith(table + "_") for table in memory_tables())


def quote(name: str) -> str:
    "``name`` as an SQL identifier."
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    "``text`` as an SQL string literal."
    return "'" + text.replace("'", "''") + "'"
