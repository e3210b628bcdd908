"""What the extension points cost, each beside the same work without it, in one run.

- secret scan: milliseconds per kilobyte over the retrieval corpora's ordinary text
  (as ``bench/secret_scanners.py``), by the built-in scanner alone (the code path
  before the hook), by ``find_secrets`` with no plugin patterns, and with the
  example plugin's pattern registered;
- writes: one ``add_observations`` call each, with the hook's bookkeeping taken out
  (the code path before the hook), with no ``memory_event`` implementation, and
  with one that does nothing;
- a new process: the first hook call a writer makes (the secret scan's) imports
  pluggy and reads the installed entry points; timed in fresh interpreters that
  have imported the hook command, with and without the example plugin on the path.

Rounds take turns, so a busy machine slows each alike; medians are printed.

Run: ``python bench/plugin_hooks.py [--writes 300] [--rounds 5]``
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.secret_scanners import ordinary_texts  # noqa: E402
from datasette_memory import Config, Memory, SearchSettings, hookimpl  # noqa: E402
from datasette_memory.core import plugins, secrets  # noqa: E402

EXAMPLE = ROOT / "tests" / "example_plugin"


def built_in_only(text: str) -> list:
    "find_secrets as it was before the hook: the built-in scanner alone."
    text = secrets.normalize(text)
    return secrets.full_scan(text) if secrets.suspect(text) else []


def scan_ms_per_kb(scan, texts: list[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        scan(text)
    return (time.perf_counter() - started) * 1000 / (sum(len(t.encode()) for t in texts) / 1024)


class Nothing:
    @hookimpl
    def memory_event(self, event):
        pass


def write_ms(path: pathlib.Path, writes: int) -> float:
    memory = Memory.open(path, project="p", actor="bench", config=Config(search=SearchSettings(semantic=False)))
    memory.create_entities([{"name": "e", "entityType": "t", "observations": []}])
    started = time.perf_counter()
    for i in range(writes):
        memory.add_observations([{"entityName": "e", "contents": [f"observation {i} of the benchmark"]}])
    elapsed = (time.perf_counter() - started) * 1000 / writes
    memory.close()
    return elapsed


def without_bookkeeping(run):
    "Run with the hook's per-transaction bookkeeping replaced by nothing: the write path before the hook."
    saved = plugins.appended, plugins.committed, plugins.rolled_back, plugins.appended_count
    plugins.appended = lambda conn, event: None
    plugins.committed = lambda conn: None
    plugins.rolled_back = lambda conn, to=0: None
    plugins.appended_count = lambda conn: 0
    try:
        return run()
    finally:
        plugins.appended, plugins.committed, plugins.rolled_back, plugins.appended_count = saved


def first_load_ms(with_example: bool) -> float:
    code = ("import time; import datasette_memory.cli.hook; from datasette_memory.core import plugins; "
            "t = time.perf_counter(); plugins.secret_patterns(); print((time.perf_counter() - t) * 1000)")
    path = os.pathsep.join(([str(EXAMPLE)] if with_example else []) + [str(ROOT)])
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                         text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    texts = ordinary_texts()
    manager = plugins.plugin_manager()
    sys.path.insert(0, str(EXAMPLE))
    import datasette_memory_acme

    scans: dict[str, list[float]] = {"built-in scanner alone (before)": [], "find_secrets, no plugin": [],
                                     "find_secrets, the example's pattern": []}
    for _ in range(args.rounds):
        scans["built-in scanner alone (before)"].append(scan_ms_per_kb(built_in_only, texts))
        scans["find_secrets, no plugin"].append(scan_ms_per_kb(secrets.find_secrets, texts))
        manager.register(datasette_memory_acme, "acme")
        scans["find_secrets, the example's pattern"].append(scan_ms_per_kb(secrets.find_secrets, texts))
        manager.unregister(name="acme")
    print(f"\nsecret scan over {len(texts):,} ordinary strings, ms per KB (median of {args.rounds})")
    base = statistics.median(scans["built-in scanner alone (before)"])
    for label, values in scans.items():
        print(f"  {label:40} {statistics.median(values):7.3f}  {statistics.median(values) / base:5.2f}x")

    writes: dict[str, list[float]] = {"no bookkeeping (before)": [], "no memory_event implementation": [],
                                      "one that does nothing": []}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            writes["no bookkeeping (before)"].append(
                without_bookkeeping(lambda: write_ms(pathlib.Path(folder) / f"a{r}.db", args.writes)))
            writes["no memory_event implementation"].append(write_ms(pathlib.Path(folder) / f"b{r}.db", args.writes))
            manager.register(Nothing(), "nothing")
            writes["one that does nothing"].append(write_ms(pathlib.Path(folder) / f"c{r}.db", args.writes))
            manager.unregister(name="nothing")
    print(f"\nadd_observations, ms per call ({args.writes} calls, median of {args.rounds})")
    base = statistics.median(writes["no bookkeeping (before)"])
    for label, values in writes.items():
        print(f"  {label:40} {statistics.median(values):7.3f}  {statistics.median(values) / base:5.2f}x")

    loads: dict[str, list[float]] = {"defaults and entry points": [], "the same, with the example installed": []}
    for _ in range(args.rounds):
        loads["defaults and entry points"].append(first_load_ms(False))
        loads["the same, with the example installed"].append(first_load_ms(True))
    print(f"\nfirst secret scan's hook call in a new hook process, ms (median of {args.rounds})")
    for label, values in loads.items():
        print(f"  {label:40} {statistics.median(values):7.1f}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
