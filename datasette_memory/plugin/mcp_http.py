"""MCP over streamable HTTP at ``/-/memory/mcp``, authenticated by Datasette API tokens.

``?tools=official|memory|all`` picks the tool profile (else the plugin setting
``mcp_tools``, else :data:`~mcp_bridge.profiles.DEFAULT_PROFILE`): one MCP app per profile.
"""

import asyncio
import weakref

from datasette import Response, hookimpl

from mcp_bridge.profiles import DEFAULT_PROFILE, check_profile

from ..core.errors import InvalidInput, MemoryStoreError
from .connection import PLUGIN_NAME, memory_config
from .error_pages import error_body, status_of
from .pages import viewable_database

MCP_PATH = "/-/memory/mcp"
MCP_METHODS = ("POST", "DELETE")  # stateless and answering in JSON: the SDK has no stream for a GET


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


def runner_for(datasette, profile: str) -> LifespanRunner:
    "One MCP app per Datasette instance and tool profile, built on first use."
    runners = _runners.setdefault(datasette, {})
    if profile not in runners:
        # imported on the first MCP request, so Datasette starts without loading fastmcp
        from mcp_bridge.server import create_server

        from .mcp_backend import DatasetteBackend

        server = create_server(DatasetteBackend(datasette), profile=profile)
        runners[profile] = LifespanRunner(
            server.http_app(path=MCP_PATH, stateless_http=True, json_response=True)
        )
    return runners[profile]


def configured_profile(datasette) -> str:
    "The tool profile the endpoint offers when a request names none: the plugin setting ``mcp_tools``, else the default."
    value = (datasette.plugin_config(PLUGIN_NAME) or {}).get("mcp_tools", DEFAULT_PROFILE)
    try:
        return check_profile(value, "mcp_tools")
    except InvalidInput as e:
        raise InvalidInput(f"plugins.{PLUGIN_NAME}.{e}; fix the Datasette configuration") from None


def requested_profile(datasette, request) -> str:
    "The tool profile a request asks for with ``?tools=``, else the configured one; :class:`InvalidInput` if unknown."
    if "tools" in request.args:
        return check_profile(request.args.get("tools"), "tools")
    return configured_profile(datasette)


def unauthorized(message: str) -> Response:
    return Response.json(
        {"ok": False, "error": message}, status=401, headers={"WWW-Authenticate": 'Bearer realm="datasette-memory"'}
    )


async def mcp_endpoint(scope, receive, send, datasette, request):
    """
    Forward to the MCP app once the caller has shown an API token and may see the
    memory database, and a POST's body is one well-formed MCP message within the cap.
    """
    if not request.headers.get("authorization", "").lower().startswith("bearer ") or request.actor is None:
        return unauthorized(
            "MCP over HTTP needs a Datasette API token: send 'Authorization: Bearer <token>' "
            "(create one with 'datasette-memory create-token ACTOR')"
        )
    try:
        await viewable_database(datasette, request)
    except MemoryStoreError as e:  # answered as MCP's other refusals are, in JSON: a script is asking
        return Response.json(error_body(e), status=status_of(e))
    if scope["method"] not in MCP_METHODS:
        return Response.json(
            {"ok": False, "error": f"MCP over HTTP takes {' and '.join(MCP_METHODS)}; this server answers each POST in JSON, with no stream to GET"},
            status=405, headers={"Allow": ", ".join(MCP_METHODS)},
        )
    try:
        profile = requested_profile(datasette, request)
    except InvalidInput as e:
        return Response.json(
            {"ok": False, "error": f"{e}: add ?tools=official, ?tools=memory or ?tools=all to the URL"}, status=400
        )
    from .mcp_request import RefusedRequest, checked_receive, lift_sdk_body_cap  # on the first MCP request, as fastmcp is

    max_bytes = memory_config(datasette).max_request_bytes
    if scope["method"] == "POST":
        try:
            receive = await checked_receive(scope, receive, max_bytes)
        except RefusedRequest as e:
            return e.response()
    runner = runner_for(datasette, profile)
    await runner.ensure_started()
    lift_sdk_body_cap(runner.app, max_bytes)
    await runner.app(dict(scope, path=MCP_PATH), receive, send)


@hookimpl(specname="register_routes")
def register_mcp_routes(datasette):
    return [(r"^/-/memory/mcp/?$", mcp_endpoint)]


@hookimpl(specname="startup")
def check_mcp_tools(datasette):
    configured_profile(datasette)  # a mistake in the configuration stops the server here, not on a request


@hookimpl(specname="shutdown")
def stop_mcp(datasette):
    async def inner():
        for runner in _runners.get(datasette, {}).values():
            await runner.stop()

    return inner
