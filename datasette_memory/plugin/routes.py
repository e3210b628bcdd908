"""Pages and JSON endpoints under ``/-/memory``."""

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
    data = {"database": db.name, "path": db.path, **(await db.execute_fn(overview))}
    if request.url_vars.get("format") == "json":
        return Response.json(data)
    return Response.html(
        await datasette.render_template("memory_overview.html", data, request=request)
    )


@hookimpl
def register_routes(datasette):
    return [(r"^/-/memory(\.(?P<format>json))?$", memory_overview)]
