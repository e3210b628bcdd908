"""``/-/memory/search``: ranked search for people (a page) and scripts (JSON)."""

from datasette import Response, hookimpl
from datasette.resources import DatabaseResource

from ..core.errors import MemoryStoreError
from ..core.validation import DEFAULT_PROJECT
from ..overview import project_names
from ..search.memory_search import DEFAULT_BUDGET, DEFAULT_LIMIT
from .connection import memory_database
from .json_api import int_arg, json_errors, read_memory


async def run_search(datasette, request) -> dict:
    "The search the query string asks for: ``q``, ``project``, ``limit``, ``budget``, ``expand``."
    query = request.args.get("q", "")
    limit, budget = int_arg(request, "limit", DEFAULT_LIMIT), int_arg(request, "budget", DEFAULT_BUDGET)
    expand = request.args.get("expand") in ("1", "on", "true")
    return await read_memory(datasette, request, lambda memory: memory.search_memory(query, limit, budget, expand))


@json_errors
async def search_json(datasette, request):
    "``GET /-/memory/search.json?q=&project=&limit=&budget=&expand=``"
    return Response.json({"ok": True, **(await run_search(datasette, request))})


async def search_page(datasette, request):
    "``GET /-/memory/search``: a form, and results with why each is there."
    db = memory_database(datasette)
    if db is None:
        return Response.error("No memory database is being served", 404)
    await datasette.ensure_permission(action="view-database", resource=DatabaseResource(db.name), actor=request.actor)
    context = {
        "database": db.name,
        "memory_page": "search",
        "q": request.args.get("q", ""),
        "project": request.args.get("project") or DEFAULT_PROJECT,
        "expand": request.args.get("expand") in ("1", "on", "true"),
        "projects": await db.execute_fn(project_names),
        "found": None,
        "error": None,
    }
    if context["q"]:
        try:
            context["found"] = await run_search(datasette, request)
        except MemoryStoreError as e:
            context["error"] = str(e)
    return Response.html(await datasette.render_template("memory_search.html", context, request=request))


@hookimpl(specname="register_routes")
def register_search_routes(datasette):
    return [
        (r"^/-/memory/search\.json$", search_json),
        (r"^/-/memory/search$", search_page),
    ]
