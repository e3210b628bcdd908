"""Malformed MCP messages and oversized requests, over a real stdio server and over HTTP.

Every malformed message gets a JSON-RPC error back, with its id when it can be
read, and the server goes on answering; a request over the cap is refused
before it is parsed, without holding it in memory. Both doors give the same
code and message, from :mod:`mcp_bridge.wire`.
"""

import http.client
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from datasette.app import Datasette

from datasette_memory import Memory
from datasette_memory.cli import cli
from mcp_bridge.wire import WireError, check_message

from .serving import serving

INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "test_stdio_wire", "version": "1"},
}
# (what it is, the bytes sent, the JSON-RPC code expected, the id the error carries, words the message holds)
MALFORMED = [
    ("not JSON", b"hello, server", -32700, None, "not JSON"),
    ("a batch", b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600, None, "no batches"),
    (
        "a lone surrogate",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_entities","arguments":'
        b'{"entities":[{"name":"half \\ud800 a pair","entityType":"t","observations":[]}]}}}',
        -32700,
        3,
        "lone surrogate",
    ),
    (
        "nesting 200 deep",
        b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":' + b"[" * 200 + b"]" * 200 + b"}}",
        -32700,
        4,
        "more than 64 deep",
    ),
    (
        "invalid UTF-8",
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"create_entities","arguments":'
        b'{"entities":[{"name":"caf\xe9","entityType":"t","observations":["\xff\xfe"]}]}}}',
        -32700,
        5,
        "not valid UTF-8",
    ),
    ("an object that is no JSON-RPC message", b'{"hello": "world"}', -32600, None, "not a JSON-RPC message"),
    ("a method that is not a string", b'{"jsonrpc":"2.0","id":7,"method":42}', -32600, 7, "method: Input should be a valid"),
    (
        "a readable id and a bad field",
        b'{"jsonrpc":"2.0","id":"call-8","method":"tools/call","params":"read_graph"}',
        -32600,
        "call-8",
        "params: Input should be a valid dictionary",
    ),
    ("a null id", b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None, "id: must be a string or an integer"),
    ("NaN", b'{"jsonrpc":"2.0","id":10,"method":"tools/list","params":{"cursor":NaN}}', -32700, 10, "NaN is not JSON"),
    # found by a review: Python refuses integers of more than 4,300 digits with a bare ValueError, which killed the server
    ("a 5,000-digit number", b'{"jsonrpc":"2.0","id":11,"method":"ping","params":{"a":' + b"9" * 5000 + b"}}", -32700, 11,
     "cannot be read"),
]
IDS = [case[0] for case in MALFORMED]


