"""The first answer: ``initialize`` answered before the MCP framework is imported, in the framework's own bytes.

The stdio server answers a plain ``initialize`` request from :mod:`mcp_bridge.opening`
while it imports fastmcp; the framework's session then gets the request too and its
answer is not sent again. These tests hold the two answers side by side (for every
profile and protocol version, and for generated requests, answered by a real server
in-process), show that the answer does not wait for the framework (a server whose
build cannot finish until the answer has arrived), and that what the opening holds
(protocol versions, the tools its instructions name) is what the SDK and the tools say.
"""

import io
import json
import os
import re
import subprocess
import sys
from importlib.metadata import version

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_bridge import opening
from mcp_bridge.backends import LocalBackend
from mcp_bridge.opening import INSTRUCTIONS, NAMED_TOOLS, SERVER_NAME, Opening, instructions_for, plain_initialize
from mcp_bridge.profiles import PROFILES
from mcp_bridge.server import TOOL_MODULES, create_server
from mcp_bridge.stdio import FrameWriter, LineReader, serve_stdio_async

VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01", ""]
# request shapes clients send: no capabilities, roots, sampling and elicitation, a title beside the name
CLIENTS = [
    ({}, {"name": "an-editor", "version": "1.0.0"}),
    ({"roots": {}}, {"name": "a-cli", "version": "2.0.31"}),
    ({"roots": {"listChanged": True}, "sampling": {}, "elicitation": {}}, {"name": "an-agent", "title": "An Agent", "version": "0.5"}),
    ({"elicitation": {"form": {}, "url": {}}, "sampling": {"context": {}, "tools": {}}}, {"name": "x", "version": "1", "websiteUrl": "https://x.example"}),
]


def initialize(protocol_version="2025-06-18", capabilities=None, client=None, id=1) -> bytes:
    params = {"protocolVersion": protocol_version, "capabilities": capabilities or {}, "clientInfo": client or {"name": "t", "version": "1"}}
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params}).encode()


def first_answer(profile: str) -> Opening:
    return Opening(SERVER_NAME, version("datasette-memory"), instructions_for(profile))


@pytest.fixture(scope="module")
def servers(tmp_path_factory, request):
    "A real server of each profile, on one memory file."
    from datasette_memory import Config, SearchSettings

    backend = LocalBackend(tmp_path_factory.mktemp("opening") / "memory.db", config=Config(search=SearchSettings(semantic=False)))
    request.addfinalizer(backend.close)
    return {profile: create_server(backend, profile=profile) for profile in PROFILES}


def framework_answer(server, line: bytes) -> bytes:
    "What the server's session sends for ``line`` (the framework alone: no opening), up to the end of its first line."
    sent = io.BytesIO()
    anyio.run(serve_stdio_async, server, LineReader(io.BytesIO(line + b"\n"), 1_000_000), FrameWriter(sent))
    return sent.getvalue().split(b"\n")[0]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("protocol_version", VERSIONS)
def test_the_opening_answers_as_the_framework_does(servers, profile, protocol_version):
    for capabilities, client in CLIENTS:
        line = initialize(protocol_version, capabilities, client)
        answered = first_answer(profile).answer(line)
        assert answered is not None, (capabilities, client)
        assert answered == (1, framework_answer(servers[profile], line))


# what a generated request has changed from a plain one: nothing, or the part at this path
CHANGES = [
    (), ("id",), ("jsonrpc",), ("method",), ("params",), ("params", "protocolVersion"), ("params", "capabilities"),
    ("params", "clientInfo"), ("params", "clientInfo", "name"), ("params", "clientInfo", "version"),
    ("params", "clientInfo", "icons"), ("params", "capabilities", "roots"), ("params", "capabilities", "elicitation"),
    ("params", "capabilities", "experimental"), ("params", "capabilities", "tasks"), ("params", "_meta"), ("extra",),
]


def requests(change):
    "Plain initialize requests, with the part at ``change`` (a path) set to something else a client might send."
    text = st.text(max_size=8) | st.sampled_from(["\ud800", "é", ""])
    anything = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**60), st.floats(allow_nan=False), text,
                         st.just({}), st.just([]), st.just({"form": {}}), st.just({"listChanged": True}), st.just({"x": 1}))
    known_flags = {"roots": st.fixed_dictionaries({}, optional={"listChanged": st.booleans()}),
                   "sampling": st.fixed_dictionaries({}, optional={"context": st.just({}), "tools": st.just({})}),
                   "elicitation": st.fixed_dictionaries({}, optional={"form": st.just({}), "url": st.just({})})}
    client = st.fixed_dictionaries({"name": text, "version": text},
                                   optional={"title": text, "description": text, "websiteUrl": st.just("https://x.example")})
    plain = st.fixed_dictionaries({
        "jsonrpc": st.just("2.0"), "id": st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=20), "method": st.just("initialize"),
        "params": st.fixed_dictionaries({"protocolVersion": st.sampled_from(VERSIONS) | text,
                                         "capabilities": st.fixed_dictionaries({}, optional=known_flags), "clientInfo": client}),
    })

    def changed(message, value):
        place = message
        for key in change[:-1]:
            place = place[key]
        place[change[-1]] = value
        return message

    requests = st.tuples(plain, text | anything).map(lambda t: changed(*t)) if change else plain
    return requests.map(lambda m: json.dumps(m).encode())


