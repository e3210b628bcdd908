"""``/-/memory/sync``: where events came from, when each peer last synced and what waits to go out (and its JSON)."""

from typing import Any

from datasette import Response, hookimpl

from ..sync.peer_status import sync_status
from .error_pages import handled
from .pages import respond, viewable_database


async def sync_page(datasette: Any, request: Any) -> Response:
    db = await viewable_database(datasette, request)
    return await respond(datasette, request, "sync", "memory_sync.html", await db.execute_fn(sync_status))


@hookimpl(specname="register_routes")
def register_sync_page(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory/sync(\.(?P<format>json))?$", handled(sync_page))]
