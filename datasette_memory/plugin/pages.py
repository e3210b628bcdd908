"""What every memory page and JSON endpoint shares: the database, the reader, the project, and the answer's form.

Every page under ``/-/memory`` has a JSON twin (the same path with ``.json``)
holding the same data; :func:`respond` renders one or the other. Failures are
raised as the core's errors and rendered in one place (:mod:`.errors`).
"""

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from datasette import Response
from datasette.resources import DatabaseResource
from itsdangerous import BadData

from ..core.errors import InvalidInput, MemoryStoreError, NotFound
from ..core.validation import DEFAULT_PROJECT
from ..memory import Memory
from ..overview import busiest_project, pending_by_project, project_names
from .connection import call_memory, memory_database, memory_database_name

T = TypeVar("T")
MAX_ID = 2**63 - 1  # SQLite's largest integer: no row has an id past it
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
PROJECT_COOKIE = "ds_memory_project"  # signed: the project the person last used, for the pages that name none
PROJECT_KEPT_SECONDS = 365 * 24 * 3600
# page name, path, label: the navigation every memory page shows
NAVIGATION = (
    ("overview", "/-/memory", "Overview"),
    ("review", "/-/memory/review", "Review"),
    ("search", "/-/memory/search", "Search"),
    ("ledger", "/-/memory/ledger", "Ledger"),
    ("integrity", "/-/memory/integrity", "Integrity"),
    ("sync", "/-/memory/sync", "Sync"),
)


class CannotView(MemoryStoreError, PermissionError):
    """The reader may not view the memory database."""


class NotServed(NotFound):
    """No memory database is being served under the configured name."""


async def viewable_database(datasette: Any, request: Any) -> Any:
    """
    The memory database, for a reader allowed to view it.

    :raises NotServed: if it is not being served
    :raises CannotView: without ``view-database`` on it
    """
    db = memory_database(datasette)
    if db is None:
        served = ", ".join(name for name in datasette.databases if name != "_internal") or "none"
        raise NotServed(
            f"no memory database named {memory_database_name(datasette)} is being served (served: {served}); "
            "serve the memory file with datasette-memory serve, or name its database under "
            "plugins: datasette-memory: database: in Datasette's configuration"
        )
    if not await datasette.allowed(action="view-database", resource=DatabaseResource(db.name), actor=request.actor):
        raise CannotView(f"reading memory needs view-database on the {db.name} database; sign in, or ask its owner")
    return db


async def known_projects(datasette: Any) -> list[str]:
    "Every project that has stored anything, and the default project."
    names = await memory_database(datasette).execute_fn(project_names)
    return sorted(set(names) | {DEFAULT_PROJECT})


async def chosen_project(datasette: Any, request: Any) -> str:
    """
    The project the request names (``?project=``). A page that names none shows
    the project the person used last (a signed cookie), else the one with the
    most recent activity; JSON, for scripts, the default one.

    :raises NotFound: for a project nothing was ever stored in, listing the known ones
    """
    given = request.args.get("project")
    if given:
        return await known_project(datasette, given)
    if request.path.endswith(".json"):
        return DEFAULT_PROJECT
    return await project_in_use(datasette, request)


async def project_in_use(datasette: Any, request: Any) -> str:
    "The project the person last used (:data:`PROJECT_COOKIE`), else the one with the newest event, else the default one."
    known = await known_projects(datasette)
    try:
        remembered = datasette.unsign(request.cookies.get(PROJECT_COOKIE, ""), PROJECT_COOKIE)["project"]
    except (BadData, KeyError, TypeError):
        remembered = None
    if remembered in known:
        return str(remembered)
    latest = await memory_database(datasette).execute_fn(busiest_project)
    return latest if latest in known else DEFAULT_PROJECT


def remember_project(datasette: Any, response: Response, project: str) -> None:
    "Remember ``project`` as the one the person is using, for the pages that name none."
    response.set_cookie(PROJECT_COOKIE, datasette.sign({"project": project}, PROJECT_COOKIE), max_age=PROJECT_KEPT_SECONDS, httponly=True)


async def known_project(datasette: Any, project: str, error: type[MemoryStoreError] = NotFound) -> str:
    "``project``, if something was stored in it (or it is the default); else ``error`` listing the known ones."
    known = await known_projects(datasette)
    if project not in known:
        raise error(f"project: there is no project {shown(project)}; the projects are {', '.join(known)}")
    return project


def entity_name(request: Any) -> str:
    "The entity the query string names (``?name=``), or an error saying to name one."
    name = request.args.get("name") or ""
    if not name:
        raise InvalidInput("name: say which entity, as ?name= (search finds entities by any of their names)")
    return name


def as_of_value(request: Any) -> str | None:
    "The moment the query string asks for (``?as_of=``: an event id or an ISO 8601 time), or None for now."
    given = [value.strip() for value in request.args.getlist("as_of") if value.strip()]
    return given[0] if given else None


async def chosen_moment(datasette: Any, request: Any) -> dict[str, Any] | None:
    """
    The moment ``?as_of=`` names, ``{event_id, ts, asked, head}`` (see
    :meth:`~datasette_memory.memory.Memory.moment`), or None to read memory as it is now.

    :raises InvalidInput: for anything but an event id or an ISO 8601 time, or an event beyond the ledger's head
    """
    value = as_of_value(request)
    if value is None:
        return None
    return await call_memory(datasette, lambda memory: memory.moment(value))


