"""Write rate: datasette-memory (ledger included) against raw sqlite3 inserts of the same rows.

Each writer has its own WAL file on the same disk with the same pragmas, and the
writers take turns (a chunk of calls each, then the next), so a change of load on
the machine hits them alike; datasette-memory's chunks include waiting for its head
witness to be written. Three kinds of writes:

- one mutation per transaction (how agents call it): one entity with one observation
- batches of 1,000 entities per call (an import), one observation each
- a bulk load of 10,000 entities with 5 observations each, 1,000 per call

Each is run ``--runs`` times on fresh files; the medians are printed. With
``--before DIR`` (a source tree of an earlier datasette-memory) the same calls run
on it too, in a child process, taking turns with the others.

Lexical by default; with --semantic (needs the vectors extra) the semantic arm is on:
writes return without waiting for the model, and the time the background catch-up
takes after the last write returns is printed too.

    python bench/write_rate.py [--n 5000] [--bulk 10000] [--runs 3] [--semantic] [--before DIR]
"""

import argparse
import os
import pathlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

OBSERVATIONS = ("listens on port {i}", "owned by team {team}", "deployed with blue-green rollout, region {region}",
                "depends on entity-{next} for auth", "last incident ticket INC-{ticket}")
ONE_AT_A_TIME_CHUNK = 250  # calls of one entity a writer makes before the next writer's turn


def entity(i: int, observations: int = 1) -> dict:
    texts = [text.format(i=i, team=i % 97, region=i % 7, next=i + 1, ticket=i * 3) for text in OBSERVATIONS[:observations]]
    return {"name": f"entity-{i}", "entityType": "service", "observations": texts}


def batches(size: int, per_call: int, observations: int) -> list[list[dict]]:
    return [[entity(i, observations) for i in range(s, min(s + per_call, size))] for s in range(0, size, per_call)]


