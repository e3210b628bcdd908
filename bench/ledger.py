"""Ledger at scale: verify, as-of reads and the ledger's write cost, side by side with raw sqlite3 on the same file.

Builds a memory file through the core API (``Memory.open``): entities in projects of
10,000, created 500 per call with three observations each, a chain of relations in
each project, then rounds of ``add_observations`` (1,000 entities per call, one
observation each, every project in turn) until the ledger holds the events asked
for, and a checkpoint. Then, in one run:

1. ``verify``, a full check and then ``--since-checkpoint`` after 1,000 new events on
   random entities, as a CLI subprocess and as ``verify_file`` in-process, with each
   check timed; beside raw sqlite3's ``PRAGMA integrity_check``, a ``count(*)`` of the
   events and a read of every event row into Python, on the same file. Then the check
   a door makes at its start (the file against its head witness and the last clean
   check), beside raw sqlite3's lookup of one event by id.
2. ``open_nodes(as_of=...)`` of random (entity, event) pairs, beside ``open_nodes()``
   and a raw sqlite3 lookup of the entity's row and observations.
3. ``read_graph(as_of=...)`` of one 10,000-entity project, beside ``read_graph()``.
4. ``add_observations`` of one observation per call, on fresh files: this version,
   without the head witness file, without migration m009's two event triggers, and
   without both; and this version on the big file. With ``--before DIR`` (a source
   tree of an earlier version, say from ``git archive``), the same calls on it too, in
   a child process. The writers take turns every 50 calls, so a change of load hits
   them alike.

    python bench/ledger.py [--entities 100000] [--events 1000000] [--runs 3] [--picks 200] [--calls 2000] [--before DIR]
"""

import argparse
import contextlib
import json
import os
import pathlib
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

from datasette_memory import Config, Memory, SearchSettings

