"""``/-/memory/search``: ranked search for people (a page) and scripts (JSON), in the project asked for.

``&as_of=`` (an event id or an ISO 8601 time) searches memory as it was then.
"""

from typing import Any

from datasette import Response, hookimpl

from ..core.errors import InvalidInput
from ..search.memory_search import DEFAULT_BUDGET, DEFAULT_LIMIT
from .error_pages import handled
from .pages import (
    as_of_value,
    chosen_moment,
    chosen_project,
    int_arg,
    known_projects,
    read_memory,
    render_page,
    viewable_database,
)


async def run_search(datasette: Any, request: Any) -> dict[str, Any]:
    "The search the query string asks for: ``q``, ``project``, ``limit``, ``budget``, ``expand``, ``as_of``."
    query = request.args.get("q", "")
    limit, budget = int_arg(request, "limit", DEFAULT_LIMIT), int_arg(request, "budget", DEFAULT_BUDGET)
    expand = request.args.get("expand") in ("1", "on", "true")
    as_of = as_of_value(request)
    return await read_memory(datasette, request, lambda memory: memory.search_memory(query, limit, budget, expand, as_of=as_of))


async def search_json(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/search.json?q=&project=&limit=&budget=&expand=&as_of=``"
    return Response.json({"ok": True, **(await run_search(datasette, request))})


async def search_page(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/search``: a form, and results with why each is there, in the project the form shows, now or as of a moment."
    await viewable_database(datasette, request)
    project = await chosen_project(datasette, request)
    context = {
        "q": request.args.get("q", ""),
        "project": project,
        "expand": request.args.get("expand") in ("1", "on", "true"),
        "projects": await known_projects(datasette),
        "as_of": await chosen_moment(datasette, request),  # a bad moment is the page's error, not the search's
        "found": None,
        "error": None,
    }
    if context["q"]:
        try:
            context["found"] = await run_search(datasette, request)
        except InvalidInput as e:
            context["error"] = str(e)
    return await render_page(datasette, request, "memory_search.html", "search", context)


@hookimpl(specname="register_routes")
def register_search_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (r"^/-/memory/search\.json$", handled(search_json)),
        (r"^/-/memory/search$", handled(search_page)),
    ]