class RawStdio:
    """
    A real stdio MCP server in a subprocess, spoken to a line at a time by a
    client that sends whatever bytes it likes.

    :param arguments: what to run after ``python``
    """

    def __init__(self, *arguments, env=None):
        self.process = subprocess.Popen(
            [sys.executable, *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1", **(env or {})},
        )
        self.replies: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self.read_replies, daemon=True).start()
        self.stderr_reader = threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True)
        self.stderr_reader.start()
        self.next_id = 100
        self.request("initialize", INITIALIZE, timeout=60)  # answered while the server imports its framework
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        self.request("ping", timeout=60)  # answered once the server is built: the tests' bounds start from here

    def read_replies(self):
        for line in self.process.stdout:
            self.replies.put(json.loads(line))  # a line that is not one whole JSON message fails here

    def send(self, raw: bytes):
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def reply(self, timeout):
        try:
            return self.replies.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no reply within {timeout}s; the server said:\n{b''.join(self.stderr).decode(errors='replace')}")

    def request(self, method, params=None, timeout=30):
        self.next_id += 1
        self.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}).encode())
        reply = self.reply(timeout)
        assert reply["id"] == self.next_id, reply
        return reply

    def read_graph(self):
        reply = self.request("tools/call", {"name": "read_graph", "arguments": {}})
        return reply["result"]["structuredContent"]

    def peak_memory_kb(self):
        "The server's peak resident memory so far (VmHWM), in kB."
        with open(f"/proc/{self.process.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    def close(self):
        self.process.stdin.close()
        code = self.process.wait(timeout=30)
        self.stderr_reader.join(timeout=30)
        return code


class MemoryStdio(RawStdio):
    "``datasette-memory mcp`` on ``db_path``, started as an agent starts it."

    def __init__(self, db_path, *options, env=None):
        self.db_path = db_path
        super().__init__("-m", "datasette_memory", "mcp", "--db", str(db_path), *options, env=env)


@pytest.fixture(scope="module")
def stdio_server(tmp_path_factory):
    server = MemoryStdio(tmp_path_factory.mktemp("wire") / "memory.db")
    yield server
    server.close()


def expected_error(raw):
    "What the wire check says about ``raw``: both doors must send exactly this."
    with pytest.raises(WireError) as refused:
        check_message(raw)
    return refused.value.response()["error"]


@pytest.mark.parametrize("name,raw,code,id,words", MALFORMED, ids=IDS)
def test_a_malformed_message_is_answered_and_the_server_goes_on(stdio_server, name, raw, code, id, words):
    stdio_server.send(raw)
    # a generous bound on "answered at once": the client used to wait for ever
    reply = stdio_server.reply(timeout=1)
    assert reply["id"] == id
    assert reply["error"]["code"] == code
    assert words in reply["error"]["message"]
    assert "send" in reply["error"]["message"]  # and what to send instead
    assert reply["error"] == expected_error(raw)
    assert stdio_server.read_graph() == {"entities": [], "relations": []}


def test_replies_and_errors_never_share_a_line(stdio_server):
    "Errors written by the transport and replies written for the session go through one lock."
    params = {"name": "read_graph", "arguments": {}}
    calls = json.dumps({"jsonrpc": "2.0", "id": "good", "method": "tools/call", "params": params})
    for _ in range(30):
        stdio_server.send(calls.encode())
        stdio_server.send(b"not json")
    replies = [stdio_server.reply(timeout=30) for _ in range(60)]  # each one a whole JSON line, or read_replies fails
    assert sorted(str(reply["id"]) for reply in replies) == ["None"] * 30 + ["good"] * 30


def test_nothing_malformed_was_stored(stdio_server):
    "Not the lone surrogate, not the invalid UTF-8 read as U+FFFD: no event, no entity."
    memory = Memory.open(stdio_server.db_path)
    try:
        assert memory.conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
        assert memory.conn.execute("SELECT count(*) FROM entities").fetchone()[0] == 0
    finally:
        memory.close()


def test_the_server_ends_when_its_input_does(db_path):
    server = MemoryStdio(db_path)
    assert server.close() == 0


# a server whose tool prints to stdout, as careless code or a child process might
PRINTING_SERVER = """
from fastmcp import FastMCP
from mcp_bridge.stdio import serve_stdio

server = FastMCP("printing")

@server.tool
def shout() -> str:
    print("stray output from a tool")
    return "done"

serve_stdio(server, max_request_bytes=1_000_000)
"""


def test_stray_output_misses_the_wire():
    server = RawStdio("-c", PRINTING_SERVER)
    try:
        reply = server.request("tools/call", {"name": "shout", "arguments": {}})  # a stray line would fail read_replies
        assert reply["result"]["content"][0]["text"] == "done"
    finally:
        assert server.close() == 0
    assert b"stray output from a tool" in b"".join(server.stderr)


def padded_read_graph(id, size):
    "A read_graph call of exactly ``size`` bytes, padded in its ``_meta``, which the tool ignores."
    def line(pad):
        params = {"name": "read_graph", "arguments": {}, "_meta": {"pad": pad}}
        return json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).encode()

    return line("x" * (size - len(line(""))))


def test_the_cap_counts_the_line_exactly(db_path):
    server = MemoryStdio(db_path, env={"DATASETTE_MEMORY_MAX_REQUEST_BYTES": "2000"})
    try:
        server.send(padded_read_graph("at-cap", 2000))
        assert server.reply(timeout=30)["result"]["structuredContent"] == {"entities": [], "relations": []}
        server.send(padded_read_graph("over-cap", 2001))
        reply = server.reply(timeout=30)
        assert reply["id"] == "over-cap"
        assert reply["error"]["code"] == -32600
        assert "over this server's cap of 2,000 bytes" in reply["error"]["message"]
        assert "--max-request-bytes" in reply["error"]["message"]
        assert server.read_graph() == {"entities": [], "relations": []}
    finally:
        server.close()


def huge_create_entities(id, total_bytes):
    """
    One create_entities call of about ``total_bytes``, as a line in pieces:
    1,000 entities, each with observations of 50,000 bytes, every one within
    the per-field limits (1,000 items a list, 64 KB an observation).
    """
    observation = json.dumps(("a note of several words " * 2100)[:50_000])
    per_entity = total_bytes // 1000 // 50_000
    start = {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "create_entities", "arguments": {"entities": []}}}
    yield json.dumps(start, separators=(",", ":")).removesuffix("]}}}").encode()
    for i in range(1000):
        observations = ",".join([observation] * per_entity)
        yield f'{"," if i else ""}{{"name":"e{i}","entityType":"thing","observations":[{observations}]}}'.encode()
    yield b"]}}}\n"


