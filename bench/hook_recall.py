"""The prompt hook's recall: the retrieval benchmark's queries used as prompts, what `hook prompt` would inject.

Loads every corpus (bench/retrieval: corpora.py, loaded as calibrate.py loads them,
lexical search) and, for every query of the tuning and held-out sets taken as a
user's prompt, computes the injection `datasette-memory hook prompt` would print
under each candidate confidence rule (datasette_memory/hooks/recall.py: a
``min_coverage`` for the search, the most matches injected, the least prompt terms a
match must hold), at the default budget of 1,500 bytes:

  silent        share of no-answer prompts (relevant == []) that inject nothing
  answered      share of answerable prompts whose injection holds the answer: its
                answer_text (one of them) where the query has one (conversations),
                else a relevant entity's name (services)
  wrong         share of answerable prompts injecting something without the answer
  bytes/inject  bytes printed, over the prompts that inject
  bytes/prompt  bytes printed, over every prompt (0 for one that injects nothing)

The rule is chosen on the tuning queries, every corpus pooled: the most answered
among the rules whose pooled silence is at least --silence (default 0.95); ties go
to the higher coverage, then fewer matches. The chosen rule is then reported on the
held-out queries, per corpus and pooled, beside the search's own threshold (0.45,
5 matches) for comparison.

    python bench/hook_recall.py [--silence 0.95] [--all-rules]
"""

import argparse
import itertools
import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "retrieval"))

from calibrate import load  # noqa: E402
from corpora import CORPORA, QUERY_FILES, Data, answer_texts  # noqa: E402

from datasette_memory import SearchSettings  # noqa: E402
from datasette_memory.hooks.recall import DEFAULT_BUDGET, RULE, RecallRule, confident_matches, injection  # noqa: E402
from datasette_memory.hooks.shape import printed_bytes  # noqa: E402

COVERAGES = [0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8]
MAX_RESULTS = [1, 2, 3]
MIN_TERMS = [1, 2]
SEARCH_DEFAULT = RecallRule(min_coverage=0.45, max_results=5, min_terms=1)


def rules() -> list[RecallRule]:
    return [RecallRule(c, k, t) for c, k, t in itertools.product(COVERAGES, MAX_RESULTS, MIN_TERMS)] + [SEARCH_DEFAULT]


def outcome(data: Data, query: dict, output: dict | None) -> dict:
    "What one prompt's injection did: silent or not, and for an answerable one whether it held the answer."
    text = output["hookSpecificOutput"]["additionalContext"] if output else ""
    found = {"bytes": printed_bytes(output) if output else 0, "injected": output is not None}
    if not query["relevant"]:
        return {**found, "silent": float(output is None)}
    answers = answer_texts(query) or [f"> {name} " for name in query["relevant"]]  # a result line starts with its entity's name
    held = any(answer in text for answer in answers)
    return {**found, "answered": float(held), "wrong": float(output is not None and not held)}


def measure(corpus: str) -> dict:
    "``{(set, rule): [outcome per query]}`` for one corpus, every query set, every rule."
    measured: dict = {}
    datas = {s: Data(QUERY_FILES[s], corpus) for s in QUERY_FILES}
    with tempfile.TemporaryDirectory() as tmp:
        memories = load(datas["tuning"], pathlib.Path(tmp) / "memory.db", SearchSettings(semantic=False))
        for s, data in datas.items():
            for rule in rules():
                measured[(s, rule)] = [
                    outcome(data, q, injection(q["project"], confident_matches(memories[q["project"]], q["query"], rule), DEFAULT_BUDGET))
                    for q in data.queries
                ]
        for memory in memories.values():
            memory.close()
    return measured


def mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else None


