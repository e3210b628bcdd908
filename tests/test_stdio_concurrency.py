"""Calls in flight at once on one real stdio server: a slow call holds up no other."""

import asyncio
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from datasette_memory import Config, Memory, SearchSettings
from mcp_bridge.backends import LocalBackend

LEXICAL = Config(search=SearchSettings(semantic=False))
# Enough entities that searching memory as it was at an earlier moment, which
# rebuilds memory from the ledger up to that moment, takes about a second
ENTITIES = 4000
BATCH = 1000  # the most entities one create_entities call takes


def entity(name, observations=()):
    return {"name": name, "entityType": "service", "observations": list(observations)}


def stdio_client(path):
    "A client of a real stdio server on ``path``, started as an agent starts it."
    return Client(
        StdioTransport(
            sys.executable,
            ["-m", "datasette_memory", "mcp", "--db", str(path)],
            env={"PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1"},
            keep_alive=False,
        )
    )


async def timed(call):
    "``(result, seconds taken, when it finished)`` of awaiting ``call``."
    start = time.monotonic()
    result = await call
    finished = time.monotonic()
    return result, finished - start, finished


def names(result):
    return sorted(e["name"] for e in result.structured_content["entities"])


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "memory.db"
    memory = Memory.open(path, config=LEXICAL)
    for start in range(0, ENTITIES, BATCH):
        memory.create_entities([entity(f"e{i}", [f"note {j} on e{i}" for j in range(5)]) for i in range(start, start + BATCH)])
    memory.close()
    return path


def search_in_the_past(client, event_id):
    """
    ``search_memory`` on memory as it was just after event ``event_id``: the
    server rebuilds memory from the ledger up to it, honestly slow on a big
    file. It keeps the last moment it rebuilt, so each call names another.
    """
    return client.call_tool("search_memory", {"query": "note on e1", "as_of": event_id})


async def test_slow_search_does_not_block_open_nodes(big_file):
    async with stdio_client(big_file) as client:
        await client.call_tool("open_nodes", {"names": ["e1"]})  # the first call pays for the server's imports
        _, alone, _ = await timed(search_in_the_past(client, ENTITIES - 1))
        assert alone > 0.3, "the slow search is too fast to show anything: make the file bigger"
        slow = asyncio.create_task(timed(search_in_the_past(client, ENTITIES - 2)))
        await asyncio.sleep(alone / 5)  # the server is inside the slow search by now
        assert not slow.done()
        opened, took, open_nodes_done = await timed(client.call_tool("open_nodes", {"names": ["e1", "e2"]}))
        found, slow_took, slow_done = await slow
    assert names(opened) == ["e1", "e2"]
    assert found.structured_content["results"]
    # open_nodes came back while the slow search was still running, in a small part of its time
    assert took < slow_took / 4, f"open_nodes took {took:.3f}s beside a search of {slow_took:.3f}s"
    assert open_nodes_done < slow_done


async def test_long_write_does_not_block_reads(db_path):
    memory = Memory.open(db_path, config=LEXICAL)
    memory.create_entities([entity("e1", ["stored before"])])
    memory.close()

    def batch(prefix):
        return {"entities": [entity(f"{prefix}{i}", [f"write {j} on {prefix}{i}" for j in range(40)]) for i in range(BATCH)]}

    async with stdio_client(db_path) as client:
        await client.call_tool("open_nodes", {"names": ["e1"]})
        _, alone, _ = await timed(client.call_tool("create_entities", batch("a")))
        assert alone > 0.3, "the long write is too fast to show anything: make the batch bigger"
        write = asyncio.create_task(timed(client.call_tool("create_entities", batch("b"))))
        await asyncio.sleep(alone / 5)
        assert not write.done()
        opened, took, open_nodes_done = await timed(client.call_tool("open_nodes", {"names": ["e1", "a0"]}))
        created, write_took, write_done = await write
    assert names(opened) == ["a0", "e1"]
    assert len(created.structured_content["entities"]) == BATCH
    assert took < write_took / 4, f"open_nodes took {took:.3f}s beside a write of {write_took:.3f}s"
    assert open_nodes_done < write_done


# Another process holding SQLite's write lock on the file until told to let go
HOLD_THE_WRITE_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
"""


async def test_a_read_answers_while_another_process_holds_the_write_lock(db_path):
    memory = Memory.open(db_path, config=LEXICAL)
    memory.create_entities([entity("e1", ["stored before"])])
    memory.close()
    async with stdio_client(db_path) as client:
        await client.call_tool("open_nodes", {"names": ["e1"]})
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(db_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout.readline() == "holding\n"
            write = asyncio.create_task(client.call_tool("create_entities", {"entities": [entity("e2")]}))
            # a generous bound, under the 30-second busy timeout a read would wait out if it needed the lock
            graph = await asyncio.wait_for(client.call_tool("read_graph", {}), timeout=20)
            assert names(graph) == ["e1"]
            assert not write.done(), "the write did not wait for the lock: the lock was not held"
        finally:
            holder.communicate("let go\n", timeout=30)
        created = await write
    assert names(created) == ["e2"]


async def test_writes_in_flight_at_once_lose_nothing(db_path):
    async with stdio_client(db_path) as client:
        await asyncio.gather(
            *[client.call_tool("create_entities", {"entities": [entity(f"n{i}", [f"first {i}", f"second {i}"])]}) for i in range(20)],
            *[client.call_tool("append_event", {"content": f"did {i}"}) for i in range(20)],
            *[client.call_tool("read_graph", {}) for _ in range(5)],
        )
        status = (await client.call_tool("verify_chain", {})).structured_content
    assert status["ok"] and status["events"] == 40
    memory = Memory.open(db_path, config=LEXICAL)
    try:
        graph = memory.read_graph()
        clocks = memory.conn.execute("SELECT count(DISTINCT clock) FROM events").fetchone()[0]
    finally:
        memory.close()
    assert sorted(e["name"] for e in graph["entities"]) == sorted(f"n{i}" for i in range(20))
    assert all(len(e["observations"]) == 2 for e in graph["entities"])
    assert clocks == 40


async def test_a_call_marked_as_a_read_cannot_write(db_path):
    backend = LocalBackend(db_path, config=LEXICAL)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            await backend.call(lambda memory: memory.append_event("sneaked in"), "default")
        assert await backend.call(lambda memory: memory.append_event("recorded"), "default", write=True)
        status = await backend.call(lambda memory: memory.verify_chain(), "default")
    finally:
        backend.close()
    assert status.ok and status.events == 1
