"""No side door: Datasette's own writes are refused on memory's tables, for every actor, root included.

Memory changes only through the core, so every change is in the ledger. A
table-level deny from :func:`permission_resources_sql` beats every allow
Datasette has (root's, a token's, a ``permissions:`` block's), so its write
API (insert, upsert, update, delete, alter, drop), its write SQL
(``/-/execute-write``, stored queries) and its edit buttons all refuse them,
and ``datasette.allowed`` says so everywhere. Memory's tables are exactly
what the migrations create (FTS shadow tables included), found the way the SQL
tools find them. The agent's own tables keep whatever Datasette allows.

Datasette answers a refused write with a bare "Permission denied";
:func:`asgi_wrapper` rewrites that answer, for requests that target a memory
table, to say where such a change is made instead.
"""

import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from datasette import hookimpl
from datasette.permissions import PermissionSQL

from ..sqltools.names import memory_objects
from .connection import PLUGIN_NAME, memory_database_name

WRITE_ACTIONS = frozenset({"insert-row", "update-row", "delete-row", "alter-table", "drop-table", "drop-view", "set-column-type"})
GUIDANCE = (
    "{table} is one of memory's tables: it changes only through datasette-memory, so that the ledger "
    "records every change. Agents use the MCP tools; people review claims at /-/memory/review and "
    "correct an entity on its page, /-/memory/entity?project=...&name=..."
)
# Datasette's write endpoints, by the table they name: /db/table/-/insert, /db/table/pk/-/update, ...
WRITE_PATH = re.compile(r"^/(?P<database>[^/]+)/(?P<table>[^/]+)(?:/[^/]+)?/-/(?:insert|upsert|update|delete|alter|drop|set-column-type)$")
SQL_TABLE = re.compile(r"need [a-z-]+ on [^/\s]+/(?P<table>[^\s\"]+)")


@functools.lru_cache(maxsize=1)
def memory_table_names() -> tuple[str, ...]:
    "Memory's tables and views, as the migrations name them (asked on every write permission check)."
    return tuple(sorted(name for name, (type, _) in memory_objects().items() if type in ("table", "view")))


@hookimpl(specname="permission_resources_sql")
def deny_writes_to_memory_tables(datasette: Any, actor: Any, action: str) -> PermissionSQL | None:
    if action not in WRITE_ACTIONS:
        return None
    return PermissionSQL(
        source=PLUGIN_NAME,
        sql=(
            "SELECT :dsmem_database AS parent, value AS child, 0 AS allow, :dsmem_reason AS reason "
            "FROM json_each(:dsmem_tables)"
        ),
        params={
            "dsmem_database": memory_database_name(datasette),
            "dsmem_tables": json.dumps(memory_table_names()),
            "dsmem_reason": "memory tables change only through datasette-memory, which records every change in the ledger",
        },
    )


def refused_table(path: str, body: dict[str, Any], database: str) -> str | None:
    "The memory table a refused write named, from its path or from Datasette's message, or None."
    match = WRITE_PATH.match(path)
    if match and match["database"] == database:
        table = match["table"]
    else:
        found = SQL_TABLE.search(str(body.get("error", "")))
        table = found["table"] if found else ""
    return table if table.lower() in memory_table_names() else None


@hookimpl(specname="asgi_wrapper")
def explain_refused_writes(datasette: Any) -> Callable[[Any], Any]:
    def wrap(app: Any) -> Callable[..., Awaitable[None]]:
        async def explained(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope.get("method") != "POST":
                return await app(scope, receive, send)
            held: list[dict[str, Any]] = []

            async def rewrite(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start" and message["status"] == 403:
                    held.append(message)
                    return
                if not held:
                    return await send(message)
                held.append(message)
                if message.get("more_body"):
                    return
                await send_explained(held, scope["path"], memory_database_name(datasette), send)

            await app(scope, receive, rewrite)

        return explained

    return wrap


async def send_explained(held: list[dict[str, Any]], path: str, database: str, send: Any) -> None:
    "Send a held 403, its error replaced by guidance when it refused a write to a memory table."
    start, bodies = held[0], held[1:]
    raw = b"".join(message.get("body", b"") for message in bodies)
    try:
        body = json.loads(raw)
        table = refused_table(path, body, database) if isinstance(body, dict) else None
    except ValueError:
        table = None
    if table is not None:
        body["error"] = GUIDANCE.format(table=table)
        body["errors"] = [body["error"]]
        raw = json.dumps(body).encode("utf-8")
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        start = {**start, "headers": headers + [(b"content-length", str(len(raw)).encode())]}
    await send(start)
    await send({"type": "http.response.body", "body": raw})
