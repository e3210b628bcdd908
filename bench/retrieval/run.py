"""Retrieval benchmark: datasette-memory against the official MCP memory server, side by side.

Loads a corpus into both servers over MCP stdio, applies its updates to both, runs every
query of a query file through a search tool and prints one markdown table.

Corpora (see corpora.py), each a folder with corpus.jsonl, updates.jsonl and two query files:
  services       (this folder) short facts about services, people and decisions;
                 queries.jsonl (368 queries; the search's thresholds were tuned on them) and
                 heldout.jsonl (100 queries written apart from the search code, never tuned on)
  conversations  (conversations/) long conversations, one entity per session whose
                 observations are its turns; queries.jsonl (148) and heldout.jsonl (80),
                 each answerable query naming its answering turn (answer_text)

    python bench/retrieval/run.py [--corpus services|conversations]
                                  [--tool search_nodes|search_memory] [--limit N]
                                  [--queries queries.jsonl|heldout.jsonl]
                                  [--extra-args="--flag value"] [--verbose]

Ours:     python -m datasette_memory mcp --db <tmp>/memory.db [extra args], one process,
          the project passed on every call.
Official: node tests/official/node_modules/@modelcontextprotocol/server-memory/dist/index.js,
          which has no projects: one process and one MEMORY_FILE_PATH per project.
          Install it with: npm ci --prefix tests/official
--tool search_memory runs our richer tool (the official server keeps search_nodes); if our
server has no such tool the run says so and uses search_nodes.

Metrics, per query kind (ranks over the entities a search returns, in order):
  recall@k   1 if a relevant entity is in the top k, else 0 (success@k; nDCG@10 credits
             the other relevant entities and their order)
  MRR        1 / rank of the first relevant entity, 0 if none is returned
  nDCG@10    graded: the first listed relevant entity has gain 2, the others 1
  turn recall@5  1 if (one of) the query's answer_text is in the text of the top 5 entities
             (a column only for query files with answer_text: the conversations corpus)
  (these over queries that have relevant entities)
  abstention fraction of queries with relevant == [] that returned no entity
  cross-project leaks  returned entities that exist only in another project, plus
                       forbidden_text from another project found in a result
  deleted-item leaks   results holding an entity or observation that updates.jsonl
                       deleted (the query's forbidden_text included)
  entities/query, bytes/query  what an answer costs the agent's context window
  search call, median ms       each search call's time seen by the client, stdio included
"""

import argparse
import asyncio
import json
import os
import pathlib
import shlex
import statistics
import sys
import tempfile
import time

from corpora import CORPORA, HERE, KINDS, Data
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from scoring import mean, returned, score

ROOT = HERE.parent.parent
OFFICIAL = ROOT / "tests" / "official" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


# ---- talking to the servers


def answer(result, ms: float) -> dict:
    "What a search call returned, as :func:`scoring.returned` describes it."
    texts = [c.text for c in result.content if getattr(c, "text", None) is not None]
    data = result.structured_content
    if data is None and texts:
        try:
            data = json.loads(texts[0])
        except ValueError:
            data = None
    size = sum(len(t.encode()) for t in texts) or len(json.dumps(data or {}).encode())
    error = texts[0] if result.is_error and texts else None
    return returned(None if result.is_error else data, texts, size, error, ms)


async def session(transport, jobs, tool: str, pass_project: bool, limit) -> tuple[str, dict]:
    """
    Run ``jobs`` (project, setup calls, queries) on one server; return the search tool used
    and each query's answer by id.
    """
    answers = {}
    async with Client(transport, mode="legacy") as client:
        offered = {t.name for t in await client.list_tools()}
        if tool not in offered:
            print(f"Our server has no {tool!r} tool: running search_nodes only.", file=sys.stderr)
            tool = "search_nodes"
        # everything is stored before anything is asked, as in a memory in use
        for project, calls, _ in jobs:
            scope = {"project": project} if pass_project else {}
            for name, args in calls:
                await client.call_tool(name, {**args, **scope})
        if "search_memory" in offered:
            await semantic_index_caught_up(client)
        for project, _, queries in jobs:
            scope = {"project": project} if pass_project else {}
            for q in queries:
                args = {"query": q["query"], **scope, **({"limit": limit} if limit and tool != "search_nodes" else {})}
                started = time.perf_counter()
                result = await client.call_tool(tool, args, raise_on_error=False)
                answers[q["id"]] = answer(result, (time.perf_counter() - started) * 1000)
    return tool, answers


async def semantic_index_caught_up(client, timeout_s: float = 600) -> None:
    "Wait until our semantic index holds every change: search_memory reports it (``semantic``) while it lags."
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lag = (await client.call_tool("search_memory", {"query": "index"})).structured_content.get("semantic")
        if lag is None or lag["state"] == "not built":
            return
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the semantic index did not catch up in {timeout_s} s")


def our_transport(tmp: pathlib.Path, extra_args: list[str]) -> StdioTransport:
    args = ["-m", "datasette_memory", "mcp", "--db", str(tmp / "memory.db"), *extra_args]
    env = {"PYTHONPATH": os.pathsep.join(sys.path), "FASTMCP_LOG_LEVEL": "WARNING"}
    env.update((k, v) for k, v in os.environ.items() if k.startswith("DATASETTE_MEMORY_"))  # e.g. _NO_VECTORS, _RRF_*
    return StdioTransport(sys.executable, args, env=env, keep_alive=False, log_file=tmp / "ours.log")


