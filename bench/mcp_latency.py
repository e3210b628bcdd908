"""MCP latency over stdio: datasette-memory, the official memory server, and an empty-tool floor.

All three run side by side in one run, driven by the same fastmcp client. At each
size the graph is loaded with create_entities (1,000 per call, 5 observations
each), then each server answers the same search_nodes, open_nodes and
add_observations calls.

    python bench/mcp_latency.py [--sizes 1000,10000,100000] [--calls 200] [--official-calls 30]

The official server comes from tests/official (run 'npm ci --prefix tests/official').
"""

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

ROOT = pathlib.Path(__file__).parent.parent
OFFICIAL = ROOT / "tests" / "official" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
BATCH = 1000
ENV = {"PYTHONPATH": os.pathsep.join(sys.path), "FASTMCP_LOG_LEVEL": "WARNING", "DATASETTE_MEMORY_NO_VECTORS": "1"}  # without the semantic extra


def entity(i: int) -> dict:
    return {
        "name": f"svc-{i:06d}",
        "entityType": ("service", "person", "decision", "bug", "convention")[i % 5],
        "observations": [
            f"svc-{i:06d} listens on port {10000 + i}",
            f"owned by team {i % 97}",
            f"deployed with blue-green rollout, region {i % 7}",
            f"depends on svc-{i + 1:06d} for auth",
            f"last incident ticket INC-{i * 3}",
        ],
    }


def transports(tmp: pathlib.Path, size: int) -> dict:
    return {
        "datasette-memory": StdioTransport(
            sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(tmp / f"ours-{size}.db")], env=ENV, keep_alive=False
        ),
        "official": StdioTransport(
            "node", [str(OFFICIAL)], env={"MEMORY_FILE_PATH": str(tmp / f"official-{size}.jsonl")}, keep_alive=False
        ),
        "floor": StdioTransport(sys.executable, [str(ROOT / "bench" / "floor_server.py")], env=ENV, keep_alive=False),
    }


async def timed(client, tool, arguments) -> float:
    start = time.perf_counter()
    await client.call_tool(tool, arguments)
    return (time.perf_counter() - start) * 1000


async def measure(transport, size: int, calls: int) -> dict:
    async with Client(transport) as client:
        start = time.perf_counter()
        for first in range(0, size, BATCH):
            await client.call_tool("create_entities", {"entities": [entity(i) for i in range(first, min(size, first + BATCH))]})
        load = time.perf_counter() - start
        picks = [(i * 7919) % size for i in range(calls)]
        return {
            "load_s": load,
            "search_nodes": [await timed(client, "search_nodes", {"query": f"svc-{i:06d}"}) for i in picks],
            "open_nodes": [await timed(client, "open_nodes", {"names": [f"svc-{i:06d}"]}) for i in picks],
            "add_observations": [
                await timed(client, "add_observations", {"observations": [{"entityName": f"svc-{i:06d}", "contents": [f"note {n}"]}]})
                for n, i in enumerate(picks)
            ],
        }


def p(values, q):
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=200, help="calls per tool for ours and the floor")
    parser.add_argument("--official-calls", type=int, default=30, help="calls per tool for the official server")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            results = {}
            for name, transport in transports(pathlib.Path(tmp), size).items():
                calls = args.official_calls if name == "official" else args.calls
                results[name] = await measure(transport, size, calls)
                print(f"  {size:>7} entities: {name} done", file=sys.stderr)
            rows.append((size, results))
    print("| entities | tool | datasette-memory p50 / p95 | official p50 / p95 | floor p50 / p95 | ours vs floor | official vs ours |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for size, results in rows:
        for tool in ("search_nodes", "open_nodes", "add_observations"):
            ours, official, floor = (results[n][tool] for n in ("datasette-memory", "official", "floor"))
            print(
                f"| {size:,} | {tool} | {p(ours, 50):.2f} / {p(ours, 95):.2f} ms | {p(official, 50):.2f} / {p(official, 95):.2f} ms "
                f"| {p(floor, 50):.2f} / {p(floor, 95):.2f} ms | {p(ours, 50) / p(floor, 50):.2f}x | {p(official, 50) / p(ours, 50):.0f}x faster |"
            )
    print()
    print("| entities | load: datasette-memory | load: official | load: floor |")
    print("|---:|---:|---:|---:|")
    for size, results in rows:
        print(f"| {size:,} | " + " | ".join(f"{results[n]['load_s']:.1f} s" for n in ("datasette-memory", "official", "floor")) + " |")


if __name__ == "__main__":
    asyncio.run(main())
