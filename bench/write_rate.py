"""Write rate: datasette-memory (ledger included) against raw sqlite3 inserts of the same rows.

Both sides write to a WAL file on the same disk with the same pragmas, measured
side by side in one run:

- one mutation per transaction (how agents call it): one entity with one observation
- batches of 1,000 entities per call (an import)

    python bench/write_rate.py [--n 5000]
"""

import argparse
import pathlib
import sqlite3
import tempfile
import time

from datasette_memory import Memory


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
    n = parser.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for label, size in (("one per call", 1), ("1,000 per call", 1000)):
            batches = [[entity(i) for i in range(s, min(s + size, n))] for s in range(0, n, size)]
            memory = Memory.open(pathlib.Path(tmp) / f"memory-{size}.db", actor="bench")
            raw = raw_connection(str(pathlib.Path(tmp) / f"raw-{size}.db"))
            ours = timed(memory.create_entities, batches)
            floor = timed(lambda batch: raw_insert(raw, batch), batches)
            assert memory.verify_chain().events == n
            rows.append((label, n / ours, n / floor, ours / floor))
    print(f"{n} entities, each with one observation (mutations/s; a mutation is one entity and its ledger event)")
    print("| writes | datasette-memory | raw sqlite3 | ratio |")
    print("|---|---:|---:|---:|")
    for label, ours, floor, ratio in rows:
        print(f"| {label} | {ours:,.0f}/s | {floor:,.0f}/s | {ratio:.1f}x slower |")


if __name__ == "__main__":
    main()