def official_transport(tmp: pathlib.Path, project: str) -> StdioTransport:
    env = {"MEMORY_FILE_PATH": str((tmp / f"official-{project}.jsonl").resolve())}
    return StdioTransport("node", [str(OFFICIAL)], env=env, keep_alive=False, log_file=tmp / f"official-{project}.log")


async def run_both(data: Data, tool: str, extra_args: list[str], limit) -> dict:
    "Both servers' answers: {'ours': (tool, answers), 'official': ('search_nodes', answers)}."
    jobs = {p: (p, data.setup_calls(p), [q for q in data.queries if q["project"] == p]) for p in data.projects}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ours = session(our_transport(tmp, extra_args), list(jobs.values()), tool, True, limit)
        official = [session(official_transport(tmp, p), [jobs[p]], "search_nodes", False, None) for p in data.projects]
        try:
            results = await asyncio.gather(ours, *official)
        except Exception:
            for log in sorted(tmp.glob("*.log")):  # the servers' stderr, kept quiet unless a run fails
                print(f"--- {log.name}\n{log.read_text()[-3000:]}", file=sys.stderr)
            raise
    merged = {}
    for _, answers in results[1:]:
        merged.update(answers)
    return {"ours": results[0], "official": ("search_nodes", merged)}


# ---- the report


def cell(ours, official, fmt="{:.2f}"):
    if ours is None and official is None:
        return "–"
    show = lambda v: "–" if v is None else fmt.format(v)
    return f"{show(ours)} / {show(official)}"


def table(data: Data, scores: dict) -> str:
    """
    The markdown report: per-kind metrics, then leaks and errors, ours / official in each
    cell; a turn recall@5 column when the queries name their answering turns.
    """
    turns = any("answer_text" in q for q in data.queries)
    columns = ["recall@1", "recall@5", "MRR", "nDCG@10", *(["turn recall@5"] if turns else []), "abstention"]
    keys = ["r1", "r5", "mrr", "ndcg", *(["turn_r5"] if turns else []), "abstained"]
    lines = [
        "| kind | queries | " + " | ".join(columns) + " | entities/query | bytes/query |",
        "|---|---|" + "---|" * (len(columns) + 2),
    ]
    for kind in [*KINDS, "all"]:
        ids = [q["id"] for q in data.queries if kind in ("all", q["kind"])]
        rows = {s: [scores[s][i] for i in ids] for s in scores}
        cells = [cell(mean(rows["ours"], k), mean(rows["official"], k)) for k in keys]
        cells += [cell(mean(rows["ours"], "entities"), mean(rows["official"], "entities"), "{:.1f}")]
        cells += [cell(mean(rows["ours"], "bytes"), mean(rows["official"], "bytes"), "{:,.0f}")]
        lines.append(f"| {'**all**' if kind == 'all' else kind} | {len(ids)} | " + " | ".join(cells) + " |")
    lines += ["", "| | ours | official |", "|---|---|---|"]
    for label, key in (("cross-project leaks", "cross"), ("deleted-item leaks", "deleted"), ("tool errors", "error")):
        totals = [sum(m[key] for m in scores[s].values()) for s in ("ours", "official")]
        lines.append(f"| {label} | {totals[0]} | {totals[1]} |")
    medians = [statistics.median(m["ms"] for m in scores[s].values()) for s in ("ours", "official")]
    lines.append(f"| search call, median ms (MCP over stdio, client side) | {medians[0]:.1f} | {medians[1]:.1f} |")
    return "\n".join(lines)


def show_misses(data: Data, answers: dict, scores: dict):
    "One line per query our server got wrong: no relevant entity (or answering turn) in the top 5, or no abstention."
    for q in data.queries:
        m, a = scores[q["id"]], answers[q["id"]]
        if m.get("r5", 1) < 1 or m.get("turn_r5", 1) < 1 or m.get("abstained", 1) < 1 or m["cross"] or m["deleted"] or a["error"]:
            print(f"{q['id']} {q['kind']:<10} {q['project']:<13} {q['query']!r} -> {a['names'][:5]} {a['error'] or ''}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="services", choices=list(CORPORA), help="services (this folder) or conversations (conversations/)")
    parser.add_argument("--tool", default="search_nodes", choices=["search_nodes", "search_memory"], help="our search tool")
    parser.add_argument("--limit", type=int, help="limit argument for search_memory")
    parser.add_argument("--extra-args", default="", help='flags for our mcp command, one string: --extra-args="--flag value"')
    parser.add_argument("--queries", default="queries.jsonl", help="the query file, in the corpus's folder: queries.jsonl (tuned on) or heldout.jsonl")
    parser.add_argument("--verbose", action="store_true", help="list the queries our server got wrong")
    args = parser.parse_args()
    if not OFFICIAL.exists():
        sys.exit(f"The official memory server is not installed: run npm ci --prefix {ROOT / 'tests' / 'official'}")
    data = Data(args.queries, args.corpus)
    runs = asyncio.run(run_both(data, args.tool, shlex.split(args.extra_args), args.limit))
    scores = {s: {q["id"]: score(data, q, runs[s][1][q["id"]]) for q in data.queries} for s in runs}
    if args.verbose:
        show_misses(data, runs["ours"][1], scores["ours"])
    print(f"\n{data.describe()}")
    print(f"Cells are ours ({runs['ours'][0]}) / official ({runs['official'][0]}).\n")
    print(table(data, scores))


if __name__ == "__main__":
    main()
