"""Opening the connections the agent's SQL runs on: pragmas, limits, project pins."""

import pathlib
import sqlite3
from dataclasses import dataclass

from ..core.database import configure
from . import project_pins
from .limits import Limits, apply_limits
from .names import fold

# Python 3.12+ can switch SQLite's defensive mode on; on 3.11 the guard and
# trusted_schema=OFF stand in for it (see docs/tools.md, Caps).
DEFENSIVE_MODE = hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE")


@dataclass
class AgentConnection:
    """
    A connection for one call, and the project filter it carries.

    :param conn: the connection
    :param path: the memory file
    :param pinned: the project it is pinned to, or None
    :param scope_views: folded names of its project-filtering views
    :param shadow_tables: folded names of the virtual tables' shadow tables
    """

    conn: sqlite3.Connection
    path: pathlib.Path
    pinned: str | None
    scope_views: frozenset[str]
    shadow_tables: frozenset[str]

    def close(self) -> None:
        self.conn.close()


def open_agent_connection(path: str | pathlib.Path, limits: Limits, write: bool, project: str | None) -> AgentConnection:
    """
    Open a connection for the agent's SQL.

    Read connections are opened read-only (``mode=ro``) and then set
    ``query_only``. Prepared statements are not cached, so every statement is
    compiled, and so authorized, afresh.

    :param path: the memory file, already migrated
    :param limits: the caps
    :param write: open for writing
    :param project: pin the connection to this project, or None for every project
    """
    if write:
        conn = sqlite3.connect(str(path), check_same_thread=False, cached_statements=0)
    else:
        uri = pathlib.Path(path).resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, cached_statements=0)
    try:
        prepare(conn, limits, write)
        scope_views = project_pins.pin(conn, project) if project is not None else frozenset()
        shadow_tables = frozenset(
            fold(row[1]) for row in conn.execute("PRAGMA main.table_list") if row[2] == "shadow"
        )
        if not write:
            conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return AgentConnection(conn, pathlib.Path(path), project, scope_views, shadow_tables)


def prepare(conn: sqlite3.Connection, limits: Limits, write: bool) -> None:
    "The memory file's own pragmas, then the rails' ones."
    configure(conn)
    conn.execute("PRAGMA trusted_schema = OFF")
    if DEFENSIVE_MODE:
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, True)  # type: ignore[attr-defined]  # Python 3.12+ only
    apply_limits(conn, limits, write)
    conn.text_factory = lambda data: data.decode("utf-8", "replace")
