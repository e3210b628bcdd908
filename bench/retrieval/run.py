"""Retrieval benchmark: datasette-memory against the official MCP memory server, side by side.

Loads corpus.jsonl into both servers over MCP stdio, applies updates.jsonl to both, runs
every query of a query file through a search tool and prints one markdown table.

Query files: queries.jsonl (368 queries; the search's thresholds were tuned on them) and
heldout.jsonl (100 queries written apart from the search code and never tuned on).

    python bench/retrieval/run.py [--tool search_nodes|search_memory] [--limit N]
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
  (these four over queries that have relevant entities)
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
import math
import os
import pathlib
import shlex
import statistics
import sys
import tempfile
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OFFICIAL = ROOT / "tests" / "official" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
KINDS = ["keyword", "question", "paraphrase", "abstention", "update"]


def read_jsonl(name: str) -> list[dict]:
    "The rows of a JSON-lines file in this folder (or at a path)."
    return [json.loads(line) for line in (HERE / name).read_text().splitlines() if line.strip()]


# ---- the data: what each project holds before and after the updates


class Data:
    "The corpus, updates and queries, with the facts scoring needs."

    def __init__(self, queries: str = "queries.jsonl"):
        self.corpus, self.updates, self.queries = map(read_jsonl, ("corpus.jsonl", "updates.jsonl", queries))
        self.projects = sorted({row["project"] for row in self.corpus})
        self.names = {p: {r["name"] for r in self.corpus if r["type"] == "entity" and r["project"] == p} for p in self.projects}
        self.original = {p: self.final_state(p, []) for p in self.projects}
        self.final = {p: self.final_state(p, self.updates) for p in self.projects}
        self.deleted_entities = {p: self.names[p] - set(self.final[p]) for p in self.projects}
        self.deleted_texts = {p: self.removed_texts(p) for p in self.projects}
        self.check()

    def final_state(self, project: str, updates: list[dict]) -> dict[str, list[str]]:
        "Entity name -> observations in ``project`` after applying ``updates``."
        state = {r["name"]: list(r["observations"]) for r in self.corpus if r["type"] == "entity" and r["project"] == project}
        for u in (u for u in updates if u["project"] == project):
            if u["op"] == "delete_entities":
                for name in u["entityNames"]:
                    state.pop(name, None)
            elif u["op"] == "delete_observations":
                state[u["entityName"]] = [o for o in state[u["entityName"]] if o not in u["observations"]]
            elif u["op"] == "add_observations":
                state[u["entityName"]] += u["contents"]
        return state

    def removed_texts(self, project: str) -> set[str]:
        "Observations the updates removed from ``project`` that no remaining observation contains."
        before = {o for obs in self.original[project].values() for o in obs}
        after = [o for obs in self.final[project].values() for o in obs]
        return {o for o in before - set(after) if not any(o in a for a in after)}

    def check(self):
        "Refuse labels that contradict the data: unknown relevant entities, forbidden text still stored."
        for q in self.queries:
            final = self.final[q["project"]]
            text = "\n".join(o for obs in final.values() for o in obs)
            missing = [n for n in q["relevant"] if n not in final]
            stored = [f for f in q["forbidden_text"] if f in text]
            if missing or stored or q["kind"] not in KINDS:
                sys.exit(f"{q['id']}: bad label (relevant not in project: {missing}, forbidden text still stored: {stored})")

    def setup_calls(self, project: str) -> list[tuple[str, dict]]:
        "The MCP calls that load ``project`` and then apply its updates."
        rows = [r for r in self.corpus if r["project"] == project]
        entities = [{k: r[k] for k in ("name", "entityType", "observations")} for r in rows if r["type"] == "entity"]
        relations = [{k: r[k] for k in ("from", "to", "relationType")} for r in rows if r["type"] == "relation"]
        calls = [("create_entities", {"entities": entities}), ("create_relations", {"relations": relations})]
        return calls + [update_call(u) for u in self.updates if u["project"] == project]


def update_call(u: dict) -> tuple[str, dict]:
    "One updates.jsonl line as an official-server tool call."
    if u["op"] == "delete_observations":
        return u["op"], {"deletions": [{"entityName": u["entityName"], "observations": u["observations"]}]}
    if u["op"] == "add_observations":
        return u["op"], {"observations": [{"entityName": u["entityName"], "contents": u["contents"]}]}
    if u["op"] == "delete_entities":
        return u["op"], {"entityNames": u["entityNames"]}
    raise ValueError(f"unknown op {u['op']!r}")


# ---- talking to the servers


def strings(value):
    "Every string inside a JSON value."
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def entity_names(data) -> list[str]:
    """
    Entity names in rank order from a search result: {"entities": [...]} (search_nodes) or
    {"results": [{"entity": {...} or "name"} or {"name": ...}]} (search_memory), also when
    wrapped as {"result": ...}.
    """
    if isinstance(data, dict) and set(data) == {"result"}:
        data = data["result"]
    items = data if isinstance(data, list) else (data or {}).get("results") or (data or {}).get("entities") or []
    names = []
    for item in items:
        entity = item.get("entity", item) if isinstance(item, dict) else item
        name = entity.get("name") if isinstance(entity, dict) else entity
        if isinstance(name, str) and name not in names:
            names.append(name)
    return names


def answer(result) -> dict:
    "What a search returned: entity names in order, all its text, its size in bytes."
    texts = [c.text for c in result.content if getattr(c, "text", None) is not None]
    data = result.structured_content
    if data is None and texts:
        try:
            data = json.loads(texts[0])
        except ValueError:
            data = None
    size = sum(len(t.encode()) for t in texts) or len(json.dumps(data or {}).encode())
    error = texts[0] if result.is_error and texts else None
    names = [] if result.is_error else entity_names(data)
    return {"names": names, "text": "\n".join([*texts, *strings(data)]), "bytes": size, "error": error}


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
                answers[q["id"]] = {**answer(result), "ms": (time.perf_counter() - started) * 1000}
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


# ---- scoring


def recall(names, relevant, k):
    return float(bool(set(names[:k]) & set(relevant)))


def reciprocal_rank(names, relevant):
    return next((1 / (i + 1) for i, n in enumerate(names) if n in relevant), 0.0)


def ndcg(names, relevant, k=10):
    gain = {n: (2 if i == 0 else 1) for i, n in enumerate(relevant)}
    dcg = sum(gain.get(n, 0) / math.log2(i + 2) for i, n in enumerate(names[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gain.values(), reverse=True)[:k]))
    return dcg / ideal


def leaks(data: Data, q: dict, a: dict) -> tuple[int, int]:
    "(cross-project, deleted-item) leaks in one answer."
    project = q["project"]
    foreign = [n for n in a["names"] if n not in data.names[project]]
    own_text = "\n".join(o for obs in data.original[project].values() for o in obs)
    forbidden_foreign = [f for f in q["forbidden_text"] if f not in own_text and f in a["text"]]
    deleted = {*data.deleted_texts[project], *(f for f in q["forbidden_text"] if f in own_text)}
    deleted_hits = [t for t in deleted if t in a["text"]] + [n for n in a["names"] if n in data.deleted_entities[project]]
    return len(foreign) + len(forbidden_foreign), len(deleted_hits)


def score(data: Data, q: dict, a: dict) -> dict:
    "All metrics for one query's answer."
    cross, deleted = leaks(data, q, a)
    m = {"entities": len(a["names"]), "bytes": a["bytes"], "cross": cross, "deleted": deleted, "error": bool(a["error"]), "ms": a["ms"]}
    rel = q["relevant"]
    if rel:
        names = a["names"]
        m.update(r1=recall(names, rel, 1), r5=recall(names, rel, 5), mrr=reciprocal_rank(names, rel), ndcg=ndcg(names, rel))
    else:
        m["abstained"] = float(not a["names"])
    return m


def mean(rows, key):
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else None


# ---- the report


def cell(ours, official, fmt="{:.2f}"):
    if ours is None and official is None:
        return "–"
    show = lambda v: "–" if v is None else fmt.format(v)
    return f"{show(ours)} / {show(official)}"


def table(data: Data, scores: dict) -> str:
    "The markdown report: per-kind metrics, then leaks and errors, ours / official in each cell."
    lines = [
        "| kind | queries | recall@1 | recall@5 | MRR | nDCG@10 | abstention | entities/query | bytes/query |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in [*KINDS, "all"]:
        ids = [q["id"] for q in data.queries if kind in ("all", q["kind"])]
        rows = {s: [scores[s][i] for i in ids] for s in scores}
        cells = [cell(mean(rows["ours"], k), mean(rows["official"], k)) for k in ("r1", "r5", "mrr", "ndcg", "abstained")]
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
    "One line per query our server got wrong: no relevant entity in the top 5, or no abstention."
    for q in data.queries:
        m, a = scores[q["id"]], answers[q["id"]]
        if m.get("r5", 1) < 1 or m.get("abstained", 1) < 1 or m["cross"] or m["deleted"] or a["error"]:
            print(f"{q['id']} {q['kind']:<10} {q['project']:<13} {q['query']!r} -> {a['names'][:5]} {a['error'] or ''}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", default="search_nodes", choices=["search_nodes", "search_memory"], help="our search tool")
    parser.add_argument("--limit", type=int, help="limit argument for search_memory")
    parser.add_argument("--extra-args", default="", help='flags for our mcp command, one string: --extra-args="--flag value"')
    parser.add_argument("--queries", default="queries.jsonl", help="the query file, in this folder: queries.jsonl (tuned on) or heldout.jsonl")
    parser.add_argument("--verbose", action="store_true", help="list the queries our server got wrong")
    args = parser.parse_args()
    if not OFFICIAL.exists():
        sys.exit(f"The official memory server is not installed: run npm ci --prefix {ROOT / 'tests' / 'official'}")
    data = Data(args.queries)
    runs = asyncio.run(run_both(data, args.tool, shlex.split(args.extra_args), args.limit))
    scores = {s: {q["id"]: score(data, q, runs[s][1][q["id"]]) for q in data.queries} for s in runs}
    if args.verbose:
        show_misses(data, runs["ours"][1], scores["ours"])
    entities = sum(len(v) for v in data.original.values())
    observations = sum(len(o) for v in data.original.values() for o in v.values())
    print(f"\n{entities} entities, {observations} observations in {len(data.projects)} projects; "
          f"{len(data.updates)} update steps; {len(data.queries)} queries.")
    print(f"Cells are ours ({runs['ours'][0]}) / official ({runs['official'][0]}).\n")
    print(table(data, scores))


if __name__ == "__main__":
    main()
