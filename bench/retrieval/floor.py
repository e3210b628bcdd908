"""The floor: plain FTS5 ``bm25()`` over the same passages, porter tokenizer, stop words dropped, top 5.

What a hand-written SQLite search gives on the same data, computed in process beside
``search_memory`` (calibrate.py prints it as the last row of each table). Each corpus
is loaded as it ends up after its updates (corpora.Data's final state) into an
in-memory FTS5 table of one row per passage: an observation, with its entity's name
and type as two more columns (an entity without observations is one row of its name
and type), tokenized ``porter unicode61 remove_diacritics 2`` as memory's word indexes
are. A query's words without stop words (the search's own list, so both leave out the
same ones) are quoted and OR-ed; the 5 rows ``bm25()`` ranks best are the answer,
each labelled with its entity. So, scored as search_memory's answers are
(scoring.py): recall@k counts the distinct entities among those 5 passages, turn
recall@5 whether one of them is the answering turn, and the floor never abstains
unless no passage holds any of the words.
"""

import json
import sqlite3
import time

from corpora import Data
from scoring import returned

from datasette_memory.search.terms import content_terms, fts_quote

TOP = 5
TOKENIZE = "porter unicode61 remove_diacritics 2"


class Floor:
    """
    One corpus's passages in an FTS5 table, ready to be searched.

    :param data: the corpus, its updates applied
    """

    def __init__(self, data: Data):
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            f"CREATE VIRTUAL TABLE passages USING fts5(project UNINDEXED, entity UNINDEXED, name, entity_type, content, tokenize='{TOKENIZE}')"
        )
        types = {(r["project"], r["name"]): r["entityType"] for r in data.corpus if r["type"] == "entity"}
        for project, entities in data.final.items():
            for name, observations in entities.items():
                self.db.executemany(
                    "INSERT INTO passages VALUES (?, ?, ?, ?, ?)",
                    [(project, name, name, types[(project, name)], text) for text in observations or [""]],
                )

    def search(self, project: str, query: str) -> list[tuple[str, str]]:
        "The top passages for ``query`` in ``project``: ``[(entity name, passage)]``, best first."
        words = content_terms(query)
        if not words:
            return []
        return self.db.execute(
            "SELECT entity, content FROM passages WHERE passages MATCH ? AND project = ? ORDER BY bm25(passages) LIMIT ?",
            [" OR ".join(map(fts_quote, words)), project, TOP],
        ).fetchall()

    def ask(self, project: str, query: str) -> dict:
        "One query's answer, as :func:`scoring.returned` describes it: the passages as results, each under its entity."
        started = time.perf_counter()
        results = [{"entity": {"name": name}, "observations": [text]} for name, text in self.search(project, query)]
        ms = (time.perf_counter() - started) * 1000
        size = len(json.dumps({"results": results}, separators=(",", ":"), ensure_ascii=False).encode())
        answer = returned({"results": results}, [], size, None, ms)
        answer["top_text"] = "\n".join(r["observations"][0] for r in results)  # the 5 passages, whatever their entities
        return answer