def actor_id(request: Any) -> str:
    "Who is reading, for the ledger's sake: the actor's id, else anonymous."
    return str((request.actor or {}).get("id") or "anonymous")


async def read_memory(datasette: Any, request: Any, function: Callable[[Memory], T]) -> T:
    """
    Run ``function(memory)`` for a reader allowed to view the memory database,
    in the project the request names.

    :raises CannotView: without view-database on the memory database
    :raises NotFound: for an unknown project
    """
    await viewable_database(datasette, request)
    return await call_memory(datasette, function, project=await chosen_project(datasette, request), actor=actor_id(request))


def path_id(request: Any) -> int:
    """
    The claim or fact id in the path. The routes take any segment there, so a
    mistyped one is answered here, saying what an id looks like, instead of
    falling through to a page that does not exist.

    :raises InvalidInput: for anything but a whole number written in ASCII digits
    :raises NotFound: for a number no row can have (0, or past SQLite's integers)
    """
    kind, value = request.url_vars["kind"], request.url_vars["id"]
    if not (value.isascii() and value.isdigit()):
        raise InvalidInput(
            f"id: {kind} are numbered 1, 2, 3 and on, got {shown(value)}; "
            f"open one from the review page (/-/memory/review), or by its number, as /-/memory/{kind}/12"
        )
    number = int(value)
    if not 0 < number <= MAX_ID:
        raise NotFound(f"id: there is no {kind[:-1]} #{number}; the review page (/-/memory/review) lists them")
    return number


def form_posted(request: Any) -> bool:
    "Whether the request's body is a form, as a browser posts one."
    return request.headers.get("content-type", "").split(";")[0].strip().lower() in FORM_TYPES


async def form_fields(request: Any) -> dict[str, str]:
    """
    The fields of the form a page posted.

    :raises InvalidInput: for a body that is not a form (a script's JSON: the JSON API takes it), or not UTF-8
    """
    if not form_posted(request):
        raise InvalidInput(
            "body: this page takes the fields of its own form; a script uses the JSON API "
            "(POST /-/memory/facts, /-/memory/claims/<id>/<act>) or the MCP tools"
        )
    try:
        return await request.post_vars()
    except UnicodeDecodeError:
        raise InvalidInput("body: a form's fields must be UTF-8; post the form from its page")


def int_arg(request: Any, name: str, default: int) -> int:
    "An integer query-string argument, or an error naming it."
    value = request.args.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidInput(f"{name}: must be an integer, got {shown(value)}")
    if not -MAX_ID - 1 <= number <= MAX_ID:
        raise InvalidInput(f"{name}: must be an integer SQLite can hold, from {-MAX_ID - 1} to {MAX_ID}, got {shown(value)}")
    return number


def shown(value: str, most: int = 60) -> str:
    "``value`` quoted for an error message, cut short if long: a message names what was wrong, it does not echo it all."
    return repr(value if len(value) <= most else value[:most] + "…")


def wants_json(request: Any) -> bool:
    "Whether the request asked for a page's JSON twin."
    return request.url_vars.get("format") == "json"


async def respond(datasette: Any, request: Any, page: str, template: str, data: dict[str, Any]) -> Response:
    """
    ``data`` as the page ``template`` for people, or as JSON for scripts.

    :param page: which navigation entry the page is under
    :param template: the page's template
    :param data: what the page shows: JSON-serializable
    """
    if wants_json(request):
        return Response.json({"ok": True, **data})
    return await render_page(datasette, request, template, page, data)


async def render_page(datasette: Any, request: Any, template: str, page: str | None, context: dict[str, Any], status: int = 200) -> Response:
    """
    A memory page for people: ``context`` in ``template``, with the navigation
    (``page`` marked as current) and the Tables link when the memory database is served.
    A page reading the past has its moment in ``context`` (``as_of``, from
    :func:`chosen_moment`); the template gets it as ``moment``, and its links
    keep it (``as_of_query``, to append to a query string).
    """
    served = memory_database(datasette)
    moment = context.get("as_of")
    context = {
        **context, "memory_page": page, "memory_navigation": NAVIGATION, "database": served.name if served else None,
        "moment": moment, "as_of_query": f"&as_of={moment['event_id']}" if moment else "",
        "memory_waiting_claims": await waiting_claims(datasette, request),
    }
    response = Response.html(await datasette.render_template(template, context, request=request), status=status)
    if status < 400 and isinstance(context.get("project"), str):
        remember_project(datasette, response, context["project"])
    return response


async def waiting_claims(datasette: Any, request: Any) -> list[tuple[str, int]]:
    "Each project's pending claims, for the navigation, if the reader may view the memory database; else none."
    served = memory_database(datasette)
    if served is None or not await datasette.allowed(action="view-database", resource=DatabaseResource(served.name), actor=request.actor):
        return []
    try:
        return list(await served.execute_fn(pending_by_project))
    except (sqlite3.Error, MemoryStoreError):  # a damaged or busy file: the page says so itself; the navigation goes without counts
        return []
