"""One MCP request over HTTP, read within the cap on its bytes and checked before the MCP app sees it.

The body is read as it arrives and never held past ``max_request_bytes``: a
``Content-Length`` over the cap is refused before the body is read, and a body
without one (chunked) is refused as soon as it passes the cap, with 413 and the
JSON-RPC error stdio sends for a line over the cap. A body within the cap is
checked as one MCP message by :mod:`mcp_bridge.wire`, the same check stdio
makes, so both doors answer a malformed message with the same code and words
(400 here). A good body is handed on to the MCP app by a ``receive`` that gives
it again.
"""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from datasette import Response

from mcp_bridge.wire import WireError, check_message, too_large

# bodies larger than this are checked in a thread, off Datasette's event loop
CHECK_INLINE_BYTES = 65_536
# how much of a body over the cap is kept, for its id
PREFIX_BYTES = 4096
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]


class RefusedRequest(Exception):
    """
    A request answered here, before the MCP app.

    :param status: the HTTP status
    :param error: the JSON-RPC error the body carries
    """

    def __init__(self, status: int, error: WireError):
        super().__init__(error.message)
        self.status, self.error = status, error

    def response(self) -> Response:
        return Response(self.error.to_bytes(), status=self.status, content_type="application/json")


async def checked_receive(scope: Scope, receive: Receive, max_bytes: int) -> Receive:
    """
    Read a POST's body within ``max_bytes`` and check it as one MCP message.

    :param scope: the ASGI scope
    :param receive: the ASGI receive the body comes from
    :param max_bytes: the most bytes the body may hold
    :return: a receive that gives the body to the MCP app again
    :raises RefusedRequest: 413 for a body over the cap, 400 for a malformed message
    """
    body = await read_body(scope, receive, max_bytes)
    try:
        if len(body) > CHECK_INLINE_BYTES:
            await asyncio.to_thread(check_message, body)
        else:
            check_message(body)
    except WireError as e:
        raise RefusedRequest(400, e)
    return replaying(body, receive)


async def read_body(scope: Scope, receive: Receive, max_bytes: int) -> bytes:
    "The request's body, or :class:`RefusedRequest` (413) once it is known to be over ``max_bytes``."
    declared = content_length(scope)
    if declared is not None and declared > max_bytes:
        first = await receive()
        raise RefusedRequest(413, too_large(declared, max_bytes, first.get("body", b"")[:PREFIX_BYTES]))
    body = bytearray()
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        if len(body) + len(chunk) > max_bytes:
            raise RefusedRequest(413, too_large(None, max_bytes, bytes(body[:PREFIX_BYTES]) or chunk[:PREFIX_BYTES]))
        body += chunk
        if message["type"] != "http.request" or not message.get("more_body"):
            return bytes(body)


def content_length(scope: Scope) -> int | None:
    "The body's size as the request declares it, if it does."
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def replaying(body: bytes, receive: Receive) -> Receive:
    "A receive that gives ``body`` as the whole request, then what ``receive`` gives (a disconnect)."
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def lift_sdk_body_cap(app: Any, max_bytes: int) -> None:
    """
    Let the MCP SDK take bodies up to ``max_bytes``: mcp 2.3.0's session manager
    refuses bodies over its own 4 MiB with a plain-text 413, and fastmcp 4.2.3's
    ``http_app`` has no way to set it, so a larger configured cap would still stop
    at 4 MiB. The bodies reaching it have passed :func:`read_body` already.

    :param app: the started MCP app (its lifespan creates the session manager)
    :param max_bytes: the configured cap
    """
    for route in getattr(app, "routes", []):
        manager = getattr(getattr(route, "endpoint", None), "session_manager", None)
        limit = getattr(manager, "asgi_app", None)
        if limit is not None and getattr(limit, "max_body_size", max_bytes) < max_bytes:
            limit.max_body_size = max_bytes
