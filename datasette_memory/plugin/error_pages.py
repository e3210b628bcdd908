"""Errors from the memory pages and endpoints, rendered in one place: JSON for scripts, a page for people.

The core's errors say what was wrong and what to do; this maps each kind to a
status (403 without permission, 404 for something missing, 400 for bad input)
and renders it. A script gets ``{"ok": false, "error", "field"}``; a person
gets the memory pages' navigation and the message.
"""

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from datasette import Response

from ..core.errors import InvalidInput, MemoryStoreError, NotFound
from .pages import render_page

STATUS = {PermissionError: 403, NotFound: 404, InvalidInput: 400}
View = Callable[[Any, Any], Awaitable[Response]]
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


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
    "A page was asked for (a GET not ending .json), or a form was posted: answer with a page."
    if request.method in ("GET", "HEAD"):
        return not request.path.endswith(".json")
    return request.headers.get("content-type", "").split(";")[0].strip() in FORM_TYPES


async def render_error(datasette: Any, request: Any, error: MemoryStoreError) -> Response:
    "The page or JSON for one of the core's errors."
    status = status_of(error)
    if not for_a_person(request):
        return Response.json(error_body(error), status=status)
    return await render_page(datasette, request, "memory_error.html", None, {"status": status, "message": str(error)}, status)


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
