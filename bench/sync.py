"""Sync by ledger: events per second for a first sync and an incremental one, beside the JSONL import of the same graph.

A laptop (A) holds a shared project of ``--events`` ledger events: entities made a
thousand a call, most with one observation, a few with a relation. A second laptop
(B), with nothing, syncs with A:

- through a bundle: A writes it (``bundle``), B syncs with it (takes A's events,
  replays the project in the total order, writes the difference), then A syncs
  with it back (takes B's echoes);
- through a hub (``--hub``): a real ``datasette-memory serve`` on loopback with a
  token, A syncing, then B.

A then takes B's echoes (the opaque links of the local changes B wrote), timed
apart. Then A makes ``--increment`` more events and both sync again (the incremental sync).
The baseline, in the same run: exporting A's graph as the official server's JSONL
and importing it into an empty file (what moving memory took before sync), as
events per second of the events the import wrote. Each timing is a wall clock
around the in-process call; the load average is printed before and after.

    python bench/sync.py [--events 100000] [--increment 1000] [--hub]
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from datasette_memory import Config, Memory, SearchSettings  # noqa: E402
from datasette_memory.graph.jsonl import export_lines, import_lines  # noqa: E402
from datasette_memory.sync.bundle import make_bundle, sync_bundle  # noqa: E402
from datasette_memory.sync.shared import share  # noqa: E402

LEXICAL = Config(search=SearchSettings(semantic=False))
PROJECT = "team"


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def peer(path: pathlib.Path) -> Memory:
    memory = Memory.open(path, project=PROJECT, actor="bench", config=LEXICAL)
    share(memory.conn, PROJECT, "bench")
    return memory


def events(memory: Memory) -> int:
    return memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]


def grow(memory: Memory, count: int, start: int) -> None:
    "About ``count`` more events: entities with an observation each (two events), a relation every tenth."
    made, i = 0, start
    while made < count:
        batch = min(500, max(1, (count - made) // 2))
        memory.create_entities([{"name": f"svc-{i + k}", "entityType": "service", "observations": [f"listens on port {i + k}"]}
                                for k in range(batch)])
        made += batch
        relations = [{"from": f"svc-{i + k}", "to": f"svc-{i + k + 1}", "relationType": "calls"} for k in range(0, batch, 10)]
        if made < count:
            relations = relations[:count - made]
            memory.create_relations(relations)
            made += len(relations)
        i += batch


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def via_bundle(a: Memory, b: Memory, folder: pathlib.Path) -> tuple[float, object]:
    bundle = folder / "team.bundle"
    _, writing = timed(make_bundle, a, bundle)
    report, taking = timed(sync_bundle, b, bundle)
    return writing + taking, report


def hub_sync(folder: pathlib.Path):
    from datasette_memory.sync.hub import sync_hub

    sys.path.insert(0, str(ROOT))
    from tests.test_sync import Hub

    hub = Hub(folder)
    return hub, lambda memory: sync_hub(memory, hub.url, hub.token)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--increment", type=int, default=1_000)
    parser.add_argument("--hub", action="store_true", help="sync through a real serve instead of a bundle")
    options = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench-sync-"))
    print(f"load average before: {load()}")
    a = peer(folder / "a.db")
    grow(a, options.events, 0)
    total = events(a)
    print(f"A holds {total:,} events ({folder})")
    b = peer(folder / "b.db")
    hub = None
    if options.hub:
        (folder / "hub").mkdir()
        hub, sync = hub_sync(folder / "hub")
        _, pushing = timed(sync, a)
        report, pulling = timed(sync, b)
        first = pushing + pulling
    else:
        first, report = via_bundle(a, b, folder)
    print(f"first sync:       {total:,} events in {first:.2f} s: {total / first:,.0f} events/s "
          f"({report.applied:,} local changes written on B)")
    # A takes B's echoes (opaque links of the changes B wrote), so the next sync starts from a settled pair
    settling = timed(sync, a)[1] if hub is not None else timed(sync_bundle, a, folder / "team.bundle")[1]
    print(f"settling:         A takes B's {report.applied:,} echoes in {settling:.2f} s")
    grow(a, options.increment, 10 * options.events)
    added = events(a) - total
    if hub is not None:
        _, pushing = timed(sync, a)
        report, pulling = timed(sync, b)
        incremental = pushing + pulling
    else:
        bundle = folder / "team.bundle"
        _, giving = timed(sync_bundle, a, bundle)
        report, taking = timed(sync_bundle, b, bundle)
        incremental = giving + taking
    print(f"incremental sync: {added:,} new events over {total:,} in {incremental:.2f} s: {added / incremental:,.0f} events/s "
          f"({report.applied:,} local changes written on B)")
    lines = list(export_lines(a.read_graph()))
    c = Memory.open(folder / "c.db", project=PROJECT, actor="bench", config=LEXICAL)
    _, importing = timed(import_lines, c, lines)
    imported = events(c)
    print(f"baseline, JSONL export and import of A's graph: {imported:,} events in {importing:.2f} s: "
          f"{imported / importing:,.0f} events/s")
    print(f"first sync / import: {(total / first) / (imported / importing):.2f}x the import's events per second")
    print(f"load average after: {load()}")
    if hub is not None:
        hub.stop()
    for memory in (a, b, c):
        memory.close()
    subprocess.run(["rm", "-rf", str(folder)], check=False)


if __name__ == "__main__":
    main()
