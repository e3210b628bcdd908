"""search_text's engines side by side: RE2 in this process, ripgrep, and the engine they replaced.

    python bench/regex_engines.py [--runs 7] [--rows 20000]

The baseline is the engine search_text had before google-re2: Python's ``re`` in a
child ``python -I`` process killed at the deadline (its worker is copied here, as it
was). Each engine matches the same values (observation-like lines, the sizes
search_text scans), taking turns pattern by pattern; the median of ``--runs`` calls
is printed, with the ratio to the baseline, the number of matches (they must agree)
and the load average. A pattern that backtracks forever stops the baseline at the
deadline (5 s, the SQL tools' default time limit).
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from datasette_memory.sqltools.regex import check_pattern, find_matches, ripgrep
from datasette_memory.sqltools.sql_errors import SqlLimitExceeded

DEADLINE = 5.0
WORKER = r"""
import json, re, sys
job = json.loads(sys.stdin.read())
pattern = re.escape(job["pattern"]) if job["fixed"] else job["pattern"]
regex = re.compile(pattern, re.IGNORECASE if job["ignore_case"] else 0)
found = []
for index, value in enumerate(job["values"]):
    offset = 0
    for line in value.split("\n"):
        for match in regex.finditer(line):
            if match.end() > match.start() and len(found) < job["limit"]:
                found.append([index, offset + match.start(), offset + match.end()])
        offset += len(line) + 1
print(json.dumps(found))
"""
PATTERNS = [
    ("a word", "checkout", False),
    ("a word found nowhere (all read)", "zebra", False),
    ("a class found nowhere", r"\d{5,}", False),
    ("a port number", r"port \d+", False),
    ("either of two, any case", "timeout|refused", True),
    ("a word boundary and a class", r"\b[A-Z][a-z]+Error\b", False),
    ("backtracks forever in re", "(a+)+$", False),
]
WORDS = "checkout api port service timeout refused retries cache ValueError KeyError deploy token queue worker".split()


def values(rows: int) -> list[str]:
    chance = random.Random(7)
    made = [" ".join(chance.choice(WORDS) for _ in range(12)) + f" port {chance.randrange(1000, 9999)}" for _ in range(rows)]
    return made + ["a" * 30 + "!"]


def baseline(found_in: list[str], pattern: str, ignore_case: bool, limit: int) -> list[tuple[int, int, int]]:
    job = {"pattern": pattern, "fixed": False, "ignore_case": ignore_case, "limit": limit, "values": found_in}
    try:
        done = subprocess.run([sys.executable, "-I", "-c", WORKER], input=json.dumps(job).encode(), capture_output=True,
                              timeout=DEADLINE, check=True)
    except subprocess.TimeoutExpired:
        raise SqlLimitExceeded("took longer")
    return [tuple(m) for m in json.loads(done.stdout)]


def timed(run) -> tuple[float, object]:
    start = time.perf_counter()
    try:
        result = run()
    except SqlLimitExceeded:
        result = "stopped at the deadline"
    return (time.perf_counter() - start) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--rows", type=int, default=20_000)
    options = parser.parse_args()
    texts = values(options.rows)
    limit = 1_000
    print(f"load average before: {os.getloadavg()[0]:.2f}; {len(texts):,} values, {sum(map(len, texts)):,} characters, "
          f"up to {limit:,} matches")
    engines = {
        "before: re in a child": lambda p, i: baseline(texts, p, i, limit),
        "RE2 in process": lambda p, i: find_matches(texts, p, i, False, limit, DEADLINE, "python"),
    }
    if ripgrep():
        engines["ripgrep"] = lambda p, i: find_matches(texts, p, i, False, limit, DEADLINE, "ripgrep")
    print(f"{'pattern':<30}" + "".join(f"{name:>26}" for name in engines))
    for label, pattern, ignore_case in PATTERNS:
        check_pattern(pattern, False, ignore_case, 1000)
        times: dict[str, list[float]] = {name: [] for name in engines}
        results: dict[str, object] = {}
        for _ in range(options.runs if label != PATTERNS[-1][0] else 1):
            for name, run in engines.items():
                ms, results[name] = timed(lambda: run(pattern, ignore_case))
                times[name].append(ms)
        base = statistics.median(times["before: re in a child"])
        cells = []
        for name in engines:
            ms = statistics.median(times[name])
            found = results[name]
            count = f"{len(found)}" if isinstance(found, list) else "stopped"
            cells.append(f"{ms:9.1f} ms {base / ms:5.1f}x {count:>7}")
        print(f"{label:<30}" + "".join(f"{cell:>26}" for cell in cells))
        answers = [r for r in results.values() if isinstance(r, list)]
        assert all(r == answers[-1] for r in answers), f"the engines disagree on {pattern}"
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
