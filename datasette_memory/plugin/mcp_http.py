"""MCP over streamable HTTP at ``/-/memory/mcp``, authenticated by Datasette API tokens."""

import asyncio
import weakref

from datasette import Response, hookimpl
from datasette.resources import DatabaseResource

from .connection import memory_database

MCP_PATH = "/-/memory/mcp"


class LifespanRunner:
    """
    Runs the MCP app's lifespan in a task: Datasette never forwards lifespan
    events to an app it routes to, and the MCP session manager needs one.

    :param app: the MCP server's Starlette app
    """

    def __init__(self, app):
        self.app = app
        self.loop = None
        self.task = None

    async def _run(self, ready: asyncio.Event, stop: asyncio.Event):
        async with self.app.router.lifespan_context(self.app):
            ready.set()
            await stop.wait()

    async def ensure_started(self):
        "Start the lifespan once per event loop and wait until it is up."
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self.loop, self.ready, self.stop_event = loop, asyncio.Event(), asyncio.Event()
            self.task = loop.create_task(self._run(self.ready, self.stop_event))
        ready = asyncio.ensure_future(self.ready.wait())
        await asyncio.wait([ready, self.task], return_when=asyncio.FIRST_COMPLETED)
        if self.task.done():
            ready.cancel()
            self.task.result()

    async def stop(self):
        if self.task is not None and self.loop is asyncio.get_running_loop():
            self.stop_event.set()
            await self.task
            self.loop = self.task = None


_runners = weakref.WeakKeyDictionary()


def runner_for(datasette) -> LifespanRunner:
    "One MCP app per Datasette instance, built on first use."
    if datasette not in _runners:
        # imported on the first MCP request, so Datasette starts without loading fastmcp
        from mcp_bridge.server import create_server

        from .mcp_backend import DatasetteBackend

        server = create_server(DatasetteBackend(datasette))
        _runners[datasette] = LifespanRunner(
            server.http_app(path=MCP_PATH, stateless_http=True, json_response=True)
        )
    return _runners[datasette]


def unauthorized(message: str) -> Response:
    return Response.json(
        {"ok": False, "error": message}, status=401, headers={"WWW-Authenticate": 'Bearer realm="datasette-memory"'}
    )


async def mcp_endpoint(scope, receive, send, datasette, request):
    "Forward to the MCP app once the caller has shown an API token and may see the memory database."
    if not request.headers.get("authorization", "").lower().startswith("bearer ") or request.actor is None:
        return unauthorized(
            "MCP over HTTP needs a Datasette API token: send 'Authorization: Bearer <token>' "
            "(create one with 'datasette-memory create-token ACTOR')"
        )
    db = memory_database(datasette)
    await datasette.ensure_permission(action="view-database", resource=DatabaseResource(db.name), actor=request.actor)
    runner = runner_for(datasette)
    await runner.ensure_started()
    await runner.app(dict(scope, path=MCP_PATH), receive, send)


@hookimpl(specname="register_routes")
def register_mcp_routes(datasette):
    return [(r"^/-/memory/mcp/?$", mcp_endpoint)]


@hookimpl(specname="shutdown")
def stop_mcp(datasette):
    async def inner():
        if datasette in _runners:
            await _runners[datasette].stop()

    return inner
