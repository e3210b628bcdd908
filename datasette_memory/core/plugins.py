"""The plugin manager: the built-in behaviour and every installed ``datasette_memory`` entry point, behind :mod:`.hookspecs`.

As Datasette's ``plugins.py`` does, the defaults are modules named in
:data:`DEFAULT_PLUGINS` and imported by name, here when their hook is first
used, so the core never imports the clients or the model's code itself; other
packages come in through the ``datasette_memory`` entry-point group, read at
the first hook call (``bench/plugin_hooks.py`` times it).

A ``memory_event`` implementation runs after the commit, in the process that
committed: one that raises is logged on the ``datasette_memory.plugins``
logger (stderr unless logging is configured) with the plugin's name, the
event's id and the traceback, and the next implementation still runs; the
write has already committed and its caller gets its result as usual.
"""

import importlib
import logging
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ENTRY_POINT_GROUP = "datasette_memory"
# the built-in behaviour, as default implementations, by the hook they implement: each is
# imported and registered when its hook is first used, so a process that only writes never
# imports the install clients or the embedding code
DEFAULT_PLUGINS = {
    "embedding_model": ("datasette_memory.vectors.embedding",),
    "register_agent_clients": ("datasette_memory.clients.claude_code", "datasette_memory.clients.codex"),
}
logger = logging.getLogger("datasette_memory.plugins")
_loading = threading.Lock()
_manager: Any = None


def plugin_manager() -> Any:
    """
    The pluggy manager, with the defaults and the installed entry points
    registered. The first call builds it (pluggy itself is imported then, so a
    process that never needs a hook does not pay for it); it counts each
    register and unregister in ``version``, so what was built from its hooks
    is built again after one.
    """
    global _manager
    if _manager is None:
        with _loading:
            if _manager is None:
                _manager = loaded_manager()
    return _manager


def loaded_manager() -> Any:
    import pluggy

    from . import hookspecs

    class MemoryPluginManager(pluggy.PluginManager):
        version = 0

        def register(self, plugin: Any, name: str | None = None) -> str | None:
            registered = super().register(plugin, name)
            self.version += 1
            return registered

        def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
            unregistered = super().unregister(plugin, name)
            self.version += 1
            return unregistered

    manager = MemoryPluginManager(ENTRY_POINT_GROUP)
    manager.add_hookspecs(hookspecs)
    manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return manager


def with_defaults(hook: str) -> Any:
    "The manager, with the default implementations of ``hook`` registered (:data:`DEFAULT_PLUGINS`)."
    manager = plugin_manager()
    for name in DEFAULT_PLUGINS.get(hook, ()):
        if not manager.has_plugin(name):
            with _loading:
                if not manager.has_plugin(name):
                    manager.register(importlib.import_module(name), name)
    return manager


@dataclass(frozen=True)
class SecretPattern:
    """
    A detector a plugin added: text it matches is refused as a likely credential.

    :param kind: what it finds, as an error names it (``Acme API key``)
    :param pattern: the compiled pattern; its first group, if any, is the secret
    :param check: an optional test of the matched text (or group) that must pass
    """

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None


_built: dict[str, tuple[int, Any]] = {}


def built_from_hooks(name: str, build: Callable[[Any], Any]) -> Any:
    """
    ``build(manager)`` from hook ``name``, made again only after a plugin is registered or unregistered
    (what was built is current while the manager's version is the one it was built at: registering the
    defaults counts too). It is asked for on every string a write scans, so a current one is returned at once.
    """
    version, value = _built.get(name, (-1, None))
    if version == plugin_manager().version:
        return value
    manager = with_defaults(name)
    value = build(manager)
    _built[name] = (manager.version, value)
    return value


def secret_patterns() -> tuple[SecretPattern, ...]:
    "Every detector plugins registered through ``register_secret_patterns``."
    return built_from_hooks("register_secret_patterns", collect_secret_patterns)


def collect_secret_patterns(manager: Any) -> tuple[SecretPattern, ...]:
    found: list[SecretPattern] = []

    def register(kind: str, pattern: str | re.Pattern[str], check: Callable[[str], bool] | None = None) -> None:
        if not isinstance(kind, str) or not kind.strip():
            raise ValueError(f"register_secret_patterns: kind must be a name such as 'Acme API key', not {kind!r}")
        compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, re.DOTALL)
        found.append(SecretPattern(kind, compiled, check))

    manager.hook.register_secret_patterns(register=register)
    return tuple(found)


def embedding_model() -> Any:
    "The model the semantic arm embeds with: the first plugin's that returns one, else the built-in default's."
    return built_from_hooks("embedding_model", lambda manager: manager.hook.embedding_model())


# events each connection appended in its open transaction, announced when it commits
_uncommitted: dict[int, list[dict[str, Any]]] = {}


def appended(conn: sqlite3.Connection, event: dict[str, Any]) -> None:
    "Note that ``conn`` appended ``event`` in its open transaction."
    _uncommitted.setdefault(id(conn), []).append(event)


def appended_count(conn: sqlite3.Connection) -> int:
    "How many events ``conn`` has appended in its open transaction (a savepoint rolls back to it)."
    return len(_uncommitted.get(id(conn), ()))


def rolled_back(conn: sqlite3.Connection, to: int = 0) -> None:
    "After ``conn`` rolled back (to a savepoint, after ``to`` events): the events after those never happened."
    pending = _uncommitted.get(id(conn))
    if pending is not None:
        del pending[to:]
        if not pending:
            _uncommitted.pop(id(conn), None)


def committed(conn: sqlite3.Connection) -> None:
    "After ``conn`` committed: call ``memory_event`` for each event it appended, in order."
    events = _uncommitted.pop(id(conn), None)
    if events:
        announce(events)


def announce(events: Iterable[dict[str, Any]]) -> None:
    "Call every ``memory_event`` implementation with each event; one that raises is logged and the rest still run."
    implementations = plugin_manager().hook.memory_event.get_hookimpls()
    for event in events:
        for implementation in reversed(implementations):  # pluggy's own order: last registered first
            try:
                implementation.function(event=dict(event))
            except Exception:
                logger.exception(
                    "datasette-memory plugin %s failed in memory_event for event %s (%s); the event is committed",
                    implementation.plugin_name, event.get("id"), event.get("kind"),
                )