@pytest.mark.large  # 100 MB through the wire: CI runs it, tests/run on request
def test_a_100_mb_request_is_refused_in_bounded_memory(db_path):
    server = MemoryStdio(db_path)
    try:
        assert server.read_graph() == {"entities": [], "relations": []}
        before = server.peak_memory_kb()
        sent = []

        def send_all():
            for piece in huge_create_entities("huge", 100_000_000):
                server.process.stdin.write(piece)
                sent.append(len(piece))
            server.process.stdin.flush()

        started = time.monotonic()
        sender = threading.Thread(target=send_all)
        sender.start()
        # a generous bound on "refused quickly": the server answers once it has read past the cap
        reply = server.reply(timeout=10)
        answered = time.monotonic() - started
        sender.join(timeout=120)
        assert not sender.is_alive(), "the server stopped reading the rest of the long line"
        assert sum(sent) > 100_000_000
        assert reply["id"] == "huge" and reply["error"]["code"] == -32600
        assert "over this server's cap of 4,194,304 bytes" in reply["error"]["message"]
        assert server.read_graph() == {"entities": [], "relations": []}  # answered after the long line, nothing stored
        grew_mb = (server.peak_memory_kb() - before) / 1024
        print(f"refused after {answered:.2f}s; peak resident memory grew {grew_mb:.1f} MB")
        assert grew_mb < 100
    finally:
        server.close()


def test_the_cap_must_be_a_positive_number():
    result = CliRunner().invoke(cli, ["mcp", "--max-request-bytes", "0"])
    assert result.exit_code == 2
    assert "--max-request-bytes: must be at least 1, got 0" in result.output


# over HTTP


async def mcp_headers(datasette):
    return {
        "Authorization": f"Bearer {await datasette.create_token('alice')}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }


@pytest.mark.parametrize("name,raw,code,id,words", MALFORMED, ids=IDS)
async def test_a_malformed_message_over_http_gets_the_same_error(datasette, name, raw, code, id, words):
    response = await datasette.client.post("/-/memory/mcp", content=raw, headers=await mcp_headers(datasette))
    assert response.status_code == 400
    assert response.json() == {"jsonrpc": "2.0", "id": id, "error": expected_error(raw)}
    assert response.json()["error"]["code"] == code


@pytest.mark.large  # 100 MB through the wire: CI runs it, tests/run on request
async def test_a_100_mb_stream_over_http_is_refused_with_413(datasette, db_path):
    async def body():
        for piece in huge_create_entities(12, 100_000_000):
            yield piece

    response = await datasette.client.post("/-/memory/mcp", content=body(), headers=await mcp_headers(datasette))
    assert response.status_code == 413
    assert response.json()["id"] == 12
    assert response.json()["error"]["code"] == -32600
    assert "over this server's cap of 4,194,304 bytes" in response.json()["error"]["message"]
    assert Memory.open(db_path).read_graph() == {"entities": [], "relations": []}


async def test_a_cap_above_the_sdks_own_is_honoured(db_path):
    "The MCP SDK caps bodies at 4 MiB itself; a larger configured cap lets larger requests through."
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)], config={"plugins": {"datasette-memory": {"max_request_bytes": 6_000_000}}})
    await datasette.invoke_startup()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"pad": "x" * 5_000_000}}})
    response = await datasette.client.post("/-/memory/mcp", content=body, headers=await mcp_headers(datasette))
    await datasette.invoke_shutdown()
    assert response.status_code == 200
    assert response.json()["result"]["tools"]


def served_request(base, token, head_only_length=None, chunks=()):
    """
    POST to a served ``/-/memory/mcp`` over a real socket: with a declared
    Content-Length (sending only as much of the body as the server will read), or
    chunked, stopping when the server has answered. Returns the status and body.
    """
    host, port = base.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=30)
    framing = f"Content-Length: {head_only_length}" if head_only_length is not None else "Transfer-Encoding: chunked"
    connection.sendall(
        f"POST /-/memory/mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()
    )

    def send_body():
        try:
            for chunk in chunks:
                connection.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if head_only_length is None else chunk)
        except OSError:  # the server answered and closed: the rest was never read
            pass

    threading.Thread(target=send_body, daemon=True).start()
    response = http.client.HTTPResponse(connection)
    response.begin()
    body = response.read()
    connection.close()
    return response.status, json.loads(body)


def test_serve_refuses_a_body_over_its_cap_before_reading_it(db_path):
    Memory.open(db_path).close()
    token = CliRunner().invoke(cli, ["create-token", "alice", "--db", str(db_path)]).output.strip()
    with serving(db_path, "--max-request-bytes", "1000000") as (base, _):
        first = b'{"jsonrpc":"2.0","id":"declared","method":"tools/call","params":{"name":"create_entities"'
        status, error = served_request(base, token, head_only_length=100_000_000, chunks=[first])
        assert status == 413
        assert error["id"] == "declared" and error["error"]["code"] == -32600
        assert "the request is 100,000,000 bytes, over this server's cap of 1,000,000 bytes" in error["error"]["message"]
        status, error = served_request(base, token, chunks=huge_create_entities("streamed", 100_000_000))
        assert status == 413
        assert error["id"] == "streamed"
        assert "the request is over this server's cap of 1,000,000 bytes" in error["error"]["message"]
    assert Memory.open(db_path).read_graph() == {"entities": [], "relations": []}
