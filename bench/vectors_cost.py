"""The vectors extra's cost: bulk loads with and without it, the model's own rate, and the vector arm's share of a search.

Needs the extra (``pip install 'datasette-memory[vectors]'``). One run prints:

1. The model: seconds to load it, and entities per second of pure
   ``model.encode`` at several batch sizes on this file's entity texts, in
   float32 and, where the CPU multiplies it natively, bfloat16 (the best of them
   is the floor under any bulk load's time to fully indexed), beside
   ``embedding.embed``, which the index calls.
2. Bulk loads of N entities with 3 to 5 observations each (a service graph in
   words, with a relation per entity), each in a fresh process on a fresh file,
   with the model already loaded in that process:

   - ``import``: the official server's JSONL file, 500 lines per transaction, as
     ``datasette-memory import`` does;
   - ``create``: ``Memory.create_entities``, 500 entities per call;

   each without the extra (the search setting ``semantic`` off) and with it,
   timed until the last write returns and until ``wait_for_semantic_index``
   returns (with the extra: every entity embedded; without, the same moment).
   With the extra, the calls into the model and the entities embedded are counted.
3. ``datasette-memory import`` of the same file as a command, end to end: the
   interpreter starting, the model loading and, with the extra, the command
   waiting for the index before it exits.
4. The vector arm's cost per search: ``search_memory`` over a few hundred
   natural questions on each size's imported file, fully indexed, with
   ``semantic`` on and off on the same connection, taking turns query by query;
   p50, p95 and the difference, beside the query's embedding alone.

With ``--before DIR`` (a source tree of an earlier version, say from ``git
archive``), the loads with the extra and the command run on it too, in the same
rounds. Each figure is the median of ``--runs`` rounds; the machine's load
average is printed as it goes, since the cores may be shared.

    python bench/vectors_cost.py [--entities 2000 10000] [--queries 300] [--runs 1] [--before DIR]
"""

import argparse
import json
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

from datasette_memory import Config, Memory, SearchSettings

LEXICAL = Config(search=SearchSettings(semantic=False))
SEMANTIC = Config(search=SearchSettings(semantic=True))
BATCH = 500
BATCH_SIZES = (8, 16, 32, 64, 128)
KINDS = ("service", "database", "queue", "job", "library")
CAPABILITIES = [
    "card payments", "password resets", "invoice generation", "push notifications", "search indexing",
    "image resizing", "fraud scoring", "email delivery", "session tokens", "feature flags", "audit logging",
    "currency conversion", "tax calculation", "refunds", "merchant payouts", "rate limiting", "report exports",
    "shipping labels", "inventory counts", "price quotes", "customer support tickets", "single sign-on",
    "data retention", "backups", "usage metering", "webhook delivery", "pdf rendering", "address lookup",
    "video transcoding", "chat messages",
]
PARAPHRASES = {
    "card payments": "taking money from credit cards", "password resets": "people who forgot their login",
    "push notifications": "alerting users on their phones", "fraud scoring": "spotting stolen cards",
    "merchant payouts": "paying shops their money", "rate limiting": "throttling noisy clients",
    "email delivery": "sending mail to customers", "image resizing": "making thumbnails of photos",
    "currency conversion": "exchange rates between euros and dollars", "backups": "copies of the data kept overnight",
    "single sign-on": "logging in once for every app", "video transcoding": "converting uploaded movies",
}
TEAMS = ["payments", "identity", "growth", "platform", "data", "mobile", "risk", "billing", "search", "support"]
PEOPLE = ["Dana", "Priya", "Tomás", "Wei", "Amara", "Jonas", "Leila", "Kenji", "Sofia", "Omar", "Ines", "Ravi"]
REGIONS = ["eu-west-1", "us-east-1", "ap-south-1", "eu-central-1", "us-west-2"]
STORES = ["postgres", "redis", "s3", "kafka", "elasticsearch", "sqlite", "dynamodb"]


