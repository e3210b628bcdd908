"""Write rate: datasette-memory (ledger included) against raw sqlite3 inserts of the same rows.

Both sides write to a WAL file on the same disk with the same pragmas, measured
side by side in one run:

- one mutation per transaction (how agents call it): one entity with one observation
- batches of 1,000 entities per call (an import)

Lexical by default; with --semantic (needs the vectors extra) the semantic arm is on:
writes return without waiting for the model, and the time the background catch-up
takes after the last write returns is printed too.

    python bench/write_rate.py [--n 5000] [--semantic]
"""

import argparse
import pathlib
import sqlite3
import tempfile
import time

from datasette_memory import Config, Memory, SearchSettings


def entity(i):
    return {"name": f"entity-{i}", "entityType": "service", "observations": [f"listens on port {i}"]}


def raw_connection(path):
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


def raw_insert(conn, entities):
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


def timed(function, batches):
    start = time.perf_counter()
    for batch in batches:
        function(batch)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="entities written by each side")
    parser.add_argument("--semantic", action="store_true", help="with the semantic arm on (needs the vectors extra)")
    args = parser.parse_args()
    n, config = args.n, Config(search=SearchSettings(semantic=args.semantic))
    if args.semantic and not config.search.semantic_on():
        parser.error("--semantic needs the vectors extra: pip install 'datasette-memory[vectors]'")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, size in (("one per call", 1), ("1,000 per call", 1000)):
            batches = [[entity(i) for i in range(s, min(s + size, n))] for s in range(0, n, size)]
            memory = Memory.open(pathlib.Path(tmp) / f"memory-{size}.db", actor="bench", config=config)
            raw = raw_connection(str(pathlib.Path(tmp) / f"raw-{size}.db"))
            ours = timed(memory.create_entities, batches)
            catch_up = timed(lambda _: memory.wait_for_semantic_index(), [None])  # before raw sqlite3 runs, so it has the cores
            floor = timed(lambda batch: raw_insert(raw, batch), batches)
            assert memory.verify_chain().events == n
            rows.append((label, n / ours, n / floor, ours / floor, catch_up))
    arm = "semantic arm on" if args.semantic else "lexical"
    print(f"{n} entities, each with one observation, {arm} (mutations/s; a mutation is one entity and its ledger event)")
    print("| writes | datasette-memory | raw sqlite3 | ratio |" + (" embedding done after the last write |" if args.semantic else ""))
    print("|---|---:|---:|---:|" + ("---:|" if args.semantic else ""))
    for label, ours, floor, ratio, catch_up in rows:
        tail = f" {catch_up:.1f} s |" if args.semantic else ""
        print(f"| {label} | {ours:,.0f}/s | {floor:,.0f}/s | {ratio:.1f}x slower |{tail}")


if __name__ == "__main__":
    main()
