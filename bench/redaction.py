"""Redaction at scale: what a person waits for, beside raw sqlite3 rewriting the same file.

Builds a memory file through the core API: ``--entities`` entities (1,000 per
``create_entities`` call, two observations each), then a key leaked into
``--leaks`` observations of different entities, one of them deleted again (so the
deleted-words index holds it). Then, in one run: ``Memory.redact`` of the key
(the redaction's transaction: finding every string holding it, rewriting them
and their events, optimizing the word indexes; then ``VACUUM`` and the log
truncated), timed whole and by step, beside raw sqlite3's ``VACUUM`` of a copy of
the same file; and the raw bytes of the file checked for the key afterwards.

    python bench/redaction.py [--entities 100000] [--leaks 10]
"""

import argparse
import pathlib
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))

from datasette_memory import Config, Memory, SearchSettings  # noqa: E402
from datasette_memory.history import redaction  # noqa: E402
from hooks_speed import reviewer  # noqa: E402  (a person holding memory-approve, issued by the real gate)

KEY = "sk-live-BENCHLEAK-8f3a1c"


def build(path: pathlib.Path, entities: int, leaks: int) -> Memory:
    memory = Memory.open(path, project="team", config=Config(search=SearchSettings(semantic=False)), allow_secrets=True)
    for start in range(0, entities, 1000):
        memory.create_entities([{"name": f"svc-{i}", "entityType": "service",
                                 "observations": [f"handles request type {i}", f"owned by team {i % 37}"]}
                                for i in range(start, min(start + 1000, entities))])
    step = max(1, entities // leaks)
    memory.add_observations([{"entityName": f"svc-{i}", "contents": [f"token {KEY} for job {i}"]} for i in range(0, entities, step)[:leaks]])
    memory.delete_observations([{"entityName": "svc-0", "observations": [f"token {KEY} for job 0"]}])
    return memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--leaks", type=int, default=10)
    arguments = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench-redaction-"))
    try:
        path = folder / "memory.db"
        memory = build(path, arguments.entities, arguments.leaks)
        events = memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]
        memory.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = path.stat().st_size
        copy = folder / "copy.db"
        shutil.copy(path, copy)
        person = reviewer()

        steps = {}
        apply, purge = redaction.apply, redaction.purge

        def timed(name, function):
            def run(*args, **kwargs):
                started = time.perf_counter()
                result = function(*args, **kwargs)
                steps[name] = time.perf_counter() - started
                return result
            return run

        redaction.apply, redaction.purge = timed("rewrite", apply), timed("vacuum", purge)
        started = time.perf_counter()
        done = memory.redact(person, KEY, "a leaked key", "svc-0")
        whole = time.perf_counter() - started
        redaction.apply, redaction.purge = apply, purge
        memory.close()

        raw = sqlite3.connect(copy, isolation_level=None)
        started = time.perf_counter()
        raw.execute("VACUUM")
        raw_vacuum = time.perf_counter() - started
        raw.close()

        held = KEY.encode() in path.read_bytes()
        print(f"file: {arguments.entities:,} entities, {events:,} events, {size / 1e6:.1f} MB; "
              f"the key in {arguments.leaks} observations (one deleted again)")
        print(f"redact: {whole:.2f} s (rewrite {steps['rewrite']:.2f} s, VACUUM and log {steps['vacuum']:.2f} s); "
              f"replaced {done['replaced']}")
        print(f"raw sqlite3 VACUUM of the same file: {raw_vacuum:.2f} s; redact / raw VACUUM: {whole / raw_vacuum:.2f}x")
        print(f"the key in the file's bytes afterwards: {'yes' if held else 'no'}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