def load() -> str:
    return "load " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def log(message: str) -> None:
    print(f"  {message} ({load()})", file=sys.stderr, flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


def p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


# The data


def name(i: int) -> str:
    return f"{CAPABILITIES[i % len(CAPABILITIES)].split()[0]}-{KINDS[i % len(KINDS)]}-{i:05d}"


def entity(i: int) -> dict:
    "Entity ``i``: 3 to 5 observations about what it does, who owns it, where it runs and what it uses."
    rng = random.Random(i)
    capability = CAPABILITIES[i % len(CAPABILITIES)]
    observations = [
        f"{name(i)} handles {capability} for the {rng.choice(TEAMS)} team",
        f"deployed in {rng.choice(REGIONS)}, stores its data in {rng.choice(STORES)}",
        f"{rng.choice(PEOPLE)} is on call for it this week",
        f"calls {name(rng.randrange(i + 1))} over gRPC with a {rng.choice([50, 100, 250, 500])} ms timeout",
        f"runbook: restart the {KINDS[i % len(KINDS)]} if the {rng.choice(STORES)} queue backs up past {rng.randint(2, 90)} minutes",
    ]
    return {"name": name(i), "entityType": KINDS[i % len(KINDS)], "observations": observations[: rng.randint(3, 5)]}


def relation(i: int) -> dict:
    return {"from": name(i), "to": name(random.Random(-i).randrange(i)), "relationType": "calls"}


def jsonl_lines(entities: int) -> list[str]:
    "The official server's JSONL export of ``entities`` entities and a relation from each (but the first) to an earlier one."
    lines = [json.dumps({"type": "entity", **entity(i)}) for i in range(entities)]
    return lines + [json.dumps({"type": "relation", **relation(i)}) for i in range(1, entities)]


def questions(entities: int, count: int) -> list[str]:
    "Natural questions about the file: by capability, team, person and place, some in other words than memory's."
    rng = random.Random(count)
    asks = [
        lambda: f"which service handles {rng.choice(CAPABILITIES)}?",
        lambda: f"who is on call for {rng.choice(CAPABILITIES)}",
        lambda: f"what does the {rng.choice(TEAMS)} team own",
        lambda: f"where is {name(rng.randrange(entities))} deployed",
        lambda: f"what database does {name(rng.randrange(entities))} use",
        lambda: f"what is {rng.choice(PEOPLE)} on call for",
        lambda: f"how do we handle {rng.choice(list(PARAPHRASES.values()))}",
        lambda: f"runbook for a {rng.choice(STORES)} backlog",
    ]
    return [rng.choice(asks)() for _ in range(count)]


# 1. The model


def model_rates(texts: list[str]) -> dict:
    """
    Seconds to load the model, then entities per second of ``model.encode`` at
    each batch size, in float32 and (where the CPU has it natively) bfloat16,
    and of ``embedding.embed``, which the index calls.
    """
    import torch

    from datasette_memory.vectors import embedding

    start = time.perf_counter()
    model = embedding.model()
    loaded = time.perf_counter() - start
    precisions = ["float32"] + (["bfloat16"] if embedding.native_bfloat16() else [])
    rates: dict[str, dict[int, float]] = {precision: {} for precision in precisions}
    for precision in precisions:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            model.encode(texts[:256], batch_size=32)  # warm
            for size in BATCH_SIZES:
                start = time.perf_counter()
                model.encode(texts, batch_size=size, normalize_embeddings=True, show_progress_bar=False)
                rates[precision][size] = len(texts) / (time.perf_counter() - start)
                log(f"model.encode in {precision}, batches of {size}: {rates[precision][size]:.0f} entities/s")
    start = time.perf_counter()
    embedding.embed(texts)
    through_embed = len(texts) / (time.perf_counter() - start)
    log(f"embedding.embed: {through_embed:.0f} entities/s")
    return {"load_s": loaded, "encode": rates, "embed": through_embed}


# 2. Bulk loads, each in a child process


def child_load(kind: str, semantic: bool, path: pathlib.Path, jsonl: pathlib.Path) -> dict:
    "One bulk load on a fresh file, the model loaded first: seconds until the writes return and until the index is current."
    from datasette_memory.graph.jsonl import import_lines
    from datasette_memory.vectors import embedding, index

    calls = []
    if semantic:
        embedding.model()
        embed = index.embed
        index.embed = lambda texts: calls.append(len(texts)) or embed(texts)
    lines = jsonl.read_text().splitlines()
    memory = Memory.open(path, actor="bench", config=SEMANTIC if semantic else LEXICAL)
    start = time.perf_counter()
    if kind == "import":
        import_lines(memory, lines)
    else:
        items = [json.loads(line) for line in lines]
        entities = [{key: value for key, value in item.items() if key != "type"} for item in items if item["type"] == "entity"]
        for first in range(0, len(entities), BATCH):
            memory.create_entities(entities[first : first + BATCH])
    writes = time.perf_counter() - start
    assert memory.wait_for_semantic_index()
    indexed = time.perf_counter() - start
    memory.close()
    return {"writes_s": writes, "indexed_s": indexed, "model_calls": len(calls), "embedded": sum(calls)}


def run_child(tree: str | None, kind: str, semantic: bool, path: pathlib.Path, jsonl: pathlib.Path) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--file", str(path), "--jsonl", str(jsonl)]
    command += ["--semantic"] if semantic else []
    result = subprocess.run(command, capture_output=True, text=True, env=environment(tree), cwd=path.parent)
    if result.returncode != 0:
        raise SystemExit(f"the {kind} load failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def environment(tree: str | None, semantic: bool = True) -> dict[str, str]:
    "The environment of a child: the code of ``tree`` (or this one's), the arm switched off unless ``semantic``."
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "DATASETTE_MEMORY_NO_VECTORS")}
    if tree:
        env["PYTHONPATH"] = str(pathlib.Path(tree).resolve())
    if not semantic:
        env["DATASETTE_MEMORY_NO_VECTORS"] = "1"
    return env


