"""Which database served by plain ``datasette`` is the memory file: the one whose schema is memory's.

``datasette-memory serve`` names it in the plugin setting ``database``; plain
``datasette team.db`` does not, so at startup each file served is asked whether
it holds memory's own tables (``memory_meta`` with the file's machine id, the
ledger, the graph). One that does is the memory database. Several are refused
at startup, naming them and the setting that chooses one: guessing would put
the pages, the write guard and the stored queries on the wrong file.
"""

import sqlite3
from typing import Any

from datasette.utils import StartupError

MEMORY_TABLES = ("memory_meta", "events", "entities", "observations", "relations")


def holds_memory(conn: sqlite3.Connection) -> bool:
    "Whether this database has memory's schema: its tables, and a machine id in ``memory_meta``."
    found = conn.execute(
        f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ({', '.join('?' * len(MEMORY_TABLES))})",
        MEMORY_TABLES,
    ).fetchone()[0]
    if found != len(MEMORY_TABLES):
        return False
    return conn.execute("SELECT 1 FROM memory_meta WHERE key = 'machine_id'").fetchone() is not None


async def recognised_database(datasette: Any) -> str | None:
    """
    The name of the one database served that holds memory, or None if none does.

    :raises StartupError: if several do, naming them and the setting that picks one
    """
    found = []
    for name, db in datasette.databases.items():
        if db.is_memory:
            continue
        try:
            if await db.execute_fn(holds_memory):
                found.append(name)
        except sqlite3.DatabaseError:
            continue  # not a database this plugin can read; Datasette reports it itself
    if len(found) > 1:
        raise StartupError(
            f"datasette-memory: {len(found)} databases hold memory ({', '.join(found)}); say which one the memory "
            f"pages serve with plugins: datasette-memory: database: NAME in Datasette's configuration "
            f"(-s plugins.datasette-memory.database {found[0]})"
        )
    return found[0] if found else None
