"""Hook speed: `datasette-memory hook prompt`, `hook tool` and `hook session-start` as processes on a 100,000-entity file.

A hook runs on every prompt and after every tool call, as a new process each
time, so its wall time is what the agent waits. This times each hook the way an
agent runs it: ``python -m datasette_memory hook SUBCOMMAND --db FILE --project
bench`` with the event's JSON on stdin, from the start of the process to its
exit, ``--calls`` times each, taking turns, and prints p50, p95 and the slowest
beside the targets (p95 under 300 ms for prompt and tool, 500 ms for
session-start).

The file is bench/search_scale.py's: one project of 100,000 entities with 5
observations each, built through the core API and cached under
/tmp/datasette-memory-search-scale/ (built on the first run, a few minutes).
It is copied first, since hooks write (a session's start, each tool call), and
given what a working project has: a checkpoint, 40 events since it, 20 facts a
person recorded, 3 pending claims and 300 tool calls over 3 sessions. The
prompts are search_scale.py's questions (half answerable, half about things
never stored); each tool call is one of the recorded payloads in
tests/hook_payloads/ (an edit, a test run, a failed command, an apply_patch).

Before the hooks, the same table for what every hook pays before it does
anything: Python starting (``python -c pass``) and importing the command
(``python -c "import datasette_memory.cli"``); and, for comparison, that import
with sqlite-utils too, which core.migrations now imports only when a migration
must run (sqlite-utils imports numpy where numpy is installed, as the semantic
extra installs it). Then, in process, what search's sample of a project (``search/project_sample.py``,
about 1,000 entities, kept per process) costs a process that has none yet, as every
hook process is; and where the import spends its time, from ``python -X importtime``.

    python bench/hooks_speed.py [--calls 40] [--entities 100000] [--rebuild]
"""

import argparse
import asyncio
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from search_scale import PROJECT, Corpus, Matching, build, queries

from datasette_memory import Memory

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAYLOADS = ROOT / "tests" / "hook_payloads"
TARGETS = {"prompt": 300, "tool": 300, "session-start": 500}
TOOL_PAYLOADS = ["claude_post_tool_use_edit", "claude_post_tool_use_bash_pytest", "claude_post_tool_use_failure_bash",
                 "codex_post_tool_use_apply_patch"]
STARTUP = {
    "python -c pass": "pass",
    "import datasette_memory.cli": "import datasette_memory.cli",
    "import datasette_memory.cli, sqlite_utils": "import datasette_memory.cli, sqlite_utils",
}


def load() -> str:
    return "load " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def log(message: str) -> None:
    print(f"  {message} ({load()})", file=sys.stderr, flush=True)


def payload(name: str, cwd: pathlib.Path, **changes) -> dict:
    "A recorded payload, moved to ``cwd``."
    return {**json.loads((PAYLOADS / f"{name}.json").read_text().replace("/home/dev/app", str(cwd))), **changes}


def reviewer():
    "A person holding memory-approve, issued by the real gate, to record facts as a person would."
    from datasette.app import Datasette
    from datasette.utils.asgi import Request

    from datasette_memory.governed.gate import reviewer_for_request
    from datasette_memory.governed.person_actions import APPROVE_ACTION

    async def issue():
        datasette = Datasette(config={"permissions": {APPROVE_ACTION: {"id": ["alice"]}}})
        await datasette.invoke_startup()
        request = Request.fake("/-/memory/claims/1/approve", method="POST")
        request.scope["actor"] = {"id": "alice"}
        return await reviewer_for_request(datasette, request)

    return asyncio.run(issue())


def working_project(db: pathlib.Path, cwd: pathlib.Path) -> None:
    "What a project in use holds besides its entities: a checkpoint, events, facts, claims and three sessions' activity."
    memory = Memory.open(db, project=PROJECT, actor="claude", session="bench-mcp")
    memory.checkpoint("Sharded the billing workers by region.\nNext: move the loyalty databases to the new cluster.")
    for i in range(40):
        memory.append_event(f"decision {i}: keep the {i}th worker on the old cluster until the migration window", kind="decision")
    person = reviewer()
    for i in range(20):
        memory.governed.record_fact(person, f"billing-worker-{i:04d}", "runs in", f"region eu-west-{i % 3 + 1}", "the runbook")
    for i in range(3):
        memory.governed.propose_claim(f"loyalty-db-{i:04d}", "owned by", "the data team", ["org chart"])
    memory.close()
    for session in range(3):
        for i in range(100):
            sent = payload(TOOL_PAYLOADS[i % len(TOOL_PAYLOADS)], cwd, session_id=f"earlier-session-{session}")
            hook("tool", sent, db)


def hook(subcommand: str, sent: dict, db: pathlib.Path) -> tuple[float, subprocess.CompletedProcess]:
    "One hook run as its own process: its wall time in milliseconds, and what it did."
    command = [sys.executable, "-m", "datasette_memory", "hook", subcommand, "--db", str(db), "--project", PROJECT]
    started = time.perf_counter()
    done = subprocess.run(command, input=json.dumps(sent).encode(), capture_output=True)
    ms = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or done.stderr:
        raise SystemExit(f"hook {subcommand} failed: {done.stderr.decode()}")
    return ms, done


