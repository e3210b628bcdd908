"""``/-/memory``: the overview page and its JSON, and the menu links to the memory pages."""

from typing import Any

from datasette import Response, hookimpl
from datasette.resources import DatabaseResource

from ..core.errors import InvalidInput
from ..overview import overview, overview_as_of
from .connection import memory_database
from .error_pages import handled
from .pages import NAVIGATION, chosen_moment, respond, shown, viewable_database

QUERIES_LISTED = 50


async def memory_overview(datasette: Any, request: Any) -> Response:
    """
    ``/-/memory`` and ``/-/memory.json``: projects, their counts and pending claims, and the chain status;
    ``?as_of=`` shows the projects as they were then, with their entities.
    """
    db = await viewable_database(datasette, request)
    check = request.args.get("check")
    if check not in (None, "chain"):
        raise InvalidInput(f"check: {shown(check)} is not something the overview checks; ?check=chain walks the whole hash chain")
    check_chain = True if check else None
    moment = await chosen_moment(datasette, request)
    if moment is None:
        summary = await db.execute_fn(lambda conn: overview(conn, check_chain))
    else:
        summary = {**(await db.execute_fn(lambda conn: overview_as_of(conn, moment["event_id"], check_chain))), "as_of": moment}
    data = {"database": db.name, "path": db.path, **summary, **(await stored_queries(datasette, db.name, request.actor))}
    return await respond(datasette, request, "overview", "memory_overview.html", data)


async def stored_queries(datasette: Any, database: str, actor: Any) -> dict[str, Any]:
    "The first stored queries this actor may run (name, title, description, path), and whether there are more."
    page = await datasette.list_queries(database, actor=actor, limit=QUERIES_LISTED)
    queries = [
        {"name": q.name, "title": q.title or q.name, "description": q.description, "path": datasette.urls.query(database, q.name)}
        for q in page.queries
    ]
    return {"queries": queries, "more_queries": page.has_more}


@hookimpl(specname="register_routes")
def register_overview_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory(\.(?P<format>json))?$", handled(memory_overview))]


@hookimpl
def menu_links(datasette: Any, actor: Any) -> Any:
    async def inner() -> list[dict[str, str]] | None:
        db = memory_database(datasette)
        if db and await datasette.allowed(action="view-database", resource=DatabaseResource(db.name), actor=actor):
            return [{"href": datasette.urls.path(path), "label": f"Memory: {label.lower()}"} for _, path, label in NAVIGATION]
        return None

    return inner
