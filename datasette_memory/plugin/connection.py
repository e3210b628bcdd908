"""Finding the memory database in Datasette, migrating it, and writing to it."""

from datasette import hookimpl

from ..database import BUSY_TIMEOUT_MS, migrate
from ..memory import Memory

PLUGIN_NAME = "datasette-memory"
DEFAULT_DATABASE = "memory"


def memory_database_name(datasette) -> str:
    "The name of the Datasette database holding memory (plugin setting ``database``)."
    return (datasette.plugin_config(PLUGIN_NAME) or {}).get("database", DEFAULT_DATABASE)


def memory_database(datasette):
    "The Datasette database holding memory, or None if it is not being served."
    return datasette.databases.get(memory_database_name(datasette))


@hookimpl
def prepare_connection(conn, database, datasette):
    if database == memory_database_name(datasette):
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")


@hookimpl
def startup(datasette):
    async def inner():
        db = memory_database(datasette)
        if db is not None and db.is_mutable:
            await db.execute_write_fn(migrate, transaction=False)

    return inner


async def call_memory(datasette, function, write: bool = False, **memory_options):
    """
    Run ``function(memory)`` against the memory database: reads on a read
    connection, writes on Datasette's write thread. :class:`Memory` opens its
    own IMMEDIATE transaction, so Datasette's is turned off.

    :param datasette: the Datasette instance
    :param function: called with a :class:`Memory`
    :param write: whether ``function`` writes
    :param memory_options: ``project``, ``actor``, ``session``, ``allow_secrets``
    """

    def run(conn):
        return function(Memory(conn, **memory_options))

    db = memory_database(datasette)
    if write:
        return await db.execute_write_fn(run, transaction=False)
    return await db.execute_fn(run)
