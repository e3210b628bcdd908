"""Where a graph write's time goes in process, and how much of a one-entity write is the commit's flush.

Two measurements on ``Memory`` itself (no MCP, the semantic arm off), each run on
``--checkout`` trees in turn (``PYTHONPATH`` pointing at each, one child process per
run), so an earlier tree can be compared with this one on the same machine state:

- loading ``--entities`` entities of bench/mcp_latency.py (5 observations each) in
  ``create_entities`` calls of 1,000: the whole load, and the time inside the
  functions of each stage (the secret scan, validation, the rows' inserts with
  their full-text indexes, the ledger's events, the commit's witness);
- ``--writes`` calls of ``create_entities`` with one entity each on a fresh file,
  the median, with the connection's ``synchronous`` pragma at FULL (what memory
  uses: each commit waits for the disk) and at NORMAL, which shows what the flush costs;
- the same load and one-entity writes in raw SQLite beside them: the same rows written
  into a file of the same schema (its tables, their four full-text indexes and the
  triggers that keep them) through a plain ``sqlite3`` connection, one ``INSERT`` per
  table per call and a commit with ``synchronous`` FULL: no ledger events, validation,
  secret scan or witness. What SQLite alone takes to store what memory stores and
  index it for search;
- 10 batches of 1,000 ``create_entity`` events appended with ``append_events`` on a fresh
  file, split into the Python that builds the rows (clocks, canonical JSON, digests, the
  chained hashes) and SQLite's insert of them (a tree without ``append_events`` shows ``-``).

    python bench/write_stages.py --checkout before=/tmp/wt-before --checkout after=. [--entities 10000] [--runs 3]
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
from typing import Any

ROOT = pathlib.Path(__file__).parent.parent
# stage: (module, function) whose calls are timed, wherever create_entities reaches them
STAGES = {
    "secret scan": ("datasette_memory.core.scope", "refuse_secrets"),
    "validation": ("datasette_memory.graph.mutations", "parse_entities"),
    "existing names": ("datasette_memory.graph.mutations", "entity_ids"),
    "rows and indexes": ("datasette_memory.graph.mutations", "insert_rows"),
    "ledger events": ("datasette_memory.graph.mutations", ("append_events", "append_event")),
    "witness": ("datasette_memory.core.database", ("witness",)),
}


def timed_stages() -> dict[str, float]:
    "Wrap each stage's function; the dict the wrappers add their seconds to."
    import importlib

    seconds = dict.fromkeys(STAGES, 0.0)
    for stage, (module_name, names) in STAGES.items():
        module = importlib.import_module(module_name)
        owner, name = module, next(n for n in ((names,) if isinstance(names, str) else names) if hasattr(module, n))
        if name == "witness":  # the commit's witness bookkeeping: witness.committed, as the write transaction calls it
            owner, name = module.witness, "committed"
        function = getattr(owner, name)

        def wrapper(*args: Any, __function: Any = function, __stage: str = stage, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return __function(*args, **kwargs)
            finally:
                seconds[__stage] += time.perf_counter() - start

        setattr(owner, name, wrapper)
    return seconds


def memory_at(path: pathlib.Path) -> Any:
    from datasette_memory.config import Config
    from datasette_memory.memory import Memory
    from datasette_memory.search.settings import SearchSettings

    return Memory.open(path, config=Config(search=SearchSettings(semantic=False)))


def load(entities: int) -> dict[str, float]:
    "Seconds of the whole load and of each stage."
    sys.path.insert(0, str(ROOT / "bench"))
    from mcp_latency import entity

    seconds = timed_stages()
    memory = memory_at(pathlib.Path(tempfile.mkdtemp()) / "load.db")
    start = time.perf_counter()
    for first in range(0, entities, 1000):
        memory.create_entities([entity(i) for i in range(first, min(entities, first + 1000))])
    total = time.perf_counter() - start
    memory.close()
    return {"load": total, **seconds}


def one_entity_writes(writes: int, synchronous: str) -> float:
    "The median ms of a one-entity create_entities."
    memory = memory_at(pathlib.Path(tempfile.mkdtemp()) / "writes.db")
    memory.conn.execute(f"PRAGMA synchronous = {synchronous}")
    times = []
    for n in range(writes):
        start = time.perf_counter()
        memory.create_entities([{"name": f"timed-{n}", "entityType": "service", "observations": [f"made by call {n}"]}])
        times.append(time.perf_counter() - start)
    memory.close()
    return statistics.median(times) * 1000


def raw_file() -> Any:
    "A plain connection to a fresh file of memory's schema (made by ``Memory.open``)."
    import sqlite3

    path = pathlib.Path(tempfile.mkdtemp()) / "raw.db"
    memory_at(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def raw_insert(conn: Any, entities: list[dict[str, Any]]) -> None:
    "Write ``entities`` and their observations as rows in one transaction, one INSERT per table."
    conn.execute("BEGIN IMMEDIATE")
    last = conn.execute(
        "INSERT INTO entities (project, name, entity_type, created_at) SELECT 'default', json_extract(value, '$[0]'), "
        "json_extract(value, '$[1]'), '2026-12-03T00:00:00+00:00' FROM json_each(?) ORDER BY key",
        [json.dumps([[e["name"], e["entityType"]] for e in entities])],
    ).lastrowid
    rows = [[last - len(entities) + 1 + i, o] for i, e in enumerate(entities) for o in e["observations"]]
    conn.execute(
        "INSERT INTO observations (entity_id, content, created_at) SELECT json_extract(value, '$[0]'), "
        "json_extract(value, '$[1]'), '2026-12-03T00:00:00+00:00' FROM json_each(?) ORDER BY key",
        [json.dumps(rows)],
    )
    conn.execute("COMMIT")


def raw_load(entities: int) -> float:
    "Seconds raw SQLite takes to store the load's rows in memory's schema."
    sys.path.insert(0, str(ROOT / "bench"))
    from mcp_latency import entity

    conn = raw_file()
    start = time.perf_counter()
    for first in range(0, entities, 1000):
        raw_insert(conn, [entity(i) for i in range(first, min(entities, first + 1000))])
    total = time.perf_counter() - start
    conn.close()
    return total


def raw_writes(writes: int) -> float:
    "The median ms of raw SQLite storing one entity of one observation, with a durable commit."
    conn = raw_file()
    times = []
    for n in range(writes):
        start = time.perf_counter()
        raw_insert(conn, [{"name": f"timed-{n}", "entityType": "service", "observations": [f"made by call {n}"]}])
        times.append(time.perf_counter() - start)
    conn.close()
    return statistics.median(times) * 1000


def event_parts() -> tuple[float, float] | None:
    "Median ms of building and of inserting 1,000 events, or None without append_events."
    sys.path.insert(0, str(ROOT / "bench"))
    from mcp_latency import entity

    from datasette_memory.core import database, ledger

    if not hasattr(ledger, "new_event"):
        return None
    memory = memory_at(pathlib.Path(tempfile.mkdtemp()) / "events.db")
    built, inserted = [], []
    for batch in range(10):
        changes = [ledger.Change("create_entity", f"svc-{batch}-{i}", new=entity(batch * 1000 + i)) for i in range(1000)]
        with database.write_transaction(memory.conn):
            start = time.perf_counter()
            machine, clock, prev_hash = memory.conn.execute(ledger.NEXT_EVENT).fetchone()
            events: list[dict[str, Any]] = []
            for change in changes:
                events.append(ledger.new_event(machine, clock + len(events), prev_hash, ledger.Caller(), "default", change))
                prev_hash = events[-1]["hash"]
            middle = time.perf_counter()
            memory.conn.executemany(ledger.INSERT_EVENT, events)
            built.append(middle - start)
            inserted.append(time.perf_counter() - middle)
    memory.close()
    return statistics.median(built) * 1000, statistics.median(inserted) * 1000


def child(arguments: dict[str, Any]) -> None:
    if arguments["what"] == "load":
        print(json.dumps(load(arguments["entities"])))
    elif arguments["what"] == "raw load":
        print(json.dumps(raw_load(arguments["entities"])))
    elif arguments["what"] == "raw writes":
        print(json.dumps(raw_writes(arguments["writes"])))
    elif arguments["what"] == "events":
        print(json.dumps(event_parts()))
    else:
        print(json.dumps(one_entity_writes(arguments["writes"], arguments["synchronous"])))


def run(checkout: pathlib.Path, arguments: dict[str, Any]) -> Any:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), str(ROOT / "bench")])}
    out = subprocess.run([sys.executable, __file__, "--child", json.dumps(arguments)], env=env, cwd=checkout,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(title: str, first: str, columns: list[str], rows: dict[str, list[str]]) -> None:
    "Print a markdown table under ``title``: a row per key of ``rows``, its cells under ``columns``."
    print(title)
    print(f"| {first} | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", action="append", required=True, help="NAME=PATH of a source tree")
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    checkouts = {c.split("=", 1)[0]: pathlib.Path(c.split("=", 1)[1]).resolve() for c in args.checkout}
    loads: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    writes: dict[tuple[str, str], list[float]] = {}
    events: dict[str, list[Any]] = {name: [] for name in checkouts}
    raw: dict[str, list[float]] = {"load": [], "writes": []}
    for _ in range(args.runs):
        raw["load"].append(run(ROOT, {"what": "raw load", "entities": args.entities}))
        raw["writes"].append(run(ROOT, {"what": "raw writes", "writes": args.writes}))
        for name, checkout in checkouts.items():  # the trees take turns, run by run
            loads[name].append(run(checkout, {"what": "load", "entities": args.entities}))
            events[name].append(run(checkout, {"what": "events"}))
            for synchronous in ("FULL", "NORMAL"):
                writes.setdefault((name, synchronous), []).append(
                    run(checkout, {"what": "writes", "writes": args.writes, "synchronous": synchronous}))
    median = statistics.median
    table(f"{args.entities:,} entities of 5 observations in calls of 1,000, in process; medians of {args.runs} runs (s)",
          "stage", [*checkouts, "raw SQLite"],
          {stage: [f"{median(r[stage] for r in loads[name]):.3f}" for name in checkouts]
           + [f"{median(raw['load']):.3f}" if stage == "load" else "-"] for stage in ("load", *STAGES)})
    table(f"create_entities of one entity, median of {args.writes} calls, medians of {args.runs} runs (ms)",
          "synchronous", [*checkouts, "raw SQLite"],
          {synchronous: [f"{median(writes[(name, synchronous)]):.3f}" for name in checkouts]
           + [f"{median(raw['writes']):.3f}" if synchronous == "FULL" else "-"] for synchronous in ("FULL", "NORMAL")})
    table(f"1,000 events appended with append_events, median of 10 batches, medians of {args.runs} runs (ms)",
          "part", list(checkouts),
          {part: ["-" if None in events[name] else f"{median(e[i] for e in events[name]):.1f}" for name in checkouts]
           for i, part in enumerate(("building the rows (Python)", "inserting them (SQLite)"))})
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
