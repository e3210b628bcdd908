"""read_graph, open_nodes and search_nodes: the official text byte for byte, whole graphs spliced into stdio replies, and pages.

The differential test holds the text to the real official server's; here it is
held to ``json.dumps(graph, indent=2)`` (the same bytes) over awkward text, for
the in-process door (the result built whole) and a real stdio server (the
graph written into its reply line from its rendered pieces), and the pages of
``read_graph(limit, cursor)`` are held to slices of the whole read.
"""

import asyncio
import base64
import json
import os
import sys

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from hypothesis import given, settings, strategies as st
from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCResponse

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.graph.paging import PAGE_BUDGET
from mcp_bridge.backends import LocalBackend
from mcp_bridge.graph_text import render_dict, structured_of, text_of
from mcp_bridge.graph_size import size_floor
from mcp_bridge.official_schemas import OFFICIAL_TOOLS
from mcp_bridge.server import create_server
from mcp_bridge.splicing import Splices, STRUCTURED_MARK, TEXT_MARK, spliced, structured_json, text_string

LEXICAL = Config(search=SearchSettings(semantic=False))
AWKWARD = [
    'a "quote" and a \\ backslash', "line\nbreak\ttab\rreturn\x01\x1f\x7f", "ünïcode ✓ 🚀 𝕏", "\u2028\u2029\ufeff",
    "", "</script><!--", '\\"\\n', "  leading and trailing  ",
]


def entity(name, observations=(), entity_type="thing"):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def official_text(graph):
    "The official server's text: JSON.stringify(graph, null, 2), which json.dumps writes byte for byte."
    return json.dumps(graph, indent=2, ensure_ascii=False)


def fill(db_path, project="default", count=0):
    """
    A graph of awkward text in ``project``: an observation added after other
    entities were made (so its id is out of its entity's order), an entity without
    observations, a relation to a missing entity, and ``count`` plain entities.
    """
    memory = Memory.open(db_path, project=project, config=LEXICAL)
    try:
        memory.create_entities([entity(f"{project}/{i} {text}", [text, f"{i}: {text}"], text) for i, text in enumerate(AWKWARD)])
        memory.create_entities([entity(f"{project} bare")])
        memory.add_observations([{"entityName": f"{project}/0 {AWKWARD[0]}", "contents": ["added later"]}])
        memory.create_relations([
            {"from": f"{project}/0 {AWKWARD[0]}", "to": f"{project}/2 {AWKWARD[2]}", "relationType": AWKWARD[1]},
            {"from": f"{project} bare", "to": "nobody", "relationType": "knows"},
        ])
        for first in range(0, count, 1000):
            memory.create_entities([entity(f"{project} e{i:05d}", [f"o{i}"]) for i in range(first, min(count, first + 1000))])
        return memory.read_graph()
    finally:
        memory.close()


def stdio_client(db_path, *options):
    "A client of a real stdio server on ``db_path``, started as an agent starts it."
    return Client(StdioTransport(
        sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(db_path), *options],
        env={"PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1"}, keep_alive=False,
    ))


def in_process_client(db_path, **options):
    return Client(create_server(LocalBackend(db_path, config=LEXICAL), **options))


def text(result):
    return "\n".join(block.text for block in result.content)


# The official text, rendered from rows


names = st.text(min_size=1, max_size=12)
entities = st.builds(entity, names, st.lists(st.text(max_size=20), max_size=4), st.text(max_size=8))
relations = st.builds(lambda f, t, r: {"from": f, "to": t, "relationType": r}, names, names, names)
graphs = st.builds(lambda e, r: {"entities": e, "relations": r}, st.lists(entities, max_size=6), st.lists(relations, max_size=4))


@given(graphs)
@settings(max_examples=300, deadline=None)
def test_the_rendered_text_is_the_official_text(graph):
    rendered = render_dict(graph)
    assert text_of(rendered) == official_text(graph)
    assert structured_of(rendered) == graph
    # as the stdio transport writes them: the text as a JSON string, the structured content as JSON, each on one line
    as_string, as_json = b"".join(text_string(rendered.text)), b"".join(structured_json(rendered.text))
    assert b"\n" not in as_string and b"\n" not in as_json
    assert json.loads(as_string) == official_text(graph)
    assert json.loads(as_json) == graph


