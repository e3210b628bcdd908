"""The retrieval corpora: which files make each one, what each project holds before and after its updates.

Three corpora of two shapes, each a folder of the same four files (corpus.jsonl,
updates.jsonl, queries.jsonl tuned on, heldout.jsonl held out):

- ``services``: short facts about services, people and decisions (this folder)
- ``conversations``: long multi-session conversations, one entity per session whose
  observations are the turns in order (``conversations/``); each answerable query
  names its answering turn by a distinctive substring, ``answer_text`` (or a list of
  them when more than one turn answers it)
- ``dialogues``: longer multi-session dialogues of the same shape, written later and
  apart from the search code (``dialogues/``): a clinic's booking app, a student rover
  team, an open-source library; 12 sessions of about 30 turns

:class:`Data` refuses labels that contradict the data, so a wrong label stops a run
instead of skewing it.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
CORPORA = {"services": HERE, "conversations": HERE / "conversations", "dialogues": HERE / "dialogues"}
TURNS = {"conversations", "dialogues"}  # the corpora whose answers sit in single turns: their floor is a turn's
QUERY_FILES = {"tuning": "queries.jsonl", "heldout": "heldout.jsonl"}
KINDS = ["keyword", "question", "paraphrase", "abstention", "update"]


def read_jsonl(path: pathlib.Path) -> list[dict]:
    "The rows of a JSON-lines file."
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Data:
    """
    One corpus with its updates and one query file, with the facts scoring needs.

    :param queries: the query file, in the corpus's folder: queries.jsonl (tuned on) or heldout.jsonl
    :param corpus: ``services``, ``conversations`` or ``dialogues``
    """

    def __init__(self, queries: str = "queries.jsonl", corpus: str = "services"):
        folder = CORPORA[corpus]
        self.corpus_name = corpus
        self.corpus, self.updates, self.queries = (read_jsonl(folder / f) for f in ("corpus.jsonl", "updates.jsonl", queries))
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
        """
        Refuse labels that contradict the data: unknown relevant entities, forbidden text
        still stored, an ``answer_text`` that no relevant entity holds.
        """
        for q in self.queries:
            final = self.final[q["project"]]
            text = "\n".join(o for obs in final.values() for o in obs)
            missing = [n for n in q["relevant"] if n not in final]
            stored = [f for f in q["forbidden_text"] if f in text]
            if missing or stored or q["kind"] not in KINDS:
                sys.exit(f"{q['id']}: bad label (relevant not in project: {missing}, forbidden text still stored: {stored})")
            held = "\n".join(o for n in q["relevant"] if n in final for o in final[n])
            unheld = [t for t in answer_texts(q) if t not in held]
            if unheld:
                sys.exit(f"{q['id']}: bad label (answer_text {unheld[0]!r} is in no observation of a relevant entity)")

    def setup_calls(self, project: str) -> list[tuple[str, dict]]:
        "The MCP calls that load ``project`` and then apply its updates."
        rows = [r for r in self.corpus if r["project"] == project]
        entities = [{k: r[k] for k in ("name", "entityType", "observations")} for r in rows if r["type"] == "entity"]
        relations = [{k: r[k] for k in ("from", "to", "relationType")} for r in rows if r["type"] == "relation"]
        calls = [("create_entities", {"entities": entities}), ("create_relations", {"relations": relations})]
        return calls + [update_call(u) for u in self.updates if u["project"] == project]

    def describe(self) -> str:
        "How big the corpus is, in one sentence."
        entities = sum(len(v) for v in self.original.values())
        observations = sum(len(o) for v in self.original.values() for o in v.values())
        return (f"{entities} entities, {observations} observations in {len(self.projects)} projects; "
                f"{len(self.updates)} update steps; {len(self.queries)} queries.")


def answer_texts(q: dict) -> list[str]:
    "The substrings of the turns that answer ``q``: its ``answer_text``, one string or a list; [] if it has none."
    answer = q.get("answer_text", [])
    return [answer] if isinstance(answer, str) else answer


def update_call(u: dict) -> tuple[str, dict]:
    "One updates.jsonl line as an official-server tool call."
    if u["op"] == "delete_observations":
        return u["op"], {"deletions": [{"entityName": u["entityName"], "observations": u["observations"]}]}
    if u["op"] == "add_observations":
        return u["op"], {"observations": [{"entityName": u["entityName"], "contents": u["contents"]}]}
    if u["op"] == "delete_entities":
        return u["op"], {"entityNames": u["entityNames"]}
    raise ValueError(f"unknown op {u['op']!r}")
