"""Opening a memory file: pragmas, migrations, and the one write transaction every writer uses."""

import contextlib
import pathlib
import sqlite3
import time
from collections.abc import Iterator

from . import plugins, witness
from .errors import DamagedFile, SchemaTooNewError
from .migrations import MIGRATION_SET, migrations

BUSY_TIMEOUT_MS = 30_000


def configure(conn: sqlite3.Connection) -> None:
    """
    Set the pragmas every connection to a memory file needs.

    :param conn: an open connection; it is switched to explicit transactions
    """
    conn.isolation_level = None
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")


def applied_migrations(conn: sqlite3.Connection) -> set[str]:
    """
    Names of the migrations of ours the file has applied.

    :param conn: an open connection
    """
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [migrations.migrations_table]).fetchone():
        return set()
    query = f"SELECT name FROM [{migrations.migrations_table}] WHERE migration_set = ?"
    return {row[0] for row in conn.execute(query, [MIGRATION_SET])}


def unknown_migrations(conn: sqlite3.Connection) -> list[str]:
    """
    Names of applied migrations this code does not know: a newer schema.

    :param conn: an open connection
    """
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", [migrations.migrations_table]
    ).fetchone()
    if not exists:
        return []
    known = set(migrations.names())
    applied = [
        row[0]
        for row in conn.execute(
            f"SELECT name FROM [{migrations.migrations_table}] WHERE migration_set = ?",
            [MIGRATION_SET],
        )
    ]
    return [name for name in applied if name not in known]


def migrate(conn: sqlite3.Connection) -> None:
    """
    Bring a memory file's schema up to date, refusing one written by newer code.

    Runs inside one IMMEDIATE transaction so processes opening a new file at
    the same moment apply each migration exactly once.

    :param conn: a connection configured by :func:`configure`
    :raises SchemaTooNewError: if the file has migrations this code lacks
    """
    check_not_newer(conn)
    enable_wal(conn)
    if set(migrations.names()) <= applied_migrations(conn):
        return  # current: sqlite-utils (and the numpy it imports) stays unimported
    from sqlite_utils import Database

    db = Database(conn, execute_plugins=False)
    if not migrations.pending(db):
        return
    with write_transaction(conn):
        check_not_newer(conn)
        migrations.apply(db)


def enable_wal(conn: sqlite3.Connection) -> None:
    """
    Switch the file to WAL, waiting out other processes doing the same.

    SQLite does not call the busy handler for a journal mode change, so a new
    file opened by several processes at once needs this retry loop.

    :param conn: a connection with no transaction open
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def check_not_newer(conn: sqlite3.Connection) -> None:
    """
    Raise :class:`SchemaTooNewError` if newer code wrote this file.

    :param conn: an open connection
    """
    newer = unknown_migrations(conn)
    if newer:
        raise SchemaTooNewError(
            "this memory file was written by a newer datasette-memory "
            f"(unknown migrations: {', '.join(newer)}); "
            "upgrade datasette-memory to open it. The file was not modified."
        )


def connect(path: str | pathlib.Path, check_pages: bool = False) -> sqlite3.Connection:
    """
    Open (creating if needed) and migrate the memory file at ``path``.

    :param path: the memory file; its parent folder is created if missing
    :param check_pages: first run SQLite's quick check, and refuse a damaged file
        (a server about to write to it for hours asks this; a short call need not)
    :raises DamagedFile: if the check finds damage (a file that is not a database raises SQLite's own error;
        :func:`~.file_errors.file_failure` says what any of SQLite's errors means)
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        configure(conn)
        if check_pages:
            refuse_damaged(conn, path)
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def is_current(path: str | pathlib.Path) -> bool:
    """
    Whether the memory file at ``path`` exists and has every migration applied, so that
    opening it migrates nothing; False for anything else (no file, not a database, older or newer).

    :param path: the memory file
    """
    try:
        conn = sqlite3.connect(f"{pathlib.Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except (sqlite3.Error, ValueError):
        return False
    try:
        return set(migrations.names()) == applied_migrations(conn)
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def read_connection(path: str | pathlib.Path) -> sqlite3.Connection:
    "A connection to a migrated memory file that refuses writes (``query_only``): for calls that only read."
    conn = connect(path)
    conn.execute("PRAGMA query_only = ON")
    return conn


@contextlib.contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    "A read transaction: every statement of a read sees memory as it was at one moment, whatever commits meanwhile."
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def refuse_damaged(conn: sqlite3.Connection, path: pathlib.Path) -> None:
    "Raise :class:`DamagedFile` unless SQLite's quick check of ``path`` passes."
    try:
        found = [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as e:
        if not (getattr(e, "sqlite_errorname", "") or "").startswith("SQLITE_CORRUPT"):
            raise  # not damage: not a database, or unreadable here (read-only or full folder, a lock); the doors say which
        found = [str(e)]
    if found != ["ok"]:
        raise DamagedFile(
            f"the file is damaged (SQLite's quick check: {found[0]}); nothing was written to it. "
            "`datasette-memory verify` lists what is wrong; restore it from a snapshot or a backup"
        )


def inserted_id(cursor: sqlite3.Cursor) -> int:
    "The id of the row an INSERT just made."
    if cursor.lastrowid is None:
        raise RuntimeError("the statement inserted no row")
    return cursor.lastrowid


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """
    One write transaction that takes the write lock up front (``BEGIN
    IMMEDIATE``): committed if the block ends normally, rolled back on any error.

    Every writer uses it: the core's calls, migrations, the SQL tools and their
    audit log, and the vector side file. Reading the ledger head and appending
    an event inside it cannot race with another process, so the chain never forks.
    Inside a :func:`rehearsal` it is a savepoint of the rehearsal's transaction.

    :param conn: a connection in autocommit mode (any DB-API connection, such as
        the vector side file's); no transaction open, or a rehearsal's
    """
    nested = conn.in_transaction
    conn.execute("SAVEPOINT write_transaction" if nested else "BEGIN IMMEDIATE")
    events_before = plugins.appended_count(conn)
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK TO write_transaction" if nested else "ROLLBACK")
        plugins.rolled_back(conn, to=events_before if nested else 0)
        if not nested:
            witness.rolled_back(conn)
        raise
    else:
        try:
            conn.execute("RELEASE write_transaction" if nested else "COMMIT")
        except BaseException:
            plugins.rolled_back(conn, to=events_before if nested else 0)  # a failed commit announces nothing
            raise
        if not nested:
            witness.committed(conn)
            plugins.committed(conn)


@contextlib.contextmanager
def rehearsal(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """
    Writes made inside run for their result only: everything is rolled back at
    the end, so a person can see what an act would change before confirming it.

    :param conn: a connection with no transaction open
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        witness.rolled_back(conn)
        plugins.rolled_back(conn)