PROJECT_SIZE = 10_000
CREATE_BATCH = 500
ADD_BATCH = 1000
NEW_EVENTS = 1000
WRITE_CHUNK = 50
CONFIG = Config(search=SearchSettings(semantic=False))
ENV = {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"}
M009_EVENT_TRIGGERS = ("memory_event_names_insert", "events_refuse_overwrite")


def name(i: int) -> str:
    return f"svc-{i:06d}"


def entity(i: int) -> dict:
    return {
        "name": name(i),
        "entityType": ("service", "person", "decision", "bug", "convention")[i % 5],
        "observations": [f"{name(i)} listens on port {10000 + i}", f"owned by team {i % 97}", f"deployed in region {i % 7}"],
    }


def note(i: int, round: int) -> str:
    return f"round {round}: {name(i)} shipped build {round}.{i % 100}"


def load() -> str:
    return "load " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def log(message: str) -> None:
    print(f"  {message} ({load()})", file=sys.stderr, flush=True)


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def median_of(function, runs: int) -> float:
    return statistics.median(timed(function) for _ in range(runs))


def p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


def preload() -> None:
    "Import now every module the run uses, so one run measures one version of the code even if its files change meanwhile."
    from datasette_memory.core import witness  # noqa: F401
    from datasette_memory.history import compare, file_check, touching  # noqa: F401


# The file


def open_projects(path: pathlib.Path, entities: int) -> dict[str, Memory]:
    "One Memory per project of ``PROJECT_SIZE`` entities: ``{project: memory}``."
    count = -(-entities // PROJECT_SIZE)
    return {f"p{k}": Memory.open(path, project=f"p{k}", actor="bench", config=CONFIG) for k in range(count)}


def members(project: str, entities: int) -> range:
    "The entity numbers of ``project`` (``p3`` holds 30,000 to 39,999)."
    start = int(project[1:]) * PROJECT_SIZE
    return range(start, min(start + PROJECT_SIZE, entities))


def build(path: pathlib.Path, entities: int, events: int) -> dict[str, Memory]:
    "Write the file through the core until the ledger holds ``events`` events (or more, if they cannot be fewer)."
    memories = open_projects(path, entities)
    for project, memory in memories.items():
        numbers = members(project, entities)
        for start in range(numbers.start, numbers.stop, CREATE_BATCH):
            memory.create_entities([entity(i) for i in range(start, min(start + CREATE_BATCH, numbers.stop))])
        for start in range(numbers.start, numbers.stop - 1, ADD_BATCH):
            memory.create_relations([{"from": name(i), "to": name(i + 1), "relationType": "calls"}
                                     for i in range(start, min(start + ADD_BATCH, numbers.stop - 1))])
    log(f"{entities:,} entities and their relations written: {head(memories)} events")
    remaining, round = events - head(memories) - 1, 0
    while remaining > 0:
        for project, memory in memories.items():
            numbers = members(project, entities)[:remaining]
            for start in range(numbers.start, numbers.stop, ADD_BATCH):
                memory.add_observations([{"entityName": name(i), "contents": [note(i, round)]}
                                         for i in range(start, min(start + ADD_BATCH, numbers.stop))])
            remaining -= len(numbers)
        round += 1
        log(f"round {round} of add_observations written: {head(memories):,} events")
    memories["p0"].checkpoint("bench: the file is built; verify next")
    return memories


def head(memories: dict[str, Memory]) -> int:
    return next(iter(memories.values())).conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]


def add_new_events(memories: dict[str, Memory], entities: int, count: int, rng: random.Random) -> None:
    "``count`` new observations on random entities, one call per project."
    by_project: dict[str, list[int]] = {}
    for i in rng.sample(range(entities), count):
        by_project.setdefault(f"p{i // PROJECT_SIZE}", []).append(i)
    for project, numbers in by_project.items():
        memories[project].add_observations([{"entityName": name(i), "contents": [f"new since the checkpoint: {name(i)}"]}
                                            for i in numbers])


# 1. verify


def verify_cli(path: pathlib.Path, incremental: bool) -> float:
    command = [sys.executable, "-m", "datasette_memory", "verify", "--db", str(path)] + (["--since-checkpoint"] if incremental else [])
    start = time.perf_counter()
    # run from the file's folder: with -m, the working directory would come first on sys.path
    result = subprocess.run(command, capture_output=True, text=True, env=ENV, cwd=path.parent)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"verify failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed


def cli_start_up(folder: pathlib.Path, runs: int) -> float:
    "Seconds for ``verify --help``: the interpreter and the imports every CLI run pays first."
    command = [sys.executable, "-m", "datasette_memory", "verify", "--help"]
    return median_of(lambda: subprocess.run(command, capture_output=True, env=ENV, cwd=folder, check=True), runs)


def verify_in_process(path: pathlib.Path, incremental: bool) -> tuple[float, dict[str, float], dict]:
    "``verify_file``, timed as a whole and check by check: ``(seconds, {check: seconds}, report)``."
    from datasette_memory.history import file_check

    split, run = {}, file_check.run

    def timed_run(check, body):
        start = time.perf_counter()
        outcome = run(check, body)
        split[check] = time.perf_counter() - start
        return outcome

    file_check.run = timed_run
    try:
        start = time.perf_counter()
        report = file_check.verify_file(path, incremental)
        elapsed = time.perf_counter() - start
    finally:
        file_check.run = run
    if not report["ok"] or report["mode"].startswith("full") == incremental:
        raise SystemExit(f"verify_file: {json.dumps(report, indent=2)[:3000]}")
    return elapsed, split, report


def replay_parts(path: pathlib.Path) -> dict[str, float]:
    "The full replay check in its three parts: rebuild from the events, read the tables, compare."
    from datasette_memory.history import compare, file_check

    conn = file_check.open_read_only(path)
    try:
        times, results = {}, {}
        for part, function in (
            ("rebuild from the events", lambda: results.update(expected=compare.replay(conn))),
            ("read the tables", lambda: results.update(found=compare.live(conn))),
            ("compare", lambda: results.update(problems=compare.differences(results["expected"], *results["found"]))),
        ):
            times[part] = timed(function)
        assert not results["problems"], results["problems"][:5]
        return times
    finally:
        conn.close()


def raw_references(path: pathlib.Path, runs: int) -> dict[str, float]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            "raw sqlite3: PRAGMA integrity_check": median_of(lambda: conn.execute("PRAGMA integrity_check").fetchall(), runs),
            "raw sqlite3: SELECT count(*) FROM events": median_of(lambda: conn.execute("SELECT count(*) FROM events").fetchall(), runs),
            "raw sqlite3: every event row read into Python": median_of(
                lambda: all(True for _ in conn.execute("SELECT * FROM events ORDER BY id")), runs),
        }
    finally:
        conn.close()


