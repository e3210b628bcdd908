"""Finding the memory database in Datasette, its configuration, migrating it, and calling the core on it."""

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from datasette import hookimpl

from ..config import Config
from ..core.database import BUSY_TIMEOUT_MS, migrate
from ..core.errors import InvalidInput
from ..memory import Memory
from .built_in_config import provide_built_in_config
from .recognition import recognised_database

PLUGIN_NAME = "datasette-memory"
DEFAULT_DATABASE = "memory"
T = TypeVar("T")
_configs: "weakref.WeakKeyDictionary[Any, Config]" = weakref.WeakKeyDictionary()
_recognised: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def memory_database_name(datasette) -> str:
    """
    The name of the Datasette database holding memory: the plugin setting
    ``database`` if given, else the one database served whose schema is
    memory's (found at startup, :mod:`.recognition`), else ``memory``.
    """
    configured = (datasette.plugin_config(PLUGIN_NAME) or {}).get("database")
    return configured or _recognised.get(datasette, DEFAULT_DATABASE)


def memory_database(datasette):
    "The Datasette database holding memory, or None if it is not being served."
    return datasette.databases.get(memory_database_name(datasette))


def memory_config(datasette) -> Config:
    """
    What this Datasette configured for memory: ``plugins: datasette-memory:`` in
    its configuration (``search``, ``sql``, ``snapshot_dir``), read once.
    ``datasette-memory serve`` fills it in from its flags and the environment.
    """
    if datasette not in _configs:
        door_settings = ("database", "sign_in", "mcp_tools", "allowed_hosts")
        settings = {k: v for k, v in (datasette.plugin_config(PLUGIN_NAME) or {}).items() if k not in door_settings}
        try:
            _configs[datasette] = Config.from_mapping(settings)
        except InvalidInput as e:
            raise InvalidInput(f"plugins.{PLUGIN_NAME}.{e}; fix the Datasette configuration") from None
    return _configs[datasette]


@hookimpl
def prepare_connection(conn, database, datasette):
    if database == memory_database_name(datasette):
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")


@hookimpl
def startup(datasette):
    async def inner():
        memory_config(datasette)  # a mistake in the configuration stops the server here, not on a request
        if not (datasette.plugin_config(PLUGIN_NAME) or {}).get("database"):
            if (found := await recognised_database(datasette)) is not None:
                _recognised[datasette] = found
        db = memory_database(datasette)
        if db is not None and db.is_mutable:
            await db.execute_write_fn(migrate, transaction=False)
        if db is not None:
            await provide_built_in_config(datasette, db.name)

    return inner


async def call_memory(datasette, function: Callable[[Memory], T], write: bool = False, **memory_options: Any) -> T:
    """
    Run ``function(memory)`` against the memory database: reads on a read
    connection, writes on Datasette's write thread. :class:`Memory` opens its
    own IMMEDIATE transaction, so Datasette's is turned off.

    :param datasette: the Datasette instance
    :param function: called with a :class:`Memory`
    :param write: whether ``function`` writes
    :param memory_options: ``project``, ``actor``, ``session``, ``allow_secrets``
    """
    config = memory_config(datasette)

    def run(conn):
        return function(Memory(conn, config=config, **memory_options))

    db = memory_database(datasette)
    if write:
        return await db.execute_write_fn(run, transaction=False)
    return await db.execute_fn(run)
