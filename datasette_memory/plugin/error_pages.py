"""Errors from the memory pages and endpoints, rendered in one place: JSON for scripts, a page for people.

The core's errors say what was wrong and what to do; this maps each kind to a
status (403 without permission, 404 for something missing, 400 for bad input)
and renders it. A script gets ``{"ok": false, "error", "field"}``; a person
gets the memory pages' navigation and the message.

The file's own failures (a full disk, a lock held too long, a damaged file),
on any page, are said in one line too (:func:`render_file_failure`), and
logged at most once a minute per kind instead of with a traceback per request.
Datasette's own refusals under ``/-/memory`` (a path no memory route has, a
body too large, a permission it checks itself) are rendered here as well
(:func:`render_client_error`): Datasette's handler would print a traceback for
each, and for a path no route matched it fails outright, inside ``rich``.
"""

import functools
import logging
import pathlib
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from datasette import Response, hookimpl
from datasette.utils.asgi import Base400

from ..core.errors import InvalidInput, MemoryStoreError, NotFound
from ..core.file_errors import DISK_FULL, LOCKED, FileFailure, file_failure
from ..core.log_throttle import LogThrottle
from .connection import memory_database
from .pages import NAVIGATION, form_posted, render_page, shown


class WrongMethod(MemoryStoreError):
    """The endpoint takes another method: a POST with a JSON body where a GET was sent."""


STATUS = {PermissionError: 403, NotFound: 404, InvalidInput: 400, WrongMethod: 405}
# a file's failure: 507 Insufficient Storage for a full disk, 503 for a lock to wait out, else 500
FAILURE_STATUS = {DISK_FULL: 507, LOCKED: 503}
_failure_logs: "weakref.WeakKeyDictionary[Any, LogThrottle]" = weakref.WeakKeyDictionary()
View = Callable[[Any, Any], Awaitable[Response]]


def status_of(error: MemoryStoreError) -> int:
    return next((code for cls, code in STATUS.items() if isinstance(error, cls)), 400)


def error_body(error: MemoryStoreError) -> dict[str, Any]:
    "The JSON of an error: the message, and the field it names (the part before the first colon, if a name)."
    message = str(error)
    prefix = message.split(":", 1)[0]
    body: dict[str, Any] = {"ok": False, "error": message, "field": prefix if " " not in prefix and ":" in message else None}
    if getattr(error, "rejection", None):
        body["rejection"] = error.rejection  # type: ignore[attr-defined]
    return body


def for_a_person(request: Any) -> bool:
    "A page was asked for (a GET not ending .json), or a form was posted to a page: answer with a page."
    if request.path.endswith(".json"):
        return False
    return request.method in ("GET", "HEAD") or form_posted(request)


async def render_error(datasette: Any, request: Any, error: MemoryStoreError) -> Response:
    "The page or JSON for one of the core's errors."
    status = status_of(error)
    if not for_a_person(request):
        return Response.json(error_body(error), status=status)
    return await render_page(datasette, request, "memory_error.html", None, {"status": status, "message": str(error)}, status)


def under_memory(datasette: Any, request: Any) -> bool:
    "Whether the request is for ``/-/memory`` or a path under it."
    root = datasette.urls.path("/-/memory")
    return request.path == root or request.path.startswith((root + "/", root + "."))


async def render_client_error(datasette: Any, request: Any, exception: Base400) -> Response:
    "Datasette's own refusal of a memory request (a body too large, say), as the page or JSON the memory errors are."
    message = str(exception.args[0]) if exception.args else type(exception).__name__
    if not for_a_person(request):
        return Response.json({"ok": False, "error": message, "field": None}, status=exception.status)
    return await render_page(datasette, request, "memory_error.html", None, {"status": exception.status, "message": message}, exception.status)


async def no_such_page(datasette: Any, request: Any) -> Response:
    "A path under /-/memory that no memory route has: the pages there are, instead of Datasette's row page for a database named '-'."
    pages = ", ".join(f"{label} ({datasette.urls.path(path)})" for _, path, label in NAVIGATION)
    raise NotFound(f"there is no memory page at {shown(request.path, 200)}; the memory pages are {pages}, and an entity's, at /-/memory/entity?name=")


@hookimpl(specname="register_routes", trylast=True)
def register_unknown_memory_paths(datasette: Any) -> list[tuple[str, Any]]:
    "After every other route under /-/memory, whichever hook registered it (trylast)."
    return [(r"^/-/memory[/.].*$", handled(no_such_page))]


def handled(view: View) -> View:
    """
    ``view`` with the core's errors rendered by :func:`render_error`. Every memory
    route is registered through it. (Datasette's ``handle_exception`` hook would
    do the same, but Datasette's own handler then prints a traceback for each
    one, and these are a reader's mistakes, not the server's.)
    """

    @functools.wraps(view)
    async def inner(datasette: Any, request: Any) -> Response:
        try:
            return await view(datasette, request)
        except MemoryStoreError as e:
            return await render_error(datasette, request, e)

    return inner


@hookimpl(wrapper=True)
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """
    A file's failure as one line, and Datasette's refusals under ``/-/memory`` as
    memory's error pages, instead of Datasette's page and the traceback its own
    handler prints for every request: a wrapper, so that handler's response
    (and its printing) is replaced, never run.
    """
    responses = yield
    if isinstance(exception, Base400) and under_memory(datasette, request):

        async def refused() -> Response:
            return await render_client_error(datasette, request, exception)

        return [refused]
    db = memory_database(datasette)
    path = db.path if db is not None else None
    # a visitor is told the file's name, not where it is on the server
    failure = file_failure(exception, path, shown_as=pathlib.Path(path).name if path else None)
    if failure is None:
        return responses
    failure_log = _failure_logs.setdefault(datasette, LogThrottle(logging.getLogger("datasette_memory.plugin")))
    failure_log.log(failure.kind, f"{request.method} {request.path}: {failure.message}")

    async def inner() -> Response:
        return await render_file_failure(datasette, request, failure)

    return [inner]


async def render_file_failure(datasette: Any, request: Any, failure: FileFailure) -> Response:
    "The page or JSON saying a file's failure; plain text if even the page cannot be rendered."
    status = FAILURE_STATUS.get(failure.kind, 500)
    if not for_a_person(request):
        return Response.json({"ok": False, "error": failure.message, "status": status}, status=status)
    try:
        return await render_page(datasette, request, "memory_error.html", None, {"status": status, "message": failure.message}, status)
    except Exception:  # the page's own reads fail the same way
        return Response.text(failure.message, status=status)