def measure_verify(path: pathlib.Path, incremental: bool, runs: int) -> dict:
    cli, in_process, splits, parts = [], [], [], []
    for _ in range(runs):
        cli.append(verify_cli(path, incremental))
        elapsed, split, report = verify_in_process(path, incremental)
        in_process.append(elapsed)
        splits.append(split)
        if not incremental:
            parts.append(replay_parts(path))
        log(f"verify {'--since-checkpoint' if incremental else '(full)'}: CLI {cli[-1]:.2f} s, in-process {elapsed:.2f} s")
    return {
        "cli": statistics.median(cli), "in_process": statistics.median(in_process), "mode": report["mode"],
        "split": {check: statistics.median(s[check] for s in splits) for check in splits[0]},
        "parts": {part: statistics.median(s[part] for s in parts) for part in parts[0]} if parts else {},
    }


def measure_start_check(path: pathlib.Path, calls: int) -> dict[str, float]:
    "Median seconds of a door's start check, and of one raw event lookup, on connections already open."
    from datasette_memory.core.database import connect
    from datasette_memory.core.evidence import start_line

    conn, raw = connect(path), sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    top = raw.execute("SELECT max(id) FROM events").fetchone()[0]
    try:
        return {
            "a door's start check: the head witness and the last clean check": median_of(lambda: start_line(conn, "bench"), calls),
            "raw sqlite3: one event looked up by id": median_of(
                lambda: raw.execute("SELECT hash FROM events WHERE id = ?", [top]).fetchone(), calls),
        }
    finally:
        conn.close()
        raw.close()


# 2, 3. as-of reads


def measure_open_nodes(memories: dict[str, Memory], path: pathlib.Path, entities: int, top: int, picks: int,
                       rng: random.Random) -> dict[str, list[float]]:
    "Milliseconds per read of one entity: as of a random event, now, and raw sqlite3."
    from datasette_memory.history.touching import events_shaping

    pairs = [(rng.randrange(entities), rng.randint(1, top)) for _ in range(picks)]
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    raw_sql = ("SELECT e.*, o.content FROM entities e LEFT JOIN observations o ON o.entity_id = e.id "
               "WHERE e.project = ? AND e.name = ? ORDER BY o.id")
    times: dict[str, list[float]] = {"as_of": [], "now": [], "raw": []}
    for i, moment in pairs:
        memory = memories[f"p{i // PROJECT_SIZE}"]
        times["as_of"].append(timed(lambda: memory.open_nodes([name(i)], as_of=moment)) * 1000)
        times["now"].append(timed(lambda: memory.open_nodes([name(i)])) * 1000)
        times["raw"].append(timed(lambda: raw.execute(raw_sql, [memory.project, name(i)]).fetchall()) * 1000)
    times["shaping"] = [len(events_shaping(memories[f"p{i // PROJECT_SIZE}"].conn, f"p{i // PROJECT_SIZE}", [name(i)], upto=m)[0])
                        for i, m in pairs]
    raw.close()
    return times