def import_command(tree: str | None, semantic: bool, path: pathlib.Path, jsonl: pathlib.Path) -> float:
    "Seconds for ``datasette-memory import`` of ``jsonl`` into a fresh file, process start to exit."
    command = [sys.executable, "-m", "datasette_memory", "import", str(jsonl), "--db", str(path)]
    start = time.perf_counter()
    # run from the file's folder: with -m, the working directory would come first on sys.path
    result = subprocess.run(command, capture_output=True, text=True, env=environment(tree, semantic), cwd=path.parent)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"import failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return elapsed


def versions(before: str | None) -> list[tuple[str, str | None, bool]]:
    "``(label, source tree, semantic)`` for each way a load runs."
    ways = [("without the extra", None, False), ("with the extra", None, True)]
    return ways + ([("with the extra, before", before, True)] if before else [])


def measure_loads(folder: pathlib.Path, entities: int, runs: int, before: str | None, queries: int) -> tuple[dict, dict]:
    "Median figures of each load of ``entities`` entities, then the searches of ``queries`` questions on a file it left."
    jsonl = folder / f"graph-{entities}.jsonl"
    jsonl.write_text("\n".join(jsonl_lines(entities)), encoding="utf-8")
    found: dict = {}
    for round in range(runs):
        for kind in ("import", "create"):
            for label, tree, semantic in versions(before):
                path = folder / f"{kind}-{entities}-{label.replace(' ', '-').replace(',', '')}-{round}.db"
                figures = run_child(tree, kind, semantic, path, jsonl)
                found.setdefault((kind, label), []).append(figures)
                log(f"{kind} {entities:,}, {label}: writes {figures['writes_s']:.2f} s, indexed {figures['indexed_s']:.2f} s, "
                    f"{figures['embedded']} embedded in {figures['model_calls']} model calls")
        for label, tree, semantic in versions(before):
            elapsed = import_command(tree, semantic, folder / f"command-{entities}-{round}-{semantic}-{bool(tree)}.db", jsonl)
            found.setdefault(("command", label), []).append({"command_s": elapsed})
            log(f"datasette-memory import {entities:,}, {label}: {elapsed:.2f} s")
    medians = {key: {field: median([r[field] for r in rounds]) for field in rounds[0]} for key, rounds in found.items()}
    searched = folder / f"import-{entities}-with-the-extra-0.db"
    log(f"searching {searched.name}")
    return medians, measure_searches(searched, entities, queries)


# 4. The vector arm's share of a search


def measure_searches(path: pathlib.Path, entities: int, count: int) -> dict[str, list[float]]:
    "Milliseconds per ``search_memory`` with the arm on and off (taking turns), and per query embedding."
    from datasette_memory.vectors import embedding

    on = Memory.open(path, config=SEMANTIC)
    off = Memory(on.conn, config=LEXICAL)
    assert on.wait_for_semantic_index() and on.search_memory("warm up").get("semantic") is None, "the index is not current"
    times: dict[str, list[float]] = {"on": [], "off": [], "embed": []}
    for query in questions(entities, count):
        for arm, memory in (("on", on), ("off", off)):
            start = time.perf_counter()
            memory.search_memory(query)
            times[arm].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        embedding.embed([query])
        times["embed"].append((time.perf_counter() - start) * 1000)
    on.close()
    return times


