"""``/-/memory``: the overview page and its JSON, and the menu link to it."""

from datasette import Response, hookimpl
from datasette.resources import DatabaseResource

from ..overview import overview
from .connection import memory_database, memory_database_name


async def memory_overview(datasette, request):
    "``/-/memory`` and ``/-/memory.json``: projects, counts and the chain status."
    db = memory_database(datasette)
    if db is None:
        return Response.error(f"No memory database named {memory_database_name(datasette)} is being served", 404)
    await datasette.ensure_permission(
        action="view-database", resource=DatabaseResource(db.name), actor=request.actor
    )
    data = {
        "database": db.name,
        "path": db.path,
        **(await db.execute_fn(overview)),
        **(await stored_queries(datasette, db.name, request.actor)),
    }
    if request.url_vars.get("format") == "json":
        return Response.json(data)
    return Response.html(
        await datasette.render_template("memory_overview.html", {**data, "memory_page": "overview"}, request=request)
    )


QUERIES_LISTED = 50


async def stored_queries(datasette, database: str, actor) -> dict:
    "The first stored queries this actor may run (name, title, description, path), and whether there are more."
    page = await datasette.list_queries(database, actor=actor, limit=QUERIES_LISTED)
    queries = [
        {"name": q.name, "title": q.title or q.name, "description": q.description, "path": datasette.urls.query(database, q.name)}
        for q in page.queries
    ]
    return {"queries": queries, "more_queries": page.has_more}


@hookimpl(specname="register_routes")
def register_overview_routes(datasette):
    return [(r"^/-/memory(\.(?P<format>json))?$", memory_overview)]


@hookimpl
def menu_links(datasette, actor):
    async def inner():
        db = memory_database(datasette)
        if db and await datasette.allowed(action="view-database", resource=DatabaseResource(db.name), actor=actor):
            return [
                {"href": datasette.urls.path("/-/memory"), "label": "Memory"},
                {"href": datasette.urls.path("/-/memory/search"), "label": "Search memory"},
            ]

    return inner
