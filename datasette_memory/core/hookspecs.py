"""The extension points other packages implement: one-line contracts, as ``datasette/hookspecs.py`` has them.

A package extends datasette-memory by naming a module in the ``datasette_memory``
entry-point group and implementing any of these in it with
``@datasette_memory.hookimpl``. The argument names are the API. The built-in
behaviour of each is the default implementation (:data:`.plugins.DEFAULT_PLUGINS`).
"""

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("datasette_memory")
hookimpl = pluggy.HookimplMarker("datasette_memory")


@hookspec
def register_secret_patterns(register: Any) -> None:
    "Add detectors of credentials: call ``register(kind, pattern, check=None)`` for each; writes holding a match are refused."


@hookspec(firstresult=True)
def embedding_model() -> Any:
    "Return the model the semantic arm embeds with: ``model_id``, ``dimensions`` and ``embed(texts) -> list[bytes]``."


@hookspec
def register_agent_clients(register: Any) -> None:
    "Add coding agents ``install`` and ``uninstall`` know: call ``register(AgentClient(...))`` for each."


@hookspec
def memory_event(event: dict[str, Any]) -> None:
    "Called once for each ledger event after the transaction that appended it commits (never for one rolled back)."
