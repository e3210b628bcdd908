"""MCP latency over stdio: datasette-memory, the official memory server, and an empty-tool floor.

All the servers run side by side in one run, driven by the same fastmcp client,
taking turns: the load chunk by chunk (each server gets the same batch of
``create_entities``, 1,000 entities of 5 observations, in turn) and then every
one of the official server's nine tools call by call, so a busy machine slows
them alike. The floor (bench/floor_server.py) is a fastmcp server whose tools
return an empty result: what any fastmcp tool costs over stdio with this client.
Beside each load's time is this process's CPU time during it (the client's own share:
writing the requests, reading the replies and checking them against the tools' output
schemas).

Each tool is called with the same arguments on every server, in an order that
leaves each graph as it found it: an entity created is deleted, an observation
added is deleted, a relation created is deleted. The official server reads and
rewrites its whole JSONL file on every call, so it gets fewer calls
(``--official-calls``; a quarter of them from 100,000 entities), as does
``read_graph``, whose reply is the whole graph (``--graph-calls``), timed up to
``--graph-max`` entities: beyond that the fastmcp client's own parse of the
graph is most of the time (at 100,000 entities a minute a call), and
bench/read_graph.py times the servers' raw replies instead.

    python bench/mcp_latency.py [--sizes 1000,10000,100000] [--calls 100] [--official-calls 20] [--graph-calls 3]
        [--graph-max 10000] [--checkout before=/tmp/wt-before]

``--checkout NAME=PATH`` adds datasette-memory from another checkout (``PYTHONPATH`` pointing at it) as one
more server. The official server comes from tests/official (run 'npm ci --prefix tests/official').
"""

import argparse
import asyncio
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

ROOT = pathlib.Path(__file__).parent.parent
OFFICIAL = ROOT / "tests" / "official" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
BATCH = 1000
ENV = {"PYTHONPATH": os.pathsep.join(sys.path), "FASTMCP_LOG_LEVEL": "WARNING", "DATASETTE_MEMORY_NO_VECTORS": "1"}  # without the semantic extra
OURS = "datasette-memory"
# the nine tools in the order they are timed: each later one undoes an earlier one's change
TOOLS = ("create_entities", "create_relations", "add_observations", "search_nodes", "open_nodes",
         "delete_observations", "delete_relations", "delete_entities", "read_graph")


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


def arguments(tool: str, n: int, size: int) -> dict[str, Any]:
    "The arguments of call ``n`` of ``tool`` on a graph of ``size`` entities."
    name, other = f"svc-{(n * 7919) % size:06d}", f"svc-{(n * 7919 + 1) % size:06d}"
    relation = {"from": name, "to": other, "relationType": f"timed-{n}"}
    return {
        "create_entities": {"entities": [{"name": f"timed-{n}", "entityType": "service", "observations": [f"made by call {n}"]}]},
        "create_relations": {"relations": [relation]},
        "add_observations": {"observations": [{"entityName": name, "contents": [f"timed note {n}"]}]},
        "search_nodes": {"query": name},
        "open_nodes": {"names": [name]},
        "delete_observations": {"deletions": [{"entityName": name, "observations": [f"timed note {n}"]}]},
        "delete_relations": {"relations": [relation]},
        "delete_entities": {"entityNames": [f"timed-{n}"]},
        "read_graph": {},
    }[tool]


def transports(tmp: pathlib.Path, size: int, checkouts: dict[str, pathlib.Path]) -> dict[str, StdioTransport]:
    servers = {
        name: StdioTransport(
            sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(tmp / f"{name}-{size}.db")],
            env={**ENV, "PYTHONPATH": os.pathsep.join([str(path), *sys.path])}, cwd=str(path), keep_alive=False,
        )
        for name, path in checkouts.items()
    }
    servers["official"] = StdioTransport(
        "node", [str(OFFICIAL)], env={"MEMORY_FILE_PATH": str(tmp / f"official-{size}.jsonl")}, keep_alive=False
    )
    servers["floor"] = StdioTransport(sys.executable, [str(ROOT / "bench" / "floor_server.py")], env=ENV, keep_alive=False)
    return servers


async def timed(client, tool, arguments) -> float:
    start = time.perf_counter()
    await client.call_tool(tool, arguments)
    return (time.perf_counter() - start) * 1000