def startup_ms(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return (time.perf_counter() - started) * 1000


WATCHED = ("datasette_memory", "datasette_memory.sqltools", "sqlite_utils", "datasette_memory.cli.serve", "asyncio", "yaml",
           "click", "datasette_memory.cli.hook")


def import_times() -> list[tuple[str, float]]:
    "How long importing ``datasette_memory.cli`` spends in each of :data:`WATCHED` (``-X importtime``'s cumulative ms, one run)."
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import datasette_memory.cli"], capture_output=True, text=True)
    found: dict[str, float] = {}
    for line in done.stderr.splitlines()[1:]:
        _, cumulative, name = line.split("|")
        if name.strip() in WATCHED:
            found.setdefault(name.strip(), int(cumulative) / 1000)
    return [(name, found[name]) for name in WATCHED if name in found]


def sample_ms(db: pathlib.Path, runs: int) -> list[float]:
    "What search's project sample costs a process that has none yet (every hook process): taking it, in process, ``runs`` times."
    from datasette_memory.search import project_sample

    memory = Memory.open(db, project=PROJECT)
    size = project_sample.project_size(memory.conn, PROJECT)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        project_sample.take(memory.conn, PROJECT, size)
        times.append((time.perf_counter() - started) * 1000)
    memory.close()
    return times


def quantiles(values: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(values, n=100)
    return statistics.median(values), cuts[94], max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="runs of each hook")
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--rebuild", action="store_true", help="build the cached 100,000-entity file again")
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args()
    started = load()
    corpus = Corpus(args.entities, 5, args.seed)
    built = build(corpus, args.rebuild)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = pathlib.Path(tmp) / "app"
        (cwd / ".git").mkdir(parents=True)
        db = pathlib.Path(tmp) / "memory.db"
        log(f"copying {built.db} ({built.db.stat().st_size / 1e6:,.0f} MB)")
        shutil.copyfile(built.db, db)
        witness = built.db.with_name(built.db.name + ".head.json")
        if witness.exists():
            shutil.copyfile(witness, db.with_name(db.name + ".head.json"))
        log("adding a checkpoint, events, facts, claims and 300 tool calls")
        working_project(db, cwd)
        raw = __import__("sqlite3").connect(f"file:{db}?mode=ro", uri=True)
        found = queries(corpus, args.calls, random.Random(f"{args.seed}:hook prompts"), Matching(raw))
        raw.close()
        prompts = [q.text for pair in zip(found["question"], found["abstention"]) for q in pair][: args.calls]
        times: dict[str, list[float]] = {name: [] for name in (*STARTUP, *TARGETS)}
        injected = 0
        for name, code in STARTUP.items():
            startup_ms(code)  # once untimed: the file cache
        hook("prompt", payload("claude_user_prompt_submit", cwd, prompt=prompts[0]), db)
        log(f"timing {args.calls} runs of each")
        for i in range(args.calls):
            for name, code in STARTUP.items():
                times[name].append(startup_ms(code))
            ms, done = hook("prompt", payload("claude_user_prompt_submit", cwd, prompt=prompts[i % len(prompts)]), db)
            times["prompt"].append(ms)
            injected += bool(done.stdout)
            times["tool"].append(hook("tool", payload(TOOL_PAYLOADS[i % len(TOOL_PAYLOADS)], cwd, session_id="bench-session"), db)[0])
            source = ("startup", "resume", "clear", "compact")[i % 4]
            times["session-start"].append(hook("session-start", payload(f"claude_session_start_{source}", cwd), db)[0])
        imports = import_times()
        sampled = sample_ms(db, args.calls)
    print(f"### Hooks on {args.entities:,} entities x 5 observations\n")
    print(f"The file {built.db.stat().st_size / 1e6:,.0f} MB, copied from {built.folder.name}; {args.calls} runs of each, "
          f"taking turns; {injected} of the {args.calls} prompts injected a match. {started} at the start, {load()} at the end.\n")
    print("| run as a process | p50 ms | p95 ms | slowest ms | target, p95 |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        p50, p95, slowest = quantiles(values)
        label = f"`hook {name}`" if name in TARGETS else f"`{name}`"
        target = f"{TARGETS[name]} ms: {'met' if p95 < TARGETS[name] else 'not met'}" if name in TARGETS else ""
        print(f"| {label} | {p50:.0f} | {p95:.0f} | {slowest:.0f} | {target} |")
    p50, p95, slowest = quantiles(sampled)
    print(f"| in process: search's sample of the project, taken once per process | {p50:.0f} | {p95:.0f} | {slowest:.0f} | |")
    print("\nWhere importing `datasette_memory.cli` spends its time (`python -X importtime`, cumulative ms, one run; "
          "each package counts what it imports, so the rows overlap):\n")
    print(", ".join(f"{name} {ms:.0f}" for name, ms in imports))


if __name__ == "__main__":
    main()
