"""Calibrating abstention: how recall, abstention and answer size move with search's coverage threshold.

Runs in process, without MCP: each corpus (see corpora.py) is loaded, corpus then updates,
into a fresh temporary memory file through the core API (``Memory``), and every query of
the chosen query sets goes through ``search_memory`` (default limit and budget) once per
``min_coverage`` threshold; and through the floor (floor.py: plain FTS5 ``bm25()`` over
the same passages, porter tokenizer, stop words dropped, top 5), in the same run.

    python bench/retrieval/calibrate.py [--corpus services|conversations|dialogues|all]
                                        [--set tuning|heldout|both]
                                        [--thresholds 0.25,0.3,...] [--semantic]
                                        [--misses THRESHOLD]

--semantic uses the semantic arm (the ``vectors`` extra), after the index has caught up
with the load; without it the search is lexical only. --misses lists, on stderr, each
query missed at one threshold with what came back instead, for checking labels.

One markdown table per query set and corpus, and one over every corpus's queries pooled,
a row per threshold (the search's default in bold) and a last row for the floor; then,
per corpus and set, the default threshold beside the floor, with the floor's recall@5
that matches must reach: entity recall@5 on services, turn recall@5 on the corpora
whose answers sit in single turns. Metrics are run.py's (scoring.py):
  recall@1, recall@5, MRR   over the queries that have relevant entities
  turn recall@5             (one of) the query's answer_text is in the top 5 results' text (the
                            conversations corpus): the answering turn itself was returned
  unanswered                share of the queries with relevant entities that returned no result
  abstention                share of queries with relevant == [] that returned no result (no match)
  recall@5 or related       a relevant entity is in the top 5 matches or among the related entities
                            (similar in meaning only; the semantic arm's leads, kept apart from matches)
  no related either         share of queries with relevant == [] that returned no match and no related entity
  results/query             results returned, on average over every query
  bytes/query               search_memory's answer as compact JSON, the bytes MCP sends
  leaks                     cross-project plus deleted-item leaks, summed
"""

import argparse
import json
import pathlib
import sys
import tempfile
import time

from corpora import CORPORA, QUERY_FILES, TURNS, Data
from floor import Floor
from scoring import mean, returned, score

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.search.memory_search import search_memory
from datasette_memory.search.ranking import DEFAULT_MIN_COVERAGE

THRESHOLDS = [0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
COLUMNS = [
    ("recall@1", "r1"), ("recall@5", "r5"), ("MRR", "mrr"), ("turn recall@5", "turn_r5"), ("unanswered", "unanswered"),
    ("abstention", "abstained"), ("recall@5 or related", "r5_or_related"), ("no related either", "silent"),
]


def load(data: Data, path: pathlib.Path, settings: SearchSettings) -> dict[str, Memory]:
    "A memory file at ``path`` holding ``data``'s corpus with its updates applied: ``{project: memory}``."
    config = Config(search=settings)
    memories = {p: Memory.open(path, project=p, actor="bench", config=config) for p in data.projects}
    for project, memory in memories.items():
        for tool, args in data.setup_calls(project):
            (value,) = args.values()  # each call has one argument, named as the MCP tool names it
            getattr(memory, tool)(value)
    for memory in memories.values():
        memory.wait_for_semantic_index()
    return memories


def ask(memory: Memory, query: str, threshold: float, settings: SearchSettings) -> dict:
    "One search at one threshold, as :func:`scoring.returned` describes it."
    started = time.perf_counter()
    result = search_memory(memory.conn, memory.project, query, settings=settings, min_coverage=threshold)
    ms = (time.perf_counter() - started) * 1000
    size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
    return returned(result, [], size, None, ms)


def sweep(data: Data, memories: dict[str, Memory], thresholds: list[float], settings: SearchSettings) -> dict:
    "Every query's metrics at every threshold, and the floor's: ``{threshold or FLOOR: {query id: metrics}}``."
    floor = Floor(data)
    return {
        **{t: {q["id"]: score(data, q, ask(memories[q["project"]], q["query"], t, settings)) for q in data.queries} for t in thresholds},
        FLOOR: {q["id"]: score(data, q, floor.ask(q["project"], q["query"])) for q in data.queries},
    }


FLOOR = "floor"  # the floor's row among the thresholds


def row(threshold: float | str, metrics: list[dict]) -> str:
    "One threshold's line of a table, or the floor's."
    if threshold == FLOOR:
        label = "FTS5 floor: bm25, top 5"
    else:
        label = f"**{threshold:.2f}** (default)" if threshold == DEFAULT_MIN_COVERAGE else f"{threshold:.2f}"
    show = lambda v: "–" if v is None else f"{v:.2f}"
    cells = [show(mean(metrics, key)) for _, key in COLUMNS]
    cells += [f"{mean(metrics, 'entities'):.1f}", f"{mean(metrics, 'bytes'):,.0f}", str(sum(m["cross"] + m["deleted"] for m in metrics))]
    return f"| {label} | " + " | ".join(cells) + " |"


def table(title: str, queries: list[dict], scores: dict) -> str:
    "A markdown table of ``queries`` (pooled from any corpora), one row per threshold."
    answerable = sum(1 for q in queries if q["relevant"])
    lines = [
        f"### {title}: {len(queries)} queries, {answerable} answerable, {len(queries) - answerable} to abstain on",
        "",
        "| min_coverage | " + " | ".join(c for c, _ in COLUMNS) + " | results/query | bytes/query | leaks |",
        "|---|" + "---|" * (len(COLUMNS) + 3),
    ]
    for t, by_id in scores.items():
        lines.append(row(t, [by_id[(q["corpus"], q["id"])] for q in queries]))
    return "\n".join(lines)


def show_misses(data: Data, memories: dict[str, Memory], threshold: float, settings: SearchSettings) -> None:
    "One line per query missed at ``threshold``, with what came back: on stderr, for checking labels."
    for q in data.queries:
        a = ask(memories[q["project"]], q["query"], threshold, settings)
        m = score(data, q, a)
        wrong = [
            *(["no abstention"] if m.get("abstained", 1) < 1 else []),
            *(["no relevant entity"] if m.get("r5", 1) < 1 else ["turn not shown"] if m.get("turn_r5", 1) < 1 else []),
            *(["leak"] if m["cross"] or m["deleted"] else []),
        ]
        if wrong:
            print(f"{q['id']} {q['kind']:<10} {q['project']:<15} {', '.join(wrong)}: {q['query']!r} -> {a['names'][:3]}", file=sys.stderr)


def parse_thresholds(value: str) -> list[float]:
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"thresholds must be numbers separated by commas, got {value!r}")


