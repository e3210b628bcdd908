"""No credential through Datasette's own writes: its write API and write SQL refuse text that looks like one.

Memory's tables are closed to Datasette's writes (:mod:`.permissions`), but the
agent's own tables in the memory file keep whatever Datasette allows: inserts,
upserts, updates, ``/-/create``, ``/-/execute-write`` and stored write
queries. Every request but a GET or HEAD that Datasette routes to the memory
database (in any spelling its router accepts: :mod:`.routing`; with its method
in any case) is read whole, up to Datasette's ``max_post_body_bytes``, which
Datasette applies to these requests anyway, before Datasette sees it. It is
read as JSON, as a form and as text, and one whose values hold a likely secret
is refused with 400 in the shape of Datasette's own write errors, naming the
field and the kind found, so that the file holds no credential whichever door
wrote it. The memory pages' forms (``/-/memory/...``) go through the core,
which refuses the same way.
"""

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from datasette import hookimpl

from ..core.secrets import first_secret
from .connection import memory_database_name
from .routing import routed_database

Receive = Callable[[], Awaitable[dict[str, Any]]]


def submitted_values(body: bytes) -> dict[str, Any]:
    """
    A request body's values, read every way Datasette might read it: as JSON, as a
    form (Datasette reads a body that is not JSON as one, whatever its content type
    says, and percent-decodes it) and as the text itself.
    """
    text = body.decode("utf-8", "replace")
    values: dict[str, Any] = {}
    try:
        values["json"] = json.loads(text)
    except (ValueError, RecursionError):
        pass
    return {**values, "form": parse_qs(text, keep_blank_values=True), "text": text}


async def respond(send: Any, status: int, raw: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})


def too_large(max_bytes: int) -> bytes:
    error = f"the request body is over Datasette's max_post_body_bytes setting ({max_bytes:,} bytes); send less at a time"
    return json.dumps({"ok": False, "errors": [error], "error": error}).encode("utf-8")


def refusal(field: str, kind: str) -> bytes:
    "Datasette's write error shape, saying what was found where and what to do."
    error = (
        f"{field}: looks like a credential ({kind}); memory does not store credentials, "
        "in its own tables or the agent's. Remove it and send the request again"
    )
    return json.dumps({"ok": False, "errors": [error], "error": error}).encode("utf-8")


async def read_body(receive: Receive, max_bytes: int) -> tuple[list[dict[str, Any]], bool]:
    """
    Every message of a request's body, as the app would have received them, and
    whether it all came; reading stops past ``max_bytes`` (0: no limit).
    """
    messages, size = [], 0
    while True:
        message = await receive()
        messages.append(message)
        size += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body"):
            return messages, True
        if max_bytes and size > max_bytes:
            return messages, False


def replay(messages: list[dict[str, Any]], receive: Receive) -> Receive:
    "A ``receive`` that gives the held messages first, then the connection's own."
    held = list(messages)

    async def replayed() -> dict[str, Any]:
        return held.pop(0) if held else await receive()

    return replayed


# Datasette finds a view's handler by the method in lower case, so "post" writes as "POST" does
READS = ("GET", "HEAD")


def guarded(datasette: Any, scope: dict[str, Any]) -> bool:
    """
    A request that may write, sent to a path Datasette routes to the memory
    database however it spells it (the memory pages' routes check through the core).
    """
    may_write = scope.get("method", "").upper() not in READS
    return may_write and routed_database(datasette, scope) == memory_database_name(datasette)


@hookimpl(specname="asgi_wrapper")
def refuse_secrets_in_datasette_writes(datasette: Any) -> Callable[[Any], Any]:
    def wrap(app: Any) -> Callable[..., Awaitable[None]]:
        async def checked(scope: dict[str, Any], receive: Receive, send: Any) -> None:
            if scope["type"] != "http" or not guarded(datasette, scope):
                return await app(scope, receive, send)
            max_bytes = datasette.setting("max_post_body_bytes")
            messages, whole = await read_body(receive, max_bytes)
            if not whole:
                return await respond(send, 413, too_large(max_bytes))
            body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
            # the scan takes a few milliseconds a megabyte: off the event loop, so one request holds up no other
            found = await asyncio.to_thread(first_secret, submitted_values(body), "body")
            if found is None:
                return await app(scope, replay(messages, receive), send)
            await respond(send, 400, refusal(*found))

        return checked

    return wrap