async def measure(size: int, tmp: pathlib.Path, checkouts: dict[str, pathlib.Path], calls: dict[str, int]) -> dict[str, Any]:
    "Load each server with ``size`` entities, batch by batch in turn, then time the nine tools call by call in turn."
    clients = {name: Client(transport) for name, transport in transports(tmp, size, checkouts).items()}
    results: dict[str, Any] = {name: {"load_s": 0.0, "client_cpu_s": 0.0, **{tool: [] for tool in TOOLS}} for name in clients}
    for client in clients.values():
        await client.__aenter__()
    try:
        for first in range(0, size, BATCH):
            batch = {"entities": [entity(i) for i in range(first, min(size, first + BATCH))]}
            for name, client in clients.items():
                cpu = time.process_time()  # this process's own work on the call: the request out, the reply in and checked
                results[name]["load_s"] += await timed(client, "create_entities", batch) / 1000
                results[name]["client_cpu_s"] += time.process_time() - cpu
        for tool in TOOLS:
            most = calls["read_graph"] if tool == "read_graph" else calls["calls"]
            if tool == "read_graph" and size > calls["graph_max"]:
                continue  # the client's parse of the whole graph is the time here: bench/read_graph.py times the reply's bytes
            for n in range(most):
                for name, client in clients.items():
                    if name == "official" and n >= calls["official"]:
                        continue
                    results[name][tool].append(await timed(client, tool, arguments(tool, n, size)))
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)
    return results


def p(values, q):
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def latency_table(rows: list[tuple[int, dict[str, Any]]], names: list[str]) -> list[str]:
    ours = [n for n in names if n not in ("official", "floor")]
    lines = [
        "| entities | tool | " + " | ".join(f"{n} p50 / p95" for n in names) + " | "
        + " | ".join(f"{n} vs floor" for n in ours) + " | official vs " + ours[0] + " |",
        "|---:|---|" + "---:|" * (len(names) + len(ours) + 1),
    ]
    for size, results in rows:
        for tool in TOOLS:
            if not results["floor"][tool]:
                continue
            cells = [f"{p(results[n][tool], 50):.2f} / {p(results[n][tool], 95):.2f} ms" for n in names]
            floor = p(results["floor"][tool], 50)
            ratios = [f"{p(results[n][tool], 50) / floor:.2f}x" for n in ours]
            versus = p(results["official"][tool], 50) / p(results[ours[0]][tool], 50)
            lines.append(f"| {size:,} | {tool} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {versus:.1f}x |")
    return lines


def load_table(rows: list[tuple[int, dict[str, Any]]], names: list[str]) -> list[str]:
    ours = [n for n in names if n not in ("official", "floor")]
    lines = [
        "| entities | " + " | ".join(f"load: {n} (client CPU)" for n in names) + " | " + " | ".join(f"official / {n}" for n in ours) + " |",
        "|---:|" + "---:|" * (len(names) + len(ours)),
    ]
    for size, results in rows:
        loads = [f"{results[n]['load_s']:.1f} s ({results[n]['client_cpu_s']:.1f} s)" for n in names]
        ratios = [f"{results['official']['load_s'] / results[n]['load_s']:.2f}x" for n in ours]
        lines.append(f"| {size:,} | " + " | ".join(loads) + " | " + " | ".join(ratios) + " |")
    return lines


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--calls", type=int, default=100, help="calls per tool for datasette-memory and the floor")
    parser.add_argument("--official-calls", type=int, default=20, help="calls per tool for the official server")
    parser.add_argument("--graph-calls", type=int, default=3, help="read_graph calls per server")
    parser.add_argument("--graph-max", type=int, default=10_000,
                        help="the most entities read_graph is timed at (bench/read_graph.py times bigger graphs' raw replies)")
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH: datasette-memory from another checkout too")
    args = parser.parse_args()
    checkouts = {OURS: ROOT, **{c.split("=", 1)[0]: pathlib.Path(c.split("=", 1)[1]).resolve() for c in args.checkout}}
    rows = []
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            official = args.official_calls if size < 100_000 else max(3, args.official_calls // 4)
            calls = {"calls": args.calls, "official": official, "read_graph": args.graph_calls, "graph_max": args.graph_max}
            before = os.getloadavg()[0]
            rows.append((size, await measure(size, pathlib.Path(tmp), checkouts, calls)))
            loads.append((size, before, os.getloadavg()[0]))
            print(f"  {size:>7} entities done", file=sys.stderr)
    names = [*checkouts, "official", "floor"]
    print("\n".join(latency_table(rows, names)))
    print()
    print("\n".join(load_table(rows, names)))
    print()
    print("load average (1 min) before and after each size: "
          + ", ".join(f"{size:,}: {a:.2f} -> {b:.2f}" for size, a, b in loads))


if __name__ == "__main__":
    asyncio.run(main())