def measure(corpus: str, sets: list[str], thresholds: list[float], settings: SearchSettings, misses: float | None) -> dict:
    """
    One corpus loaded once, each query set swept: ``{set: (queries, {threshold: {(corpus, id): metrics}})}``.

    :param misses: also list the queries missed at this threshold, or None
    """
    measured = {}
    datas = {s: Data(QUERY_FILES[s], corpus) for s in sets}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        memories = load(datas[sets[0]], pathlib.Path(tmp) / "memory.db", settings)
        print(f"{corpus}: loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        for s, data in datas.items():
            scores = sweep(data, memories, thresholds, settings)
            if misses is not None:
                print(f"--- {corpus}, {s}: missed at {misses}", file=sys.stderr)
                show_misses(data, memories, misses, settings)
            queries = [{**q, "corpus": corpus} for q in data.queries]
            measured[s] = (queries, {t: {(corpus, i): m for i, m in by_id.items()} for t, by_id in scores.items()})
        for memory in memories.values():
            memory.close()
    return measured


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="all", choices=[*CORPORA, "all"])
    parser.add_argument("--set", default="both", choices=[*QUERY_FILES, "both"], help="tuning (queries.jsonl), heldout (heldout.jsonl) or both")
    parser.add_argument("--thresholds", type=parse_thresholds, default=THRESHOLDS, help="min_coverage values, comma-separated")
    parser.add_argument("--semantic", action="store_true", help="use the semantic arm (the vectors extra)")
    parser.add_argument("--misses", type=float, metavar="THRESHOLD", help="list the queries missed at this threshold (on stderr)")
    args = parser.parse_args()
    settings = SearchSettings(semantic=args.semantic)
    if args.semantic and not settings.semantic_on():
        sys.exit("--semantic needs the vectors extra: pip install -e '.[vectors]'")
    corpora = list(CORPORA) if args.corpus == "all" else [args.corpus]
    sets = list(QUERY_FILES) if args.set == "both" else [args.set]
    thresholds = sorted({*args.thresholds, DEFAULT_MIN_COVERAGE, *([args.misses] if args.misses is not None else [])})
    measured = {c: measure(c, sets, thresholds, settings, args.misses) for c in corpora}
    print(f"# search_memory ({'lexical and semantic' if args.semantic else 'lexical'}) by min_coverage\n")
    for s in sets:
        for corpus in corpora:
            print(table(f"{corpus}, {s}", *measured[corpus][s]) + "\n")
        if len(corpora) > 1:
            queries = [q for c in corpora for q in measured[c][s][0]]
            scores = {t: {k: m for c in corpora for k, m in measured[c][s][1][t].items()} for t in [*thresholds, FLOOR]}
            print(table(f"{len(corpora)} corpora pooled, {s}", queries, scores) + "\n")
    print(against_the_floor(measured, corpora, sets))


SIDE_BY_SIDE = [("recall@1", "r1"), ("recall@5", "r5"), ("MRR", "mrr"), ("turn recall@5", "turn_r5"), ("abstention", "abstained")]


def against_the_floor(measured: dict, corpora: list[str], sets: list[str]) -> str:
    """
    Per corpus and query set, search_memory at the default threshold beside the
    floor (cells are search / floor), and whether its recall@5 reaches the floor's:
    entity recall@5, or turn recall@5 where answers sit in single turns.
    """
    lines = [
        "### search_memory's matches (default threshold) / the FTS5 floor",
        "",
        "| corpus | set | " + " | ".join(c for c, _ in SIDE_BY_SIDE) + " | bytes/query | recall@5 against the floor |",
        "|---|---|" + "---|" * (len(SIDE_BY_SIDE) + 2),
    ]
    show = lambda v: "–" if v is None else f"{v:.2f}"
    for corpus in corpora:
        for s in sets:
            queries, scores = measured[corpus][s]
            ours, floor = ([scores[t][(corpus, q["id"])] for q in queries] for t in (DEFAULT_MIN_COVERAGE, FLOOR))
            cells = [f"{show(mean(ours, k))} / {show(mean(floor, k))}" for _, k in SIDE_BY_SIDE]
            cells.append(f"{mean(ours, 'bytes'):,.0f} / {mean(floor, 'bytes'):,.0f}")
            key = "turn_r5" if corpus in TURNS else "r5"
            reached = mean(ours, key) >= mean(floor, key) - 1e-9
            cells.append(f"{'reached' if reached else 'short'} ({'turn ' if corpus in TURNS else ''}{show(mean(ours, key))} vs {show(mean(floor, key))})")
            lines.append(f"| {corpus} | {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