def raw_connection(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.executescript(
        """
        CREATE TABLE entities (id INTEGER PRIMARY KEY, project TEXT NOT NULL, name TEXT NOT NULL,
            entity_type TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (project, name));
        CREATE TABLE observations (id INTEGER PRIMARY KEY, entity_id INTEGER NOT NULL REFERENCES entities(id),
            content TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE (entity_id, content));
        """
    )
    return conn


def raw_insert(conn: sqlite3.Connection, entities: list[dict]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for e in entities:
        cursor = conn.execute(
            "INSERT INTO entities (project, name, entity_type, created_at) VALUES ('default', ?, ?, datetime())",
            [e["name"], e["entityType"]],
        )
        for content in e["observations"]:
            conn.execute(
                "INSERT INTO observations (entity_id, content, created_at) VALUES (?, ?, datetime())",
                [cursor.lastrowid, content],
            )
    conn.execute("COMMIT")


class Raw:
    "Raw sqlite3 inserts of the same rows into the same two tables."

    def __init__(self, folder: pathlib.Path):
        self.folder = folder

    def start(self, name: str) -> None:
        self.conn = raw_connection(str(self.folder / f"raw-{name}.db"))

    def write(self, calls: list[list[dict]]) -> float:
        start = time.perf_counter()
        for call in calls:
            raw_insert(self.conn, call)
        return time.perf_counter() - start

    def finish(self) -> float:
        self.conn.close()
        return 0.0


class Ours:
    "datasette-memory's create_entities: one transaction a call, with its ledger events."

    def __init__(self, folder: pathlib.Path, semantic: bool):
        from datasette_memory import Config, SearchSettings

        self.folder, self.config = folder, Config(search=SearchSettings(semantic=semantic))

    def start(self, name: str) -> None:
        from datasette_memory import Memory

        self.memory = Memory.open(self.folder / f"memory-{name}.db", actor="bench", config=self.config)

    def write(self, calls: list[list[dict]]) -> float:
        from datasette_memory.core import witness

        start = time.perf_counter()
        for call in calls:
            self.memory.create_entities(call)
        witness.flush()  # its side file is written in the background: inside its own turn
        return time.perf_counter() - start

    def finish(self) -> float:
        "Seconds the semantic index still needed after the last write returned; the file closed."
        start = time.perf_counter()
        self.memory.wait_for_semantic_index()
        caught_up = time.perf_counter() - start
        self.memory.close()
        return caught_up


class Before:
    "The same calls on another source tree's datasette_memory, in a child process driven a chunk at a time."

    def __init__(self, source: str, folder: pathlib.Path, semantic: bool):
        argv = [sys.executable, __file__, "--child", str(folder)] + (["--semantic"] if semantic else [])
        env = {**os.environ, "PYTHONPATH": source}
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, line: str) -> float:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def start(self, name: str) -> None:
        self.ask(f"start {name}")

    def write(self, calls: list[list[dict]]) -> float:
        return self.ask(f"write {calls[0][0]['name'].split('-')[1]} {len(calls)} {len(calls[0])} {len(calls[0][0]['observations'])}")

    def finish(self) -> float:
        return self.ask("finish")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def child(folder: str, semantic: bool) -> None:
    "A --before writer: ``start NAME``, ``write FIRST CALLS PER_CALL OBSERVATIONS`` and ``finish``, each answered with seconds."
    ours = Ours(pathlib.Path(folder) / f"before-{os.getpid()}", semantic)
    ours.folder.mkdir()
    for line in sys.stdin:
        command, *args = line.split()
        if command == "start":
            ours.start(args[0])
            print(0.0, flush=True)
        elif command == "write":
            first, count, per_call, observations = map(int, args)
            calls = [[entity(i, observations) for i in range(s, s + per_call)] for s in range(first, first + count * per_call, per_call)]
            print(ours.write(calls), flush=True)
        else:
            print(ours.finish(), flush=True)


def measure(writers: dict, calls: list[list[dict]], chunk: int, name: str) -> dict[str, tuple[float, float]]:
    "Seconds each writer spent on ``calls``, taking turns every ``chunk`` calls, and its catch-up after the last."
    spent = dict.fromkeys(writers, 0.0)
    for writer in writers.values():
        writer.start(name)
    for turn, first in enumerate(range(0, len(calls), chunk)):
        labels = list(writers)
        for label in labels[turn % len(labels):] + labels[: turn % len(labels)]:  # who goes first rotates
            spent[label] += writers[label].write(calls[first : first + chunk])
    return {label: (spent[label], writer.finish()) for label, writer in writers.items()}


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="entities written by each side, one and 1,000 per call")
    parser.add_argument("--bulk", type=int, default=10_000, help="entities of the bulk load (5 observations each)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind of write; medians are printed")
    parser.add_argument("--semantic", action="store_true", help="with the semantic arm on (needs the vectors extra)")
    parser.add_argument("--before", help="a source tree of an earlier datasette-memory: the same calls on it too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.semantic)
    from datasette_memory import Config, SearchSettings

    if args.semantic and not Config(search=SearchSettings(semantic=True)).search.semantic_on():
        parser.error("--semantic needs the vectors extra: pip install 'datasette-memory[vectors]'")
    kinds = [("one per call", batches(args.n, 1, 1), ONE_AT_A_TIME_CHUNK, args.n),
             ("1,000 per call", batches(args.n, 1000, 1), 1, args.n),
             (f"bulk load, {args.bulk:,} entities with 5 observations, 1,000 per call", batches(args.bulk, 1000, 5), 1, args.bulk)]
    started = load()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        writers = {"datasette-memory": Ours(folder, args.semantic), "raw sqlite3": Raw(folder)}
        if args.before:
            writers["--before"] = Before(args.before, folder, args.semantic)
        rows = []
        for label, calls, chunk, size in kinds:
            runs = [measure(writers, calls, chunk, f"{len(rows)}-{run}") for run in range(args.runs)]
            medians = {w: (statistics.median(r[w][0] for r in runs), statistics.median(r[w][1] for r in runs)) for w in writers}
            rows.append((label, size, medians, [r["datasette-memory"][0] / r["raw sqlite3"][0] for r in runs]))
        getattr(writers.get("--before"), "close", lambda: None)()
    print_table(rows, args, started)


def print_table(rows: list, args: argparse.Namespace, started: str) -> None:
    arm = "semantic arm on" if args.semantic else "lexical"
    print(f"{args.n} entities each with one observation, one and 1,000 per call, and a bulk load; {arm}; "
          f"medians of {args.runs} runs, the writers taking turns; load {started} at the start, {load()} at the end")
    print("(mutations/s; a mutation is one entity, its observations and its ledger event)")
    head = "| writes | datasette-memory | raw sqlite3 | ratio (each run) |"
    rule = "|---|---:|---:|---:|"
    if args.before:
        head, rule = head + " --before | --before's ratio |", rule + "---:|---:|"
    if args.semantic:
        head, rule = head + " embedding done after the last write |", rule + "---:|"
    print(head)
    print(rule)
    for label, size, medians, ratios in rows:
        ours, raw = medians["datasette-memory"][0], medians["raw sqlite3"][0]
        each = ", ".join(f"{r:.1f}" for r in ratios)
        cells = [label, f"{size / ours:,.0f}/s ({ours:.2f} s)", f"{size / raw:,.0f}/s ({raw:.2f} s)", f"{ours / raw:.1f}x ({each})"]
        if args.before:
            before = medians["--before"][0]
            cells += [f"{size / before:,.0f}/s ({before:.2f} s)", f"{before / raw:.1f}x"]
        if args.semantic:
            cells.append(f"{medians['datasette-memory'][1]:.1f} s")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
