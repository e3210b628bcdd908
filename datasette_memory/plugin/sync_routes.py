"""The hub's side of sync (``datasette-memory sync URL``): what it holds, events pushed to it, events pulled from it.

Each route needs an API token (as MCP over HTTP does) and view-database on the
memory database; events pushed are taken on Datasette's write thread, through
the same core steps a bundle's are.
"""

import json
from typing import Any

from datasette import hookimpl
from datasette.utils.asgi import Response

from ..core.errors import MemoryStoreError
from ..sync.events import SyncRefused, holdings, outgoing
from ..sync.exchange import apply_pending, take
from ..sync.hub import first_batch
from ..sync.shared import shared_projects
from .connection import call_memory, memory_config
from .error_pages import handled
from .mcp_http import unauthorized
from .pages import viewable_database


async def authorised_body(datasette: Any, request: Any) -> Any:
    "The request's JSON body, once the caller has shown a token and may view memory; None for a GET."
    if not request.headers.get("authorization", "").lower().startswith("bearer ") or request.actor is None:
        raise PermissionError("sync needs a Datasette API token: send 'Authorization: Bearer <token>' "
                              "(create one on the hub with 'datasette-memory create-token ACTOR')")
    await viewable_database(datasette, request)
    if request.method != "POST":
        return None
    body = await request.post_body()
    if len(body) > memory_config(datasette).max_request_bytes:
        raise SyncRefused(f"the request is {len(body)} bytes, over the hub's cap of {memory_config(datasette).max_request_bytes}; "
                          "send smaller batches")
    try:
        return json.loads(body)
    except ValueError as e:
        raise SyncRefused(f"the request's body is not JSON ({e}); send what datasette-memory sync sends")


def sync_view(answer: Any) -> Any:
    async def view(datasette: Any, request: Any) -> Response:
        try:
            body = await authorised_body(datasette, request)
            return Response.json(await answer(datasette, request, body))
        except PermissionError as e:
            return unauthorized(str(e))
        except SyncRefused as e:
            return Response.json({"ok": False, "error": str(e)}, status=409)
        except MemoryStoreError as e:
            return Response.json({"ok": False, "error": str(e)}, status=400)

    return handled(view)


async def holdings_answer(datasette: Any, request: Any, body: Any) -> dict[str, Any]:
    return await call_memory(datasette, lambda memory: {"ok": True, "holdings": holdings(memory.conn)})


def peer_name(request: Any) -> str:
    return f"token {request.actor.get('id', '?')}"


async def push_answer(datasette: Any, request: Any, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        raise SyncRefused('push.json takes {"events": [...], "apply": true|false}')
    peer = peer_name(request)

    def push(memory: Any) -> dict[str, Any]:
        received = take(memory, body["events"], peer)
        applied = apply_pending(memory, peer).applied if body.get("apply") else 0
        return {"ok": True, "received": received, "applied": applied}

    return await call_memory(datasette, push, write=True, actor="sync")


async def pull_answer(datasette: Any, request: Any, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("holdings"), dict):
        raise SyncRefused('pull.json takes {"holdings": {machine: {"clock": N, "opaque": [[first, last], ...]}}}')
    their = checked_holdings(body["holdings"])
    limit = body.get("max_bytes") if isinstance(body.get("max_bytes"), int) else 1_000_000

    def pull(memory: Any) -> dict[str, Any]:
        events, more = first_batch(outgoing(memory.conn, their, shared_projects(memory.conn)),
                                   min(limit, memory_config(datasette).max_request_bytes // 2))
        return {"ok": True, "events": events, "more": more}

    return await call_memory(datasette, pull)


def checked_holdings(value: dict[str, Any]) -> dict[str, dict[str, Any]]:
    "A peer's holdings, their shape checked."
    for machine, held in value.items():
        if not isinstance(held, dict) or not isinstance(held.get("clock"), int) or not isinstance(held.get("opaque"), list) \
                or not all(isinstance(run, list) and len(run) == 2 and all(isinstance(n, int) for n in run) for run in held["opaque"]):
            raise SyncRefused(f"holdings of machine {machine!r}: give {{\"clock\": N, \"opaque\": [[first, last], ...]}}")
    return value


@hookimpl(specname="register_routes")
def register_sync_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (r"^/-/memory/sync/holdings\.json$", sync_view(holdings_answer)),
        (r"^/-/memory/sync/push\.json$", sync_view(push_answer)),
        (r"^/-/memory/sync/pull\.json$", sync_view(pull_answer)),
    ]
