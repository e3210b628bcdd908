"""Where one MCP call's time goes over stdio, stage by stage, for several commits side by side.

Each server is a real ``datasette-memory mcp`` process (one per checkout,
``PYTHONPATH`` pointing at it) started through this script's ``--serve`` mode,
which wraps the functions of each stage below in a timer before the server
starts: every name a stage's function is bound to in any loaded module or
class is replaced, so ``from x import f`` callers are timed too. A stage whose
functions a checkout lacks shows as ``-``. The client (fastmcp's ``Client``
over stdio) times each call from the request written to the reply read, on the
same monotonic clock as the server's timers, so each timed interval belongs to
the call whose round trip holds it.

The checkouts take turns chunk by chunk (``--chunk`` calls of each tool) for
``--rounds`` rounds, on copies of one loaded file each, so a busy machine slows
them alike. Per call kind and checkout it prints the median of each stage (the
union of its intervals within the call, nested stages taken out of the one
around them) and of the round trip; ``rest`` is the median of what the stages
leave of each round trip: the client, the pipes, the MCP SDK's and fastmcp's
dispatch.

    python bench/call_profile.py --checkout eaad99b=/tmp/wt-eaad99b --checkout main=. [--floor] [--entities 10000]

``--floor`` adds bench/floor_server.py (a fastmcp tool returning an empty graph) as one more column.
"""

import argparse
import asyncio
import atexit
import gc
import importlib
import inspect
import json
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).parent.parent
TOOLS = ("open_nodes", "search_nodes", "add_observations", "create_entities")  # create_entities: one entity a call
LOAD = "create_entities (1,000)"  # the load's calls, 1,000 entities each, profiled too

# stage: the functions whose time is the stage's, as module:qualified name (missing ones are skipped)
STAGES: dict[str, list[str]] = {
    "message checks": ["mcp_bridge.wire:check_message"],
    "SDK and fastmcp dispatch": ["mcp.shared.jsonrpc_dispatcher:JSONRPCDispatcher._handle_request"],
    "tool lookup": ["fastmcp.server.server:FastMCP.get_tool"],
    "argument validation": ["fastmcp.tools.function_tool:_validate_input", "mcp_bridge.tooling:validated_arguments"],
    "core validation": [
        f"{module}:{function}"
        for module in ("datasette_memory.graph.parsing", "datasette_memory.core.validation", "datasette_memory.validation")
        for function in ("parse_entities", "parse_contents", "parse_names", "parse_observation_items", "parse_relations",
                         "check_list", "check_name", "check_text", "check_object", "check_project")
    ],
    "thread hop": ["mcp_bridge.backends:LocalBackend.call"],
    "connection, transaction": ["mcp_bridge.backends:LocalBackend.run_read", "mcp_bridge.backends:LocalBackend.run_write"],
    "core call": [
        "datasette_memory.memory:Memory.open_nodes", "datasette_memory.memory:Memory.search_nodes",
        "datasette_memory.memory:Memory.add_observations", "datasette_memory.memory:Memory.create_entities",
    ],
    "secret scan": ["datasette_memory.core.secrets:refuse_secrets", "datasette_memory.secrets:refuse_secrets"],
    "witness": ["datasette_memory.core.witness:appended", "datasette_memory.core.witness:committed"],
    "stored-data note": ["datasette_memory.core.stored_data:noted"],
    "serialisation": [
        "mcp_bridge.graph_text:render_dict", "mcp_bridge.tooling:pretty", "mcp_bridge.server:pretty",
        "mcp_bridge.tooling:text_result", "fastmcp.tools.base:ToolResult.to_mcp_result",
        "fastmcp.tools.function_tool:FunctionTool.convert_result", "pydantic.main:BaseModel.model_dump_json",
        "mcp_bridge.splicing:Splices.pieces",
    ],
    "line written": ["mcp_bridge.stdio:FrameWriter.write_pieces"],
}
# a stage's time excludes the stages nested in it, so each interval is counted once
INSIDE = {
    "SDK and fastmcp dispatch": ["tool lookup", "argument validation", "core validation", "thread hop", "serialisation",
                                 "line written"],
    "thread hop": ["connection, transaction", "core call"],
    "connection, transaction": ["core call"],
    "core call": ["core validation", "secret scan", "witness", "stored-data note", "serialisation"],
    "serialisation": ["line written"],
}


