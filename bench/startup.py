"""Start-up over stdio: spawn to the answer to initialize, and to the first tools/list, against the official server.

Each server is spawned, sent an initialize request on stdin (as clients send one:
a protocol version, client info, no capabilities) and timed until its answer's line
arrives; then sent notifications/initialized and tools/list, and timed until that
answer arrives too (the first moment an agent can call a tool). The servers take
turns, ``--runs`` times on each pair of files; medians, lowest and highest are printed:

- an empty memory file (created and migrated before the runs), against the official
  server with no memory.jsonl yet;
- 100,000 entities with 5 observations each (``mcp_latency.py``'s), against the
  official server with the same graph in its memory.jsonl;
- a memory file that does not exist yet (created and migrated at start).

datasette-memory runs without the semantic extra, as in ``mcp_latency.py``. With
``--before DIR`` (a source tree of an earlier datasette-memory) it runs on the same
files too.

    python bench/startup.py [--runs 7] [--entities 100000] [--data DIR] [--before DIR]

The official server comes from tests/official (run 'npm ci --prefix tests/official').
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from mcp_latency import BATCH, OFFICIAL, entity

INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench-startup", "version": "1"}}
ENV = {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"}


def message(**fields) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


def timed_start(argv: list[str], env: dict, cwd: str | None = None) -> tuple[float, float]:
    "Seconds from spawning ``argv`` (in ``cwd``) to the answer to initialize, and to the answer to tools/list after it."
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        process.stdin.write(message(id=1, method="initialize", params=INITIALIZE))
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        initialized = time.perf_counter() - start
        assert answer.get("id") == 1 and "result" in answer, answer
        process.stdin.write(message(method="notifications/initialized") + message(id=2, method="tools/list", params={}))
        process.stdin.flush()
        tools = json.loads(process.stdout.readline())
        listed = time.perf_counter() - start
        assert tools.get("id") == 2 and tools["result"]["tools"], tools
    finally:
        process.stdin.close()
        process.wait(timeout=120)
    return initialized, listed


def ours(db: pathlib.Path, source: str | None = None) -> tuple[list[str], dict, str | None]:
    "``datasette-memory mcp`` on ``db``; from ``source`` (run there: ``-m`` looks in the working folder first)."
    env = {**ENV, "PYTHONPATH": source} if source else ENV
    return [sys.executable, "-m", "datasette_memory", "mcp", "--db", str(db)], env, source


def official(jsonl: pathlib.Path) -> tuple[list[str], dict, str | None]:
    return ["node", str(OFFICIAL)], {**os.environ, "MEMORY_FILE_PATH": str(jsonl)}, None


def build(folder: pathlib.Path, entities: int, source: str | None = None) -> tuple[pathlib.Path, pathlib.Path]:
    """
    A memory file and the official server's memory.jsonl holding ``entities`` entities (kept in ``folder``);
    with ``source``, a memory file of its own, made by that source tree's datasette-memory (a newer one's
    migrations would stop it).
    """
    db, jsonl = folder / f"memory-{entities}{'-before' if source else ''}.db", folder / f"official-{entities}.jsonl"
    if source and not db.exists():
        subprocess.run([sys.executable, __file__, "--build", str(db), str(entities)], check=True, cwd=source,
                       env={**ENV, "PYTHONPATH": f"{source}{os.pathsep}{pathlib.Path(__file__).parent}"})
    if not db.exists():
        build_memory_file(db, entities)
    if not jsonl.exists() and entities:
        with jsonl.open("w") as out:
            for i in range(entities):
                out.write(json.dumps({"type": "entity", **entity(i)}) + "\n")
    return db, jsonl


def build_memory_file(db: pathlib.Path, entities: int) -> None:
    from datasette_memory import Config, Memory, SearchSettings

    memory = Memory.open(db, actor="bench", config=Config(search=SearchSettings(semantic=False)))
    for first in range(0, entities, BATCH):
        memory.create_entities([entity(i) for i in range(first, min(entities, first + BATCH))])
    memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="starts of each server on each pair of files")
    parser.add_argument("--entities", type=int, default=100_000, help="entities in the big files")
    parser.add_argument("--data", help="a folder to keep the big files in between runs")
    parser.add_argument("--before", help="a source tree of an earlier datasette-memory: start it on files of its own too")
    parser.add_argument("--build", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        return build_memory_file(pathlib.Path(args.build[0]), int(args.build[1]))
    started = load()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(args.data or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        empty_db, empty_jsonl = build(pathlib.Path(tmp), 0)
        big_db, big_jsonl = build(folder, args.entities)
        pairs = {"empty file": (empty_db, empty_jsonl, pathlib.Path(tmp), 0),
                 f"{args.entities:,} entities": (big_db, big_jsonl, folder, args.entities)}
        rows = []
        for label, (db, jsonl, place, size) in pairs.items():
            servers = {"datasette-memory": ours(db), "official": official(jsonl)}
            if args.before:
                servers["--before"] = ours(build(place, size, args.before)[0], args.before)
            rows.append((label, turns(servers, args.runs)))
        fresh = lambda run: ours(pathlib.Path(tmp) / f"new-{run}.db")  # noqa: E731
        rows.append(("a file created at start", {"datasette-memory": [timed_start(*fresh(run)) for run in range(args.runs)]}))
    print_table(rows, args, started)


def turns(servers: dict[str, tuple[list[str], dict, str | None]], runs: int) -> dict[str, list[tuple[float, float]]]:
    "Each server's timings, the servers taking turns (who goes first rotates)."
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    names = list(servers)
    for run in range(runs):
        for name in names[run % len(names):] + names[: run % len(names)]:
            found[name].append(timed_start(*servers[name]))
    return found


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}–{max(values):.3f})"


def print_table(rows: list, args: argparse.Namespace, started: str) -> None:
    print(f"Spawn to answer, {args.runs} starts of each server on each file, taking turns: median (lowest–highest); "
          f"load {started} at the start, {load()} at the end")
    print("| file | server | initialize answered | tools/list answered | initialize vs official |")
    print("|---|---|---:|---:|---:|")
    for label, found in rows:
        reference = statistics.median(t[0] for t in found["official"]) if "official" in found else None
        for name, times in found.items():
            initialized, listed = [t[0] for t in times], [t[1] for t in times]
            ratio = f"{statistics.median(initialized) / reference:.2f}x" if reference else "–"
            print(f"| {label} | {name} | {spread(initialized)} | {spread(listed)} | {ratio} |")


if __name__ == "__main__":
    main()