def summary(rows: list[dict]) -> dict:
    injecting = [r["bytes"] for r in rows if r["injected"]]
    return {
        "silent": mean(rows, "silent"), "answered": mean(rows, "answered"), "wrong": mean(rows, "wrong"),
        "bytes_inject": sum(injecting) / len(injecting) if injecting else 0.0, "bytes_prompt": sum(r["bytes"] for r in rows) / len(rows),
        "no_answer": sum(1 for r in rows if "silent" in r), "answerable": sum(1 for r in rows if "answered" in r),
    }


def label(rule: RecallRule) -> str:
    return f"coverage {rule.min_coverage:.2f}, {rule.max_results} match{'es' if rule.max_results > 1 else ''}, {rule.min_terms}+ terms"


def row(name: str, s: dict, bold: bool = False) -> str:
    show = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
    cells = [show(s["silent"]), show(s["answered"]), show(s["wrong"]), f"{s['bytes_inject']:,.0f}", f"{s['bytes_prompt']:,.0f}"]
    name = f"**{name}**" if bold else name
    return f"| {name} | " + " | ".join(cells) + " |"


HEADER = ["| rule | silent on no-answer | answered | wrong | bytes/inject | bytes/prompt |", "|---|---|---|---|---|---|"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--silence", type=float, default=0.95, help="least pooled share of no-answer tuning prompts left silent")
    parser.add_argument("--all-rules", action="store_true", help="print every rule's tuning row, not only the best few")
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all", help="one corpus only, for a quick look")
    args = parser.parse_args()
    corpora = list(CORPORA) if args.corpus == "all" else [args.corpus]
    measured = {corpus: measure(corpus) for corpus in corpora}
    pooled = lambda s, rule: [o for corpus in corpora for o in measured[corpus][(s, rule)]]  # noqa: E731
    tuning = {rule: summary(pooled("tuning", rule)) for rule in rules()}
    eligible = [r for r in tuning if r is not SEARCH_DEFAULT and tuning[r]["silent"] >= args.silence]
    if not eligible:
        sys.exit(f"no rule leaves {args.silence:.0%} of the no-answer tuning prompts silent; lower --silence")
    chosen = max(eligible, key=lambda r: (tuning[r]["answered"], r.min_coverage, -r.max_results, -r.min_terms))
    counts = summary(pooled("tuning", chosen))
    print(f"# hook prompt: the tuning queries as prompts, every corpus pooled "
          f"({counts['no_answer']} without an answer, {counts['answerable']} answerable), budget {DEFAULT_BUDGET:,} bytes\n")
    print("\n".join(HEADER))
    shown = sorted(tuning, key=lambda r: (-tuning[r]["answered"], -tuning[r]["silent"]))
    for rule in shown if args.all_rules else [r for r in shown if r in eligible][:8] + [SEARCH_DEFAULT]:
        print(row(label(rule) + (" (search's own)" if rule is SEARCH_DEFAULT else ""), tuning[rule], rule == chosen))
    print(f"\nChosen on tuning (most answered with silence >= {args.silence:.2f}): {label(chosen)}"
          f"{'' if chosen == RULE else f'; hooks/recall.py RULE is {label(RULE)}: update it'}\n")
    print("# Held out, as prompts\n")
    print("| corpus | rule | no-answer prompts | silent on no-answer | answerable | answered | wrong | bytes/inject | bytes/prompt |")
    print("|---|---|---|---|---|---|---|---|---|")
    for corpus in [*corpora, "all"] if len(corpora) > 1 else corpora:
        for rule in (chosen, SEARCH_DEFAULT):
            rows = pooled("heldout", rule) if corpus == "all" else measured[corpus][("heldout", rule)]
            s = summary(rows)
            name = label(rule) + (" (search's own)" if rule is SEARCH_DEFAULT else "")
            cells = [str(s["no_answer"]), f"{s['silent']:.2f}", str(s["answerable"]), f"{s['answered']:.2f}", f"{s['wrong']:.2f}",
                     f"{s['bytes_inject']:,.0f}", f"{s['bytes_prompt']:,.0f}"]
            print(f"| {corpus} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
