"""Which objects in a memory file are memory's own, and which names are reserved.

Memory objects are exactly what the migrations create, found by migrating an
empty in-memory database once per process: a new migration's tables are
protected the day it lands, with no list here to forget to update.
"""

import functools
import re
import sqlite3
from typing import TypeGuard

from ..core.database import configure, migrate

# Tables with no project column whose rows belong to no project: readable when pinned.
GLOBAL_TABLES = frozenset({"memory_meta", "_sqlite_migrations", "sql_views"})
# Names kept free for memory's future tables and for SQLite's own.
RESERVED_NAMES = frozenset({"claims", "facts", "sql_audit", "sql_views", "query_errors"})
RESERVED_PREFIXES = ("sqlite_", "claim_", "fact_", "memory_", "sql_audit", "sql_view", "_sqlite")
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"})
# The agent's names need no quoting: quotes, semicolons, comment marks, spaces and
# control characters cannot end an identifier early in SQL that someone writes
# later, and ASCII alone means no look-alike letter (Cyrillic "е" in "еntities")
# or invisible or bidi character can make one name pass for another on a page.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_RULE = (
    "names of tables, views, indexes and triggers are ASCII letters, digits and underscores, "
    "not starting with a digit (such as open_bugs)"
)


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


def name_problem(name: str, max_chars: int) -> str | None:
    """
    Why the agent may not give ``name`` to a table, view, index or trigger of its own, or None if it may.

    This is the one rule for every name the agent gives (create_view's argument,
    CREATE and ALTER ... RENAME statements): a name of :data:`NAME`'s shape,
    at most ``max_chars`` long, not reserved (see :func:`is_reserved`).

    :param name: the name, unquoted
    :param max_chars: the longest name accepted
    """
    if not name:
        return f"the name is empty: {NAME_RULE}"
    shown = repr(name if len(name) <= 60 else name[:60] + "…")
    if len(name) > max_chars:
        return f"the name {shown} is {len(name)} characters, over the limit of {max_chars}: choose a shorter name"
    if not NAME.fullmatch(name):
        if name[0].isascii() and name[0].isdigit():
            return f"the name {shown} starts with a digit: {NAME_RULE}"
        bad = next(c for c in name if not (c.isascii() and (c.isalnum() or c == "_")))
        code = "" if bad.isascii() and bad.isprintable() else f" (U+{ord(bad):04X})"
        return f"the name {shown} contains {bad!r}{code}: {NAME_RULE}"
    if is_reserved(name):
        return f"the name {name} is reserved for memory's own tables: choose another name"
    return None


def quote(name: str) -> str:
    "``name`` as an SQL identifier."
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    "``text`` as an SQL string literal."
    return "'" + text.replace("'", "''") + "'"