def measure_read_graph(memory: Memory, path: pathlib.Path, top: int, runs: int) -> dict[str, tuple[float, int]]:
    "Seconds per read of the whole project, and the entities it returned."
    raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    raw_sql = ("SELECT e.name, e.entity_type, o.content FROM entities e JOIN observations o ON o.entity_id = e.id "
               "WHERE e.project = ? ORDER BY o.id")
    results = {}
    for label, function in (
        (f"read_graph(as_of={top}), the head", lambda: memory.read_graph(as_of=top)),
        (f"read_graph(as_of={top // 2}), mid-ledger", lambda: memory.read_graph(as_of=top // 2)),
        ("read_graph() now", lambda: memory.read_graph()),
        ("raw sqlite3: the project's entities, observations and relations",
         lambda: [raw.execute(raw_sql, [memory.project]).fetchall(),
                  raw.execute("SELECT * FROM relations WHERE project = ?", [memory.project]).fetchall()]),
    ):
        graph = function()
        results[label] = (median_of(function, runs), len(graph["entities"]) if isinstance(graph, dict) else len({r[0] for r in graph[0]}))
    raw.close()
    return results


# 4. write rate


@contextlib.contextmanager
def without_witness(skip: bool):
    """
    No head witness: each commit forgets what it appended, as a rollback does,
    so nothing is handed on to be written (the rest of the write path unchanged).
    """
    if not skip:
        yield
        return
    from datasette_memory.core import witness

    committed, witness.committed = witness.committed, witness.rolled_back
    try:
        yield
    finally:
        witness.committed = committed


def fresh_file(folder: pathlib.Path, tag: str, triggers: bool = True) -> Memory:
    "A new memory file of 1,000 entities, with or without migration m009's event triggers."
    memory = Memory.open(folder / f"write-{tag}.db", project="p", actor="bench", config=CONFIG)
    memory.create_entities([entity(i) for i in range(1000)])
    for trigger in () if triggers else M009_EVENT_TRIGGERS:
        memory.conn.execute(f"DROP TRIGGER {trigger}")
    return memory


def small_calls(memory: Memory, numbers: range, run: int, first: int, count: int) -> float:
    "Seconds for ``count`` add_observations of one observation each."
    start = time.perf_counter()
    for n in range(first, first + count):
        i = numbers[n % len(numbers)]
        memory.add_observations([{"entityName": name(i), "contents": [f"small call {run}.{n}"]}])
    return time.perf_counter() - start


class Elsewhere:
    """The same small calls on another source tree's datasette_memory, in a child process driven chunk by chunk."""

    def __init__(self, source: str, folder: pathlib.Path):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--write-rate-child", "--folder", str(folder)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**ENV, "PYTHONPATH": source},
        )
        assert self.process.stdout.readline().strip() == "ready"

    def __call__(self, run: int, first: int, count: int) -> float:
        self.process.stdin.write(f"{run} {first} {count}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def write_rate_child(folder: pathlib.Path) -> None:
    memory = fresh_file(folder, f"child-{os.getpid()}")
    print("ready", flush=True)
    for line in sys.stdin:
        run, first, count = map(int, line.split())
        print(small_calls(memory, range(1000), run, first, count), flush=True)


def writers(folder: pathlib.Path, big: Memory, entities: int, before: str | None) -> dict:
    "label -> a function timing ``(run, first, count)`` small calls."
    def on(memory: Memory, numbers: range, skip_witness: bool = False):
        def calls(run: int, first: int, count: int) -> float:
            with without_witness(skip_witness):
                return small_calls(memory, numbers, run, first, count)
        return calls

    found = {
        "this version": on(fresh_file(folder, "now"), range(1000)),
        "without the head witness write": on(fresh_file(folder, "no-witness"), range(1000), skip_witness=True),
        "without m009's event triggers": on(fresh_file(folder, "no-triggers", triggers=False), range(1000)),
        "without both": on(fresh_file(folder, "neither", triggers=False), range(1000), skip_witness=True),
        "this version, on the big file": on(big, members(big.project, entities)),
    }
    if before:
        found["the same calls on the --before version"] = Elsewhere(before, folder)
    return found


def measure_write_rate(folder: pathlib.Path, calls: int, runs: int, big: Memory, entities: int, before: str | None) -> dict[str, float]:
    """
    Events per second of each writer, median of ``runs``. Writers take turns
    every ``WRITE_CHUNK`` calls, so a change of load hits them alike.
    """
    timers = writers(folder, big, entities, before)
    rates: dict[str, list[float]] = {label: [] for label in timers}
    for run in range(runs):
        spent = dict.fromkeys(timers, 0.0)
        for first in range(0, calls, WRITE_CHUNK):
            for label, timer in timers.items():
                spent[label] += timer(run, first, min(WRITE_CHUNK, calls - first))
        for label in timers:
            rates[label].append(calls / spent[label])
        log(f"write rate run {run + 1}: " + ", ".join(f"{label} {values[-1]:,.0f}/s" for label, values in rates.items()))
    for timer in timers.values():
        getattr(timer, "close", lambda: None)()
    return {label: statistics.median(values) for label, values in rates.items()}


# Report


def seconds(value: float) -> str:
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def print_verify(full: dict, since: dict, start_up: float, raw: dict[str, float], events: int) -> None:
    print(f"| verify | full ({events:,} events) | --since-checkpoint ({NEW_EVENTS:,} new events) |")
    print("|---|---:|---:|")
    print(f"| `datasette-memory verify` (CLI subprocess) | {seconds(full['cli'])} | {seconds(since['cli'])} |")
    print(f"| &nbsp; of which start-up (`verify --help`) | {seconds(start_up)} | {seconds(start_up)} |")
    print(f"| `verify_file` in-process | {seconds(full['in_process'])} | {seconds(since['in_process'])} |")
    for check in full["split"] | since["split"]:
        cells = [seconds(m["split"][check]) if check in m["split"] else "–" for m in (full, since)]
        print(f"| &nbsp; {check} | {' | '.join(cells)} |")
        if check == "replay":
            for part, value in full["parts"].items():
                print(f"| &nbsp; &nbsp; replay: {part} (timed apart) | {seconds(value)} | – |")
    for label, value in raw.items():
        print(f"| {label} | {seconds(value)} | |")
    for label, value in raw.items():
        if label != "raw sqlite3: every event row read into Python":
            reference = label.removeprefix("raw sqlite3: ")
            print(f"| CLI verify vs `{reference}` | {full['cli'] / value:,.1f}x | {since['cli'] / value:,.1f}x |")


def print_start_check(times: dict[str, float], events: int) -> None:
    print(f"| at a door's start ({events:,} events, median of 200) | ms |")
    print("|---|---:|")
    for label, value in times.items():
        print(f"| {label} | {value * 1000:.3f} |")


def print_open_nodes(times: dict[str, list[float]], picks: int) -> None:
    raw50 = p(times["raw"], 50)
    print(f"| open_nodes of one entity ({picks} random entity, event pairs) | p50 | p95 | p50 vs raw sqlite3 |")
    print("|---|---:|---:|---:|")
    for label, key in (("open_nodes(as_of=event)", "as_of"), ("open_nodes() now", "now"),
                       ("raw sqlite3: the entity's row and observations", "raw")):
        print(f"| {label} | {p(times[key], 50):.2f} ms | {p(times[key], 95):.2f} ms | {p(times[key], 50) / raw50:,.0f}x |")
    print(f"\nEvents replayed per as-of read: median {statistics.median(times['shaping']):.0f}, most {max(times['shaping'])}.")


def print_read_graph(results: dict[str, tuple[float, int]], project: str) -> None:
    now = results["read_graph() now"][0]
    print(f"| read_graph of project {project} | median | entities | vs read_graph() now |")
    print("|---|---:|---:|---:|")
    for label, (value, count) in results.items():
        print(f"| {label} | {seconds(value)} | {count:,} | {value / now:.1f}x |")


def print_write_rate(rates: dict[str, float], calls: int, events: int) -> None:
    base = rates["this version"]
    print(f"| add_observations, 1 observation per call ({calls:,} calls) | events/s | µs per call | vs this version |")
    print("|---|---:|---:|---:|")
    for label, rate in rates.items():
        where = f" ({events:,} events)" if "big file" in label else ""
        print(f"| {label}{where} | {rate:,.0f}/s | {1e6 / rate:,.0f} | {rate / base:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000, help="entities in the file, in projects of 10,000")
    parser.add_argument("--events", type=int, default=1_000_000, help="ledger events in the file before verify")
    parser.add_argument("--runs", type=int, default=3, help="runs of each measurement, for the median")
    parser.add_argument("--picks", type=int, default=200, help="random (entity, event) pairs for open_nodes")
    parser.add_argument("--calls", type=int, default=2000, help="add_observations calls per write-rate run")
    parser.add_argument("--before", help="a source tree of an earlier datasette-memory: time the same small calls on it")
    parser.add_argument("--write-rate-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_rate_child:
        return write_rate_child(pathlib.Path(args.folder))
    preload()
    rng = random.Random(2025)
    started = load()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        path = folder / "memory.db"
        build_time = time.perf_counter()
        memories = build(path, args.entities, args.events)
        build_time = time.perf_counter() - build_time
        top = head(memories)
        size = sum(f.stat().st_size for f in folder.glob("memory.db*")) / 1e6
        raw = raw_references(path, args.runs)
        start_up = cli_start_up(folder, args.runs)
        log("raw references done")
        full = measure_verify(path, False, args.runs)
        add_new_events(memories, args.entities, NEW_EVENTS, rng)
        since = measure_verify(path, True, args.runs)
        start_check = measure_start_check(path, 200)
        open_times = measure_open_nodes(memories, path, args.entities, top, args.picks, rng)
        log("open_nodes done")
        graph = measure_read_graph(memories["p0"], path, top, args.runs)
        log("read_graph done")
        rates = measure_write_rate(folder, args.calls, args.runs, memories["p0"], args.entities, args.before)
        for memory in memories.values():
            memory.close()
    print(f"{args.entities:,} entities in {len(memories)} projects, {top:,} ledger events, {size:,.0f} MB "
          f"(built through Memory in {build_time:.0f} s, {top / build_time:,.0f} events/s); "
          f"medians of {args.runs} runs; {started} at the start, {load()} at the end\n")
    print_verify(full, since, start_up, raw, top)
    print()
    print_start_check(start_check, top + NEW_EVENTS)
    print()
    print_open_nodes(open_times, args.picks)
    print()
    print_read_graph(graph, "p0")
    print()
    print_write_rate(rates, args.calls, top + NEW_EVENTS)


if __name__ == "__main__":
    main()