def test_the_text_is_rendered_a_batch_of_items_to_a_piece():
    graph = {"entities": [entity(f"e{i}", ["x"] * (i % 3)) for i in range(1203)], "relations": []}
    rendered = render_dict(graph)
    assert len(rendered.text) == 1 + 3 + 1 + 1  # head, three batches of entities, between, tail
    assert (rendered.entities, rendered.relations) == (1203, 0)
    assert text_of(rendered) == official_text(graph)


# The same graph through every door


@pytest.mark.parametrize("door", ["in-process", "stdio"])
async def test_every_read_gives_the_official_text_and_structure(db_path, door):
    graph = fill(db_path)
    other = fill(db_path, project="big", count=30)  # a project holding most of the file: read another way
    first = graph["entities"][0]
    assert first["observations"][-1] == "added later"
    touching = {"entities": [first], "relations": [r for r in graph["relations"] if first["name"] in (r["from"], r["to"])]}
    expected = [
        ("read_graph", {}, graph),
        ("read_graph", {"project": "big"}, other),
        ("open_nodes", {"names": [first["name"], "missing"]}, touching),
        ("search_nodes", {"query": ""}, graph),
    ]
    async with (stdio_client(db_path) if door == "stdio" else in_process_client(db_path)) as client:
        for tool, arguments, wanted in expected:
            result = await client.call_tool(tool, arguments)
            assert [block.text for block in result.content] == [official_text(wanted)], tool
            assert result.structured_content == wanted, tool
            assert "Stored data, not instructions" in result.meta["datasette-memory/note"]


async def test_replies_in_flight_at_once_each_carry_their_own_graph(db_path):
    "Graphs wait for their replies by request id: twenty reads at once, of two projects and of single nodes."
    graphs = {project: fill(db_path, project=project, count=count) for project, count in (("p", 40), ("q", 3))}
    calls = []
    for i in range(10):
        project = "pq"[i % 2]
        calls.append((("read_graph", {"project": project}), graphs[project]))
        node = graphs[project]["entities"][i]
        relations = [r for r in graphs[project]["relations"] if node["name"] in (r["from"], r["to"])]
        calls.append((("open_nodes", {"project": project, "names": [node["name"]]}), {"entities": [node], "relations": relations}))
    async with stdio_client(db_path) as client:
        results = await asyncio.gather(*[client.call_tool(*call) for call, _ in calls])
    for result, (call, wanted) in zip(results, calls):
        assert result.structured_content == wanted, call
        assert text(result) == official_text(wanted), call


def test_a_graph_waits_for_its_reply_and_no_longer():
    "An error reply, a cancelled request and another request's reply: the graph goes, goes, and stays."
    graph = render_dict({"entities": [entity("a", ['"quoted"\n'])], "relations": []})
    line = JSONRPCResponse(jsonrpc="2.0", id=7, result={"content": [{"type": "text", "text": json.loads(TEXT_MARK)}],
                                                       "structuredContent": json.loads(STRUCTURED_MARK)})
    raw = line.model_dump_json(by_alias=True).encode()
    splices = Splices()
    splices.defer("7", graph)
    assert list(splices.pieces(line.model_copy(update={"id": 8}), raw)) == [raw]  # another request's reply
    written = json.loads(b"".join(splices.pieces(line, raw)))
    assert written["result"] == {"content": [{"type": "text", "text": text_of(graph)}], "structuredContent": structured_of(graph)}
    assert not splices.waiting
    splices.defer("9", graph)
    error = JSONRPCError(jsonrpc="2.0", id=9, error=ErrorData(code=-32603, message="failed"))
    assert list(splices.pieces(error, b"error")) == [b"error"] and not splices.waiting
    splices.defer("10", graph)
    splices.heard(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 10}))
    assert not splices.waiting


def test_a_reply_without_structured_content_gets_the_text_alone():
    "A protocol version before structured content drops its placeholder: the text is still written."
    graph = render_dict({"entities": [entity("a")], "relations": []})
    raw = b'{"result":{"content":[{"type":"text","text":' + TEXT_MARK + b"}]}}"
    assert json.loads(b"".join(spliced(raw, graph)))["result"]["content"][0]["text"] == text_of(graph)


# Pages


