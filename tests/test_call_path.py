"""The per-call path's shortcuts change nothing a client sees, over a real stdio server.

Messages are handed to the event loop by a reading thread of its own, a short
reply is written from the event loop and a long one from a thread, a message is
walked for its nesting only when it holds more openers than the cap, and the
bridge keeps one facade per connection and project: requests sent all at once
are each answered once, whole, in lines of their own; projects stay apart; the
cap on nesting holds at its edge.
"""

import json

import pytest

from mcp_bridge.stdio import INLINE_BYTES
from mcp_bridge.wire import MAX_DEPTH, WireError, check_message

from .test_stdio_wire import MemoryStdio


def call(id, tool, arguments):
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    ).encode()


@pytest.fixture
def server(db_path):
    served = MemoryStdio(db_path)
    yield served
    assert served.close() == 0


def test_requests_sent_at_once_are_each_answered_once_and_whole(server):
    # a long observation makes open_nodes' reply longer than a reply written from the event loop
    long_text = "x" * (INLINE_BYTES + 100)
    entities = [{"name": "long", "entityType": "t", "observations": [long_text]}]
    entities += [{"name": f"e{i}", "entityType": "t", "observations": [f"note {i}"]} for i in range(20)]
    assert "error" not in server.request("tools/call", {"name": "create_entities", "arguments": {"entities": entities}})
    sent = {}
    for i in range(300):
        name = "long" if i % 10 == 0 else f"e{i % 20}"
        sent[1000 + i] = name
        server.send(call(1000 + i, "open_nodes", {"names": [name]}))
    server.send(b"not JSON")  # a wire error among them, written by another path
    replies = [server.reply(timeout=60) for _ in range(301)]
    errors = [r for r in replies if r["id"] is None]
    assert len(errors) == 1 and errors[0]["error"]["code"] == -32700
    answered = {r["id"]: r["result"]["structuredContent"]["entities"] for r in replies if r["id"] is not None}
    assert sorted(answered) == sorted(sent)
    for id, entities in answered.items():
        assert [e["name"] for e in entities] == [sent[id]]
        if sent[id] == "long":
            assert entities[0]["observations"] == [long_text]


def test_projects_stay_apart_on_a_reused_connection(server):
    for project in ("alpha", "beta"):
        server.request("tools/call", {"name": "create_entities", "arguments": {
            "entities": [{"name": f"only-in-{project}", "entityType": "t", "observations": []}], "project": project}})
    for project, other in (("alpha", "beta"), ("beta", "alpha"), ("alpha", "beta")):
        found = server.request("tools/call", {"name": "open_nodes", "arguments": {
            "names": [f"only-in-{project}", f"only-in-{other}"], "project": project}})
        assert [e["name"] for e in found["result"]["structuredContent"]["entities"]] == [f"only-in-{project}"]


def nested(depth: int, filler: str = "") -> bytes:
    params = {"cursor": filler}
    value: object = 1
    for _ in range(depth - 2):  # the message object and params are two levels
        value = [value]
    params["deep"] = value
    return json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": params}).encode()


def test_the_nesting_cap_holds_at_its_edge():
    check_message(nested(MAX_DEPTH))
    with pytest.raises(WireError, match=f"more than {MAX_DEPTH} deep"):
        check_message(nested(MAX_DEPTH + 1))


def test_brackets_inside_strings_are_not_nesting():
    check_message(nested(3, filler="[{" * (MAX_DEPTH * 3)))