@pytest.mark.parametrize("change", CHANGES, ids=["plain"] + [".".join(change) for change in CHANGES[1:]])
def test_whatever_the_opening_answers_the_framework_answers_alike(servers, change):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(line=requests(change))
    def check(line):
        answered = first_answer("memory").answer(line)
        if answered is not None:
            assert answered[1] == framework_answer(servers["memory"], line)

    check()


def test_the_opening_leaves_the_rest_to_the_framework():
    assert plain_initialize(initialize()) == (1, "2025-06-18")
    assert plain_initialize(initialize(id="call-1")) == ("call-1", "2025-06-18")
    not_plain = [
        b"hello", initialize()[:-1], initialize() + b" []", initialize(capabilities={"experimental": {}}),
        initialize(capabilities={"roots": {"listChanged": "yes"}}), initialize(capabilities={"sampling": {"tools": {"x": 1}}}),
        initialize(client={"name": "t"}), initialize(client={"name": "t", "version": 1}), initialize(protocol_version=20250618),
        initialize(id=True), initialize(id=None), initialize(id=2**60), initialize(client={"name": "\ud800", "version": "1"}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}).encode(),
        initialize().replace(b'"method"', b'"extra": 1, "method"'), "é".encode("latin-1") + initialize(),
    ]
    assert [line for line in not_plain if plain_initialize(line) is not None] == []


def test_what_the_opening_holds_is_what_the_sdk_and_the_tools_say(servers):
    assert opening.HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    profiles = {function.__name__: function.spec.profile for module in TOOL_MODULES for function in module.TOOLS}
    named = {word for word in re.findall(r"\w+", INSTRUCTIONS) if word in profiles and "_" in word}  # "checkpoint" is also a word
    assert NAMED_TOOLS == {name: profiles[name] for name in named}
    for profile, server in servers.items():
        assert server.instructions == instructions_for(profile)
    assert "get_resume_context" in instructions_for("memory") and "get_resume_context" not in instructions_for("official")


# a server whose build cannot finish before the test has read the answer to initialize
WAITING_SERVER = """
import pathlib, sys, time
from mcp_bridge.opening import Opening
from mcp_bridge.stdio import serve_stdio

go = pathlib.Path(sys.argv[1])

def build():
    assert "fastmcp" not in sys.modules
    while not go.exists():
        time.sleep(0.01)
    from fastmcp import FastMCP
    return FastMCP("waiting", instructions="Be brief.", version="1")

serve_stdio(build, max_request_bytes=1_000_000, opening=Opening("waiting", "1", "Be brief."))
"""


def waiting_server(tmp_path):
    go = tmp_path / "go"
    process = subprocess.Popen([sys.executable, "-c", WAITING_SERVER, str(go)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return process, go


def send(process, message):
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def test_initialize_is_answered_before_the_framework_is_imported_and_once(tmp_path):
    process, go = waiting_server(tmp_path)
    try:
        process.stdin.write(initialize() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())  # the build waits for go: this answer cannot need it
        assert answer["id"] == 1 and answer["result"]["serverInfo"] == {"name": "waiting", "version": "1"}
        assert answer["result"]["instructions"] == "Be brief."
        go.touch()
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}  # not initialize again
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0, process.stderr.read().decode()
    assert b"differed" not in process.stderr.read()


def test_a_first_message_that_is_not_plain_is_the_frameworks_to_answer(tmp_path):
    process, go = waiting_server(tmp_path)
    try:
        process.stdin.write(initialize(capabilities={"experimental": {"x": {}}}) + b"\n" + b"not json\n")
        process.stdin.flush()
        go.touch()
        # the parse error may go first: the reading thread answers a malformed line as soon as it reads it
        replies = [json.loads(process.stdout.readline()), json.loads(process.stdout.readline())]
        (answer,) = [reply for reply in replies if "result" in reply]
        (error,) = [reply for reply in replies if "error" in reply]
        assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "waiting"
        assert error["error"]["code"] == -32700 and error["id"] is None
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0


def test_the_memory_server_answers_initialize_once_then_serves(tmp_path):
    "``datasette-memory mcp`` itself: one answer to initialize, then tools, on a file whose pages were checked meanwhile."
    from datasette_memory import Memory

    path = tmp_path / "memory.db"
    Memory.open(path).close()
    process = subprocess.Popen([sys.executable, "-m", "datasette_memory", "mcp", "--db", str(path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"})
    try:
        process.stdin.write(initialize(protocol_version="2025-03-26") + b"\n")
        send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}})
        assert json.loads(process.stdout.readline())["result"]["protocolVersion"] == "2025-03-26"
        assert json.loads(process.stdout.readline())["id"] == 2
    finally:
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    stderr = process.stderr.read().decode()
    assert "Witness:" in stderr and "differed" not in stderr