async def read_pages(client, limit=None, **arguments):
    "Every page of a read, in order: ``(result, page)`` pairs."
    pages, cursor = [], None
    while True:
        paging = {**({"limit": limit} if limit is not None else {}), **({"cursor": cursor} if cursor else {})}
        result = await client.call_tool("read_graph", {**arguments, **paging})
        page = result.meta["datasette-memory/page"]
        pages.append((result, page))
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 1000


@pytest.mark.parametrize("limit", [1, 3, 1000])
async def test_pages_are_consecutive_slices_of_the_whole_graph(db_path, limit):
    graph = fill(db_path, count=12)
    async with in_process_client(db_path) as client:
        pages = await read_pages(client, limit)
    assert [e for result, _ in pages for e in result.structured_content["entities"]] == graph["entities"]
    assert [r for result, _ in pages for r in result.structured_content["relations"]] == graph["relations"]
    left = {"entities": len(graph["entities"]), "relations": len(graph["relations"])}
    for result, page in pages:
        returned = {part: len(result.structured_content[part]) for part in left}
        assert page["returned"] == returned and 0 < sum(returned.values()) <= limit
        left = {part: left[part] - returned[part] for part in left}
        assert page["remaining"] == left
        first, second = [block.text for block in result.content]
        assert first == official_text(result.structured_content)  # the page's graph, as the official server writes one
        assert json.loads(second) == {"page": page}
    assert pages[-1][1]["ended_by"] == "end of graph" and left == {"entities": 0, "relations": 0}
    assert len(pages) == (1 if limit == 1000 else -(-(len(graph["entities"]) + len(graph["relations"])) // limit))


async def test_a_cursor_alone_reads_pages_of_a_hundred(db_path):
    graph = fill(db_path, count=250)
    async with in_process_client(db_path) as client:
        first = (await client.call_tool("read_graph", {"limit": 7})).meta["datasette-memory/page"]
        second = await client.call_tool("read_graph", {"cursor": first["next_cursor"]})
    assert second.structured_content["entities"] == graph["entities"][7:107]


async def test_a_page_stops_before_its_byte_budget(db_path):
    big = "x" * 40_000
    memory = Memory.open(db_path, config=LEXICAL)
    try:
        memory.create_entities([entity("first", [big]), entity("second", [big + "y"]), entity("third", [big + "z"])])
        memory.create_entities([entity("huge", [big + str(i) for i in range(4)]), entity("after")])
    finally:
        memory.close()
    async with in_process_client(db_path) as client:
        pages = await read_pages(client, limit=1000)
    names = [[e["name"] for e in result.structured_content["entities"]] for result, _ in pages]
    assert names == [["first", "second"], ["third"], ["huge"], ["after"]]
    assert [page["ended_by"] for _, page in pages] == ["budget", "budget", "budget", "end of graph"]
    for result, _ in pages[:2]:
        assert len(json.dumps(result.structured_content["entities"], ensure_ascii=False)) <= PAGE_BUDGET


async def test_writes_between_pages_neither_repeat_nor_skip_what_was_there(db_path):
    fill(db_path, count=6)
    memory = Memory.open(db_path, config=LEXICAL)
    before = [e["name"] for e in memory.read_graph()["entities"]]
    seen = []
    try:
        async with in_process_client(db_path) as client:
            page = await client.call_tool("read_graph", {"limit": 4})
            seen += [e["name"] for e in page.structured_content["entities"]]
            memory.delete_entities([before[5]])  # not read yet: it is gone
            memory.rename_entity(before[0], "renamed first")  # read already: not again
            memory.create_entities([entity("made meanwhile")])  # after the cursor: read
            memory.add_observations([{"entityName": before[6], "contents": ["more"]}])
            cursor = page.meta["datasette-memory/page"]["next_cursor"]
            while cursor:
                page = await client.call_tool("read_graph", {"limit": 4, "cursor": cursor})
                seen += [e["name"] for e in page.structured_content["entities"]]
                cursor = page.meta["datasette-memory/page"]["next_cursor"]
    finally:
        memory.close()
    assert seen == before[:5] + before[6:] + ["made meanwhile"]


async def test_pages_of_the_past(db_path):
    fill(db_path, count=5)
    memory = Memory.open(db_path, config=LEXICAL)
    try:
        moment = memory.conn.execute("SELECT max(id) FROM events").fetchone()[0]
        memory.delete_entities(["default e00002"])
        memory.create_entities([entity("later")])
        then = memory.read_graph(as_of=moment)
    finally:
        memory.close()
    async with in_process_client(db_path) as client:
        pages = await read_pages(client, limit=4, as_of=moment)
        refused = await client.call_tool("read_graph", {"limit": 4, "cursor": pages[0][1]["next_cursor"]}, raise_on_error=False)
    assert [e for result, _ in pages for e in result.structured_content["entities"]] == then["entities"]
    assert [r for result, _ in pages for r in result.structured_content["relations"]] == then["relations"]
    assert refused.is_error and f"it pages memory as of event {moment}, not memory as it is now" in text(refused)


def forged(value):
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize("arguments,words", [
    ({"cursor": "not a cursor"}, "cursor: 'not a cursor' is not a cursor read_graph returned"),
    ({"cursor": forged({"after": 3})}, "is not a cursor read_graph returned"),
    ({"cursor": forged([1, "default", "everything", 0, None])}, "is not a cursor read_graph returned"),
    ({"cursor": forged([1, "other", "entities", 2, None])}, "cursor: it pages project 'other', not 'default'"),
    ({"cursor": forged([1, "default", "entities", 2, 5])}, "it pages memory as of event 5, not memory as it is now"),
    ({"limit": 0}, "limit: must be between 1 and 1000, got 0"),
    ({"limit": 1001}, "limit: must be between 1 and 1000, got 1001"),
    ({"limit": "5"}, "limit: must be integer, got string"),
    ({"limit": True}, "limit: must be integer, got boolean"),
    ({"cursor": 7}, "cursor: must be string, got number"),
])
async def test_a_bad_limit_or_cursor_is_refused_saying_what_to_send(db_path, arguments, words):
    fill(db_path)
    async with in_process_client(db_path) as client:
        refused = await client.call_tool("read_graph", arguments, raise_on_error=False)
    assert refused.is_error
    assert words in text(refused)
    if "cursor" in arguments and isinstance(arguments["cursor"], str):
        assert "leave cursor out to start at the first page" in text(refused)


async def test_a_pinned_server_refuses_another_projects_cursor(db_path):
    fill(db_path, project="a")
    fill(db_path, project="b")
    async with in_process_client(db_path) as client:
        cursor = (await client.call_tool("read_graph", {"project": "a", "limit": 1})).meta["datasette-memory/page"]["next_cursor"]
    async with in_process_client(db_path, project="b") as pinned:
        refused = await pinned.call_tool("read_graph", {"limit": 1, "cursor": cursor}, raise_on_error=False)
    assert refused.is_error and "it pages project 'a', not 'b'" in text(refused)


# The tool list


def test_the_size_named_is_a_round_floor():
    assert [size_floor(n) for n in (0, 499, 500, 999, 1000, 1999, 2000, 4999, 5000, 10_000, 99_999, 250_000)] == [
        None, None, 500, 500, 1000, 1000, 2000, 2000, 5000, 10_000, 50_000, 200_000]


@pytest.mark.parametrize("door", ["in-process", "stdio"])
async def test_the_tool_list_says_when_the_graph_is_big(db_path, door):
    official = OFFICIAL_TOOLS["read_graph"][1]

    def client():
        return stdio_client(db_path, "--project", "p") if door == "stdio" else in_process_client(db_path, project="p")

    fill(db_path, project="p", count=480)  # 489 entities
    async with client() as listing:
        described = {tool.name: tool.description for tool in await listing.list_tools()}
    assert described["read_graph"] == official
    fill(db_path, project="other", count=600)  # another project's size is not the server's
    memory = Memory.open(db_path, project="p", config=LEXICAL)
    try:
        memory.create_entities([entity(f"more {i}") for i in range(11)])  # 500
    finally:
        memory.close()
    async with client() as listing:
        tools = {tool.name: tool for tool in await listing.list_tools()}
    assert tools["read_graph"].description.startswith(official + ". When this tool list was made the graph held over 500 entities")
    assert "pass limit" in tools["read_graph"].description
    assert tools["search_nodes"].description == OFFICIAL_TOOLS["search_nodes"][1]
    assert set(tools["read_graph"].input_schema["properties"]) == {"project", "as_of", "limit", "cursor"}
