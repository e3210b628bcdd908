"""How many hook processes the Claude Code plugin's PostToolUse matcher saves, and what each one costs.

    python bench/hook_matcher.py [--runs 12] [--uvx PATH [--uvx-from SPEC]]

Counts tool calls by name, with and without the matcher in claude-plugin/hooks/hooks.json,
over two transcripts:

- published: the per-tool counts of 1,835 real Claude Code sessions that cc-multi's
  README prints as its sample output (github.com/yurukusa/cc-multi; solo plus parallel
  calls of each tool it lists);
- session: one bug-fixing session written out call by call below (find, read, test,
  edit, test again, commit), the shape of the sessions the hooks were written for.

Then times real ``datasette-memory hook tool`` processes on a memory file, a Read
payload (what the matcher now skips) and a Bash one (what it keeps) taking turns,
beside a bare ``python -c pass``, so saved calls become seconds; with ``--uvx``, also
the hook as ``uvx --from SPEC datasette-memory hook tool`` runs it, and with
``--offline`` (warm: its environment built once first; SPEC is this checkout unless
given, a built wheel stands for a release). Prints the load average.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
HOOKS = ROOT / "claude-plugin" / "hooks" / "hooks.json"
EXECUTABLE = pathlib.Path(sys.executable).parent / "datasette-memory"

# cc-multi's sample output: solo + parallel calls per tool, over 1,835 sessions
PUBLISHED = {
    "Bash": 36254 + 6124, "Read": 14821 + 13650, "Edit": 15891 + 1404, "Grep": 7823 + 5099, "Write": 4987 + 285,
    "Glob": 1089 + 2341, "TaskUpdate": 1089 + 925, "WebSearch": 1412 + 628, "TaskCreate": 614 + 491,
}
PUBLISHED_SESSIONS = 1835

# one session, call by call: a failing test reported, found, fixed and committed
SESSION = (
    ["TodoWrite", "Glob", "Grep", "Grep", "Read", "Read", "Read", "Bash"]  # find the code, run the failing test
    + ["Read", "Grep", "Read", "Read", "Read", "TodoWrite"]  # follow the call
    + ["Edit", "Bash", "Read", "Edit", "Edit", "Bash"]  # fix, test, fix again, test
    + ["Grep", "Read", "Read", "Edit", "Write", "Bash", "TodoWrite"]  # a second caller, a new test
    + ["Glob", "Read", "Edit", "Bash", "Bash", "Bash", "mcp__memory__add_observations", "TodoWrite"]  # docs, full run, commit
)


def matcher(event: str) -> str:
    (group,) = json.loads(HOOKS.read_text())["hooks"][event]
    return group["matcher"]


def counted(calls: dict[str, int], names: str) -> tuple[int, int]:
    "(all calls, calls the matcher lets through): the matcher is a regex Claude Code searches each tool name with."
    return sum(calls.values()), sum(n for tool, n in calls.items() if re.search(names, tool))


def tally(calls: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for tool in calls:
        found[tool] = found.get(tool, 0) + 1
    return found


def payload(tool: str, folder: pathlib.Path) -> bytes:
    tool_input = {"file_path": str(folder / "app.py")} if tool == "Read" else {"command": "pytest -q"}
    return json.dumps({"hook_event_name": "PostToolUse", "session_id": "bench", "cwd": str(folder), "tool_name": tool,
                       "tool_input": tool_input, "tool_response": {"stdout": "3 passed in 0.1s"}}).encode()


def timed(command: list[str], data: bytes) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=data, capture_output=True, check=True)
    return (time.perf_counter() - start) * 1000


def hook_costs(runs: int, uvx: str | None, uvx_from: str) -> dict[str, float]:
    "Median milliseconds of a hook process for Read and for Bash, and of a bare interpreter, taking turns."
    with tempfile.TemporaryDirectory() as folder:
        here = pathlib.Path(folder)
        arguments = ["hook", "tool", "--db", str(here / "memory.db"), "--project", "bench"]
        commands = {"hook tool (Read)": [str(EXECUTABLE), *arguments], "hook tool (Bash)": [str(EXECUTABLE), *arguments]}
        if uvx:
            commands["uvx ... hook tool (Read)"] = [uvx, "--from", uvx_from, "datasette-memory", *arguments]
            commands["uvx --offline ... (Read)"] = [uvx, "--offline", "--from", uvx_from, "datasette-memory", *arguments]
        for command in commands.values():
            timed(command, payload("Bash", here))  # creates and migrates the file; builds uvx's environment
        times: dict[str, list[float]] = {name: [] for name in [*commands, "python -c pass"]}
        for _ in range(runs):
            for name, command in commands.items():
                times[name].append(timed(command, payload("Bash" if "Bash" in name else "Read", here)))
            times["python -c pass"].append(timed([sys.executable, "-c", "pass"], b""))
    return {name: statistics.median(found) for name, found in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12, help="hook processes timed per kind")
    parser.add_argument("--uvx", help="also time the hook run by this uvx executable")
    parser.add_argument("--uvx-from", default=str(ROOT), help="what uvx installs: this checkout, or a wheel")
    options = parser.parse_args()
    runs = options.runs
    names = matcher("PostToolUse")
    assert names == matcher("PostToolUseFailure")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"matcher: {names}\n")
    print(f"{'transcript':<12}{'calls':>9}{'hooks before':>14}{'hooks after':>13}{'saved':>9}{'share':>8}")
    rows = [("published", PUBLISHED, PUBLISHED_SESSIONS), ("session", tally(SESSION), 1)]
    saved_per_session = {}
    for label, calls, sessions in rows:
        total, kept = counted(calls, names)
        saved_per_session[label] = (total - kept) / sessions
        print(f"{label:<12}{total:>9,}{total:>14,}{kept:>13,}{total - kept:>9,}{(total - kept) / total:>8.0%}")
    print("\nby tool (published, then session):")
    for label, calls, _ in rows:
        print("  " + ", ".join(f"{tool} {n:,}" for tool, n in sorted(calls.items(), key=lambda item: -item[1])))
    costs = hook_costs(runs, options.uvx, options.uvx_from)
    print(f"\nmedian of {runs} processes each, taking turns:")
    for name, ms in costs.items():
        print(f"  {name:<26}{ms:8.1f} ms")
    for form in [name for name in costs if "(Read)" in name]:
        for label, saved in saved_per_session.items():
            print(f"{form}, {label}: {saved:.1f} hook processes saved per session, {saved * costs[form] / 1000:.1f} s of process time")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
