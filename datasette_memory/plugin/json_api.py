"""What every JSON endpoint under ``/-/memory`` shares: errors, reading, arguments."""

from datasette import Response
from datasette.resources import DatabaseResource

from ..core.errors import InvalidInput, MemoryStoreError, NotFound
from ..core.validation import DEFAULT_PROJECT
from .connection import call_memory, memory_database, memory_database_name


class CannotView(MemoryStoreError, PermissionError):
    """The reader may not view the memory database."""


STATUS = {PermissionError: 403, NotFound: 404, InvalidInput: 400}


def error_response(error: MemoryStoreError) -> Response:
    "A JSON error: 403 without permission, 404 for something missing, 400 naming the bad field."
    status = next((code for cls, code in STATUS.items() if isinstance(error, cls)), 400)
    message = str(error)
    prefix = message.split(":", 1)[0]
    body = {"ok": False, "error": message, "field": prefix if " " not in prefix and ":" in message else None}
    if getattr(error, "rejection", None):
        body["rejection"] = error.rejection
    return Response.json(body, status=status)


def json_errors(view):
    "Turn the core's errors into JSON responses."

    async def inner(datasette, request):
        if memory_database(datasette) is None:
            return Response.json(
                {"ok": False, "error": f"no memory database named {memory_database_name(datasette)} is being served"},
                status=404,
            )
        try:
            return await view(datasette, request)
        except MemoryStoreError as e:
            return error_response(e)

    return inner


async def read_memory(datasette, request, function):
    """
    Run ``function(memory)`` for a reader allowed to view the memory database,
    scoped to the ``project`` query-string argument.

    :raises CannotView: without view-database on the memory database
    """
    db = memory_database(datasette)
    if not await datasette.allowed(action="view-database", resource=DatabaseResource(db.name), actor=request.actor):
        raise CannotView(f"reading memory needs view-database on the {db.name} database")
    return await call_memory(
        datasette,
        function,
        project=request.args.get("project") or DEFAULT_PROJECT,
        actor=str((request.actor or {}).get("id") or "anonymous"),
    )


def int_arg(request, name: str, default: int) -> int:
    "An integer query-string argument, or an error naming it."
    value = request.args.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"{name}: must be an integer, got {value!r}")