# --- the server side: timers around each stage's functions, dumped at exit ---

INTERVALS: list[tuple[str, float, float]] = []


def timed(stage: str, function: Any) -> Any:
    "``function`` recording each call's interval under ``stage``."
    clock, record = time.perf_counter, INTERVALS.append
    if inspect.iscoroutinefunction(function):
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return await function(*args, **kwargs)
            finally:
                record((stage, start, clock()))
        return timed_async

    def timed_sync(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            record((stage, start, clock()))
    return timed_sync


def resolve(target: str) -> tuple[Any, str, Any] | None:
    "The owner (module or class), attribute name and function ``module:qualname`` names, or None if absent."
    module_name, qualname = target.split(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part, None)
    function = inspect.getattr_static(owner, name, None) if owner is not None else None
    return (owner, name, function) if callable(function) else None


def install_timers() -> list[str]:
    "Wrap every stage's functions wherever they are bound; the targets found."
    for module in ("mcp_bridge.server", "mcp_bridge.stdio", "datasette_memory.cli", "datasette_memory.memory"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    found = []
    for stage, targets in STAGES.items():
        for target in targets:
            resolved = resolve(target)
            if resolved is None:
                continue
            owner, name, function = resolved
            wrapper = timed(stage, function)
            if inspect.isclass(owner):
                setattr(owner, name, wrapper)
            else:
                for module in list(sys.modules.values()):
                    namespace = getattr(module, "__dict__", {})
                    for key, value in list(namespace.items()):
                        if value is function:
                            namespace[key] = wrapper
            found.append(target)
    return found


def serve(arguments: list[str]) -> None:
    "Run ``datasette-memory mcp`` with the timers in, their intervals written to $CALL_PROFILE_OUT when it ends."
    found = install_timers()
    out = pathlib.Path(os.environ["CALL_PROFILE_OUT"])

    def dump(*_: Any) -> None:
        out.write_text(json.dumps({"found": found, "intervals": list(INTERVALS)}))
        if _:  # the client's SIGTERM, after its grace period
            os._exit(0)

    atexit.register(dump)
    signal.signal(signal.SIGTERM, dump)
    gc.collect()
    from datasette_memory.cli import cli

    if arguments == ["floor"]:
        from floor_server import server

        server.run(show_banner=False, log_level="WARNING")
    else:
        cli.main(args=arguments, prog_name="datasette-memory", standalone_mode=False)


# --- the client side ---

def entity(i: int) -> dict[str, Any]:
    "The entities bench/mcp_latency.py loads."
    sys.path.insert(0, str(ROOT / "bench"))
    from mcp_latency import entity as latency_entity

    return latency_entity(i)


def arguments_for(tool: str, i: int, n: int, size: int) -> dict[str, Any]:
    name = f"svc-{(i * 7919) % size:06d}"
    if tool == "open_nodes":
        return {"names": [name]}
    if tool == "search_nodes":
        return {"query": name}
    if tool == "create_entities":
        return {"entities": [{"name": f"profiled-{n}", "entityType": "service", "observations": [f"made by call {n}"]}]}
    return {"observations": [{"entityName": name, "contents": [f"profiled note {n}"]}]}


async def profile(checkouts: dict[str, pathlib.Path], size: int, rounds: int, chunk: int, tmp: pathlib.Path) -> dict[str, Any]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    calls: dict[str, list[tuple[str, float, float]]] = {name: [] for name in checkouts}
    clients = {}
    for name, checkout in checkouts.items():
        env = {
            "PYTHONPATH": os.pathsep.join([str(checkout), str(ROOT / "bench")]), "FASTMCP_LOG_LEVEL": "WARNING",
            "DATASETTE_MEMORY_NO_VECTORS": "1", "CALL_PROFILE_OUT": str(tmp / f"{name}.json"),
        }
        served = ["floor"] if name == "floor" else ["mcp", "--db", str(tmp / f"{name}.db")]
        arguments = [str(pathlib.Path(__file__).resolve()), "--serve", *served]
        clients[name] = Client(StdioTransport(sys.executable, arguments, env=env, cwd=str(checkout), keep_alive=False))
    for name, client in clients.items():
        await client.__aenter__()
        for first in range(0, size, 1000):  # each checkout loads its own file, in its own schema
            batch = {"entities": [entity(i) for i in range(first, min(size, first + 1000))]}
            start = time.perf_counter()
            await client.call_tool("create_entities", batch)
            calls[name].append(("create_entities (1,000)", start, time.perf_counter()))
        print(f"  {name}: {size:,} entities loaded", file=sys.stderr)
    try:
        n = 0
        for _ in range(rounds):
            for name, client in clients.items():
                for tool in TOOLS:
                    for i in range(chunk):
                        n += 1
                        start = time.perf_counter()
                        await client.call_tool(tool, arguments_for(tool, n, n, size))
                        calls[name].append((tool, start, time.perf_counter()))
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)
    await asyncio.sleep(0.5)
    return {name: (calls[name], json.loads((tmp / f"{name}.json").read_text())) for name in checkouts}


def union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def stage_times(intervals: list[tuple[str, float, float]]) -> dict[str, float]:
    "Each stage's time within one call in ms, nested stages taken out."
    by_stage: dict[str, list[tuple[float, float]]] = {}
    for stage, start, stop in intervals:
        by_stage.setdefault(stage, []).append((start, stop))
    inclusive = {stage: union_length(spans) for stage, spans in by_stage.items()}
    times = {}
    for stage, total in inclusive.items():
        inner = union_length([span for child in INSIDE.get(stage, []) for span in by_stage.get(child, [])
                              if any(s <= span[0] and span[1] <= e for s, e in by_stage[stage])])
        times[stage] = max(0.0, total - inner) * 1000
    return times


def analyse(calls: list[tuple[str, float, float]], dump: dict[str, Any]) -> dict[str, dict[str, Any]]:
    "Per tool: the median of each stage, of the round trip and of the rest, and which stages the checkout has."
    intervals = sorted((start, stop, stage) for stage, start, stop in dump["intervals"])
    found_stages = {stage for stage, targets in STAGES.items() if any(t in dump["found"] for t in targets)}
    per_tool: dict[str, dict[str, list[float]]] = {}
    at = 0
    for tool, start, stop in calls:
        while at < len(intervals) and intervals[at][0] < start:
            at += 1
        inside, j = [], at
        while j < len(intervals) and intervals[j][0] < stop:
            if intervals[j][1] <= stop:
                inside.append((intervals[j][2], intervals[j][0], intervals[j][1]))
            j += 1
        times = stage_times(inside)
        record = per_tool.setdefault(tool, {"round trip": [], "rest": [], **{s: [] for s in STAGES}})
        round_trip = (stop - start) * 1000
        record["round trip"].append(round_trip)
        record["rest"].append(round_trip - sum(times.values()))
        for stage in STAGES:
            record[stage].append(times.get(stage, 0.0))
    return {
        tool: {key: (statistics.median(values) if key in found_stages or key in ("round trip", "rest") else None)
               for key, values in record.items()}
        for tool, record in per_tool.items()
    }


def table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    names = list(results)
    lines = []
    for tool in (*TOOLS, LOAD):
        lines += [f"**{tool}** (ms, medians)", "", "| stage | " + " | ".join(names) + " |",
                  "|---|" + "---:|" * len(names)]
        for key in [*STAGES, "rest", "round trip"]:
            cells = [results[name][tool][key] for name in names]
            lines.append(f"| {key} | " + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", required=True, help="NAME=PATH of a checkout (a git worktree)")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=20, help="calls of each tool per checkout per round")
    parser.add_argument("--floor", action="store_true", help="add the empty-tool floor server as a column")
    args = parser.parse_args()
    checkouts = {c.split("=", 1)[0]: pathlib.Path(c.split("=", 1)[1]).resolve() for c in args.checkout}
    if args.floor:
        checkouts["floor"] = ROOT
    with tempfile.TemporaryDirectory() as tmp:
        raw = asyncio.run(profile(checkouts, args.entities, args.rounds, args.chunk, pathlib.Path(tmp)))
    results = {name: analyse(calls, dump) for name, (calls, dump) in raw.items()}
    print(f"{args.entities:,} entities, {args.rounds} rounds of {args.chunk} calls of each tool per checkout, "
          f"load average {os.getloadavg()[0]:.2f}")
    print()
    print(table(results))


if __name__ == "__main__":
    main()
