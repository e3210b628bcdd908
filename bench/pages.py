"""Page latency: the memory pages, through Datasette in-process, against raw sqlite3 reading what each page shows.

Builds a memory file of N entities in a chain of relations (two ledger events per
entity) and a busy entity with 200 added observations, then times each page (the
first request, and the median of the next ones) and, side by side in the same run,
a raw sqlite3 query for the rows the page is about:

- overview: per-project counts (the page also walks the hash chain up to 20,000 events)
- review: the pending claims
- ledger, ledger filtered to one entity: the newest 50 events
- entity (busy, quiet): the entity's observations
- search: an FTS5 match

    python bench/pages.py [--entities 100000] [--runs 5]
"""

import argparse
import asyncio
import pathlib
import sqlite3
import statistics
import tempfile
import time

from datasette.app import Datasette

from datasette_memory import Config, Memory, SearchSettings

BUSY, QUIET = "e5", "e500"
PAGES = [
    ("overview", "/-/memory", "SELECT project, count(*) FROM entities GROUP BY project"),
    ("review", "/-/memory/review?project=p", "SELECT * FROM claims WHERE project = 'p' AND status = 'candidate'"),
    ("ledger", "/-/memory/ledger?project=p", "SELECT * FROM events WHERE project = 'p' ORDER BY id DESC LIMIT 50"),
    (
        "ledger, one entity",
        f"/-/memory/ledger?project=p&entity={BUSY}",
        f"SELECT * FROM events WHERE project = 'p' AND target = '{BUSY}' ORDER BY id DESC LIMIT 50",
    ),
    *(
        (
            f"entity ({which})",
            f"/-/memory/entity?project=p&name={name}",
            f"SELECT o.content FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.project = 'p' AND e.name = '{name}'",
        )
        for which, name in (("busy", BUSY), ("quiet", QUIET))
    ),
    (
        "search",
        "/-/memory/search?project=p&q=which+service+calls+e7",
        "SELECT rowid FROM observations_fts WHERE observations_fts MATCH 'e7' LIMIT 10",
    ),
]


def build(path, n):
    memory = Memory.open(path, project="p", actor="bench", config=Config(search=SearchSettings(semantic=False)))
    for start in range(0, n, 1000):
        end = min(start + 1000, n)
        memory.create_entities([{"name": f"e{i}", "entityType": "service", "observations": [f"service e{i}"]} for i in range(start, end)])
        memory.create_relations([{"from": f"e{i}", "to": f"e{i + 1}", "relationType": "calls"} for i in range(start, end - 1)])
    for j in range(200):
        memory.add_observations([{"entityName": BUSY, "contents": [f"note {j} about {BUSY}"]}])
    memory.governed.propose_claim(BUSY, "owner", "Dana")
    events = memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]
    memory.close()
    return events


def timings(function, runs):
    "(first, median of the rest) in milliseconds."
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return times[0], statistics.median(times[1:])


async def page_timings(path, runs):
    datasette = Datasette([str(path)], config={"plugins": {"datasette-memory": {"database": path.stem}}})
    await datasette.invoke_startup()
    results = {}
    for label, url, _ in PAGES:
        times = []
        for _ in range(runs + 1):
            start = time.perf_counter()
            response = await datasette.client.get(url)
            times.append((time.perf_counter() - start) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code} {response.text[:300]}")
        results[label] = (times[0], statistics.median(times[1:]))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000, help="entities in the memory file")
    parser.add_argument("--runs", type=int, default=5, help="requests after the first, for the median")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "memory.db"
        started = time.perf_counter()
        events = build(path, args.entities)
        print(f"{args.entities:,} entities, {events:,} ledger events (built in {time.perf_counter() - started:.0f} s)")
        ours = asyncio.run(page_timings(path, args.runs))
        raw = sqlite3.connect(path)
        print(f"{'page':20} {'first ms':>9} {'median ms':>10} {'raw sqlite ms':>14} {'ratio':>8}")
        for label, _, sql in PAGES:
            _, raw_median = timings(lambda sql=sql: raw.execute(sql).fetchall(), args.runs)
            first, median = ours[label]
            print(f"{label:20} {first:9.1f} {median:10.1f} {raw_median:14.2f} {median / raw_median:7.0f}x")


if __name__ == "__main__":
    main()