# The report


def print_report(model: dict, loads: dict[int, tuple[dict, dict]], before: str | None) -> None:
    print(f"\nThe model: loads in {model['load_s']:.1f} s; embedding.embed (what the index calls): {model['embed']:.0f} entities/s")
    for precision, rates in model["encode"].items():
        print(f"  model.encode in {precision}, entities/s by batch size: " + ", ".join(f"{size}: {r:.0f}" for size, r in rates.items()))
    best, rate = max(((f"{size} in {precision}", r) for precision, rates in model["encode"].items() for size, r in rates.items()),
                     key=lambda pair: pair[1])
    for entities, (figures, searches) in loads.items():
        print(f"\nBulk load of {entities:,} entities (3 to 5 observations each, {entities - 1:,} relations), model loaded; "
              f"the model alone needs {entities / rate:.1f} s for them at its best rate ({rate:.0f}/s, batches of {best})")
        print(f"  {'':<34}{'writes return':>14}{'ratio':>7}{'fully indexed':>15}{'ratio':>7}{'model calls, embedded/s':>30}")
        for kind in ("import", "create"):
            plain = figures[(kind, "without the extra")]
            for label, _, _ in versions(before):
                row = figures[(kind, label)]
                calls = f"{row['model_calls']:.0f} for {row['embedded']:.0f}, {row['embedded'] / row['indexed_s']:.0f}/s" if row["embedded"] else ""
                print(f"  {kind + ', ' + label:<34}{row['writes_s']:>12.2f} s{row['writes_s'] / plain['writes_s']:>6.1f}x"
                      f"{row['indexed_s']:>13.2f} s{row['indexed_s'] / plain['indexed_s']:>6.1f}x{calls:>30}")
        floor = entities / rate / figures[("import", "without the extra")]["writes_s"]
        print(f"  (the model alone is {floor:.1f}x the import without the extra: no import with it is fully indexed sooner)")
        plain = figures[("command", "without the extra")]["command_s"]
        for label, _, _ in versions(before):
            elapsed = figures[("command", label)]["command_s"]
            print(f"  datasette-memory import, {label}: {elapsed:.2f} s ({elapsed / plain:.1f}x), start to exit, model load included")
        print_searches(entities, searches)


def print_searches(entities: int, searches: dict[str, list[float]]) -> None:
    print(f"  search_memory on these {entities:,} entities, {len(searches['on'])} questions, ms:")
    for arm, label in (("on", "semantic on"), ("off", "semantic off"), ("embed", "the query's embedding alone")):
        print(f"    {label:<28} p50 {median(searches[arm]):7.2f}   p95 {p(searches[arm], 95):7.2f}")
    differences = [a - b for a, b in zip(searches["on"], searches["off"])]
    print(f"    {'the vector arm (on - off)':<28} p50 {median(searches['on']) - median(searches['off']):7.2f}   "
          f"p95 {p(searches['on'], 95) - p(searches['off'], 95):7.2f}   (per query, median {median(differences):.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, nargs="+", default=[2000, 10_000], help="entities per bulk load")
    parser.add_argument("--queries", type=int, default=300, help="questions searched on each size's file")
    parser.add_argument("--runs", type=int, default=1, help="rounds of each load, for the median")
    parser.add_argument("--before", help="a source tree of an earlier datasette-memory: run the loads with the extra on it too")
    parser.add_argument("--child", choices=["import", "create"], help=argparse.SUPPRESS)
    parser.add_argument("--semantic", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--jsonl", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_load(args.child, args.semantic, pathlib.Path(args.file), pathlib.Path(args.jsonl))))
        return
    from datasette_memory import vectors

    if not vectors.extra_installed():
        raise SystemExit(f"the vectors extra is not installed: {vectors.INSTALL_HINT}")
    from datasette_memory.vectors.entity_texts import entity_text

    log("the model")
    sample = [entity(i) for i in range(1024)]
    model = model_rates([entity_text(e["name"], e["entityType"], e["observations"]) for e in sample])
    with tempfile.TemporaryDirectory(prefix="vectors-cost-") as folder:
        loads = {entities: measure_loads(pathlib.Path(folder), entities, args.runs, args.before, args.queries) for entities in args.entities}
    print_report(model, loads, args.before)


if __name__ == "__main__":
    main()
