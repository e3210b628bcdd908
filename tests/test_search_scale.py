"""Search's bounded work on words common in the file: the same ranking rules, scope and deletions, and the counts it weighs words by.

Files here are small, so the thresholds that make a word common are lowered
(``RARE_ROWS``, ``COMMON_ROWS``) to run the paths a 100,000-entity file takes.
"""

import json

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from datasette_memory import Memory
from datasette_memory.search import candidates, project_sample

from .test_search import entity

WORDS = ["alpha", "beta", "gamma", "delta", "filler"]


@pytest.fixture
def every_word_common(monkeypatch):
    "Every word in more than one row of a word index takes the common-word path."
    monkeypatch.setattr(candidates, "RARE_ROWS", 1)


def matches(memory, query):
    return memory.search_memory(query, limit=50, budget=200_000)["results"]


def stored_words(memory, name):
    "The words of an entity's name, type and observations, as stored now."
    row = memory.open_nodes([name])["entities"][0]
    return set(" ".join([row["name"], row["entityType"], *row["observations"]]).split())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    documents=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=2, max_size=12),
    others=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8), min_size=0, max_size=6),
    deleted=st.sets(st.integers(0, 11), max_size=4),
    query=st.lists(st.sampled_from(WORDS[:4]), min_size=1, max_size=3),
    rare_rows=st.sampled_from([0, 1, 3]),
    common_rows=st.sampled_from([1, 2, 200]),
)
def test_common_word_ranking_keeps_the_rules(tmp_path_factory, documents, others, deleted, query, rare_rows, common_rows):
    """
    With words common in the file: more matched terms rank higher, a score
    says how many terms matched, every matched term is in the entity as stored,
    another project's entities never come back, nor deleted ones; and every
    match is one the exact ranking (every word rare) also makes.
    """
    memory = Memory.open(tmp_path_factory.mktemp("rank") / "memory.db", project="here")
    memory.create_entities([entity(f"e{i}", "note", " ".join(words)) for i, words in enumerate(documents)])
    Memory(memory.conn, project="elsewhere").create_entities([entity(f"x{i}", "note", " ".join(w)) for i, w in enumerate(others)])
    gone = [f"e{i}" for i in deleted if i < len(documents)]
    memory.delete_entities(gone)
    exact = {r["entity"]["name"] for r in matches(memory, " ".join(query))}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(candidates, "RARE_ROWS", rare_rows)
        patch.setattr(candidates, "COMMON_ROWS", common_rows)
        results = matches(memory, " ".join(query))
    keys = [(len(r["matched_terms"]), r["score"]) for r in results]
    assert keys == sorted(keys, reverse=True)
    for r in results:
        assert len(r["matched_terms"]) <= r["score"] < len(r["matched_terms"]) + 1
        name = r["entity"]["name"]
        assert name.startswith("e") and name not in gone
        assert set(r["matched_terms"]) <= stored_words(memory, name)
    assert {r["entity"]["name"] for r in results} <= exact
    memory.close()


def test_common_words_still_answer_with_the_rarer_word(db_path, every_word_common, lexical):
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities(
        [entity(f"svc-{i}", "service", f"the service runs job {i} for the data team") for i in range(30)]
        + [entity("auth-gateway", "service", "the auth service listens on port 8443 for the data team")]
    )
    found = memory.search_memory("which port does the auth service listen on?")
    assert [r["entity"]["name"] for r in found["results"]][:1] == ["auth-gateway"]
    assert {"auth", "port", "service"} <= set(found["results"][0]["matched_terms"])


def test_only_generic_words_abstain_at_once(db_path, every_word_common, lexical):
    "Words in most of the project cannot make a match alone: nothing is even looked up."
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities([entity(f"svc-{i}", "service", f"the service runs job {i} for the data team") for i in range(30)])
    found = memory.search_memory("how does the service team handle data?")
    assert found["results"] == [] and found["accounting"]["candidates"] == 0


def test_a_small_project_in_a_big_file_finds_its_old_rows(db_path, monkeypatch, lexical):
    "A word common in another project: the small project's oldest rows are still read (the window scales with its share)."
    monkeypatch.setattr(candidates, "RARE_ROWS", 5)
    monkeypatch.setattr(candidates, "COMMON_ROWS", 2)
    small = Memory.open(db_path, project="small", config=lexical)
    small.create_entities([entity("old-widget", "note", "the widget registry lives in vault")])
    Memory(small.conn, project="big", config=lexical).create_entities(
        [entity(f"w{i}", "note", f"widget registry copy {i}") for i in range(60)]
    )
    assert [r["entity"]["name"] for r in small.search_memory("widget registry")["results"]] == ["old-widget"]
    assert all(r["entity"]["name"].startswith("w") for r in Memory(small.conn, project="big", config=lexical).search_memory("widget registry")["results"])


def test_a_common_word_is_weighed_by_the_projects_sample(db_path, lexical):
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities([entity(f"e{i}", "note", "shared word" if i % 4 == 0 else f"other {i}") for i in range(40)])
    size = project_sample.project_size(memory.conn, "default")
    assert size == 40
    assert project_sample.sample(memory.conn, "default", size).matching('"shared"', size) == 10
    memory.create_entities([entity(f"n{i}", "note", "shared word") for i in range(10)])  # the sample is taken again
    size = project_sample.project_size(memory.conn, "default")
    assert project_sample.sample(memory.conn, "default", size).matching('"shared"', size) == 20


def test_a_large_project_is_sampled(db_path, monkeypatch, lexical):
    monkeypatch.setattr(project_sample, "SAMPLE_ENTITIES", 50)
    memory = Memory.open(db_path, project="large", config=lexical)
    memory.create_entities([entity(f"e{i}", "note", "tagged" if i % 3 == 0 else "plain") for i in range(500)])
    estimate = project_sample.sample(memory.conn, "large", 500).matching('"tagged"', 500)
    assert 35 <= project_sample.sample(memory.conn, "large", 500).taken <= 65  # about a tenth, by a hash of the id
    assert 120 <= estimate <= 215  # 167 exactly


def test_project_sizes_are_kept_through_every_door(db_path, lexical):
    "Writes through memory, renames and merges, and a direct writer of the file all keep the counts search weighs words by."
    memory = Memory.open(db_path, project="a", config=lexical)
    memory.create_entities([entity(f"e{i}", "note", f"text {i}") for i in range(6)])
    Memory(memory.conn, project="b", config=lexical).create_entities([entity("x", "note", "text")])
    memory.delete_entities(["e0"])
    memory.rename_entity("e1", "e1-renamed")
    memory.merge_entity("e2", "e3")
    with memory.conn:
        memory.conn.execute("INSERT INTO entities (project, name, entity_type, created_at) VALUES ('c', 'raw', 'note', '2026-01-01')")
        memory.conn.execute("UPDATE entities SET project = 'c' WHERE name = 'e4' AND project = 'a'")
    counted = dict(memory.conn.execute("SELECT project, count(*) FROM entities GROUP BY project"))
    kept = {p: n for p, n in memory.conn.execute("SELECT project, entities FROM memory_project_sizes") if n}
    assert kept == counted == {"a": 3, "b": 1, "c": 2}


def test_a_question_about_a_forgotten_thing_in_a_big_project_is_quick_to_abstain(db_path, every_word_common, lexical):
    "The deleted-words index is read first: a project's many events are not scanned per term."
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities([entity(f"svc-{i}", "service", f"svc {i} handles invoices") for i in range(20)])
    memory.create_entities([entity("JupyterHub", "service", "notebook servers culled when idle")])
    memory.delete_entities(["JupyterHub"])
    plan = " ".join(row[3] for row in memory.conn.execute(
        "EXPLAIN QUERY PLAN SELECT events.id FROM memory_deleted_fts CROSS JOIN events ON events.id = memory_deleted_fts.rowid "
        "WHERE memory_deleted_fts MATCH 'x' AND events.project = 'default'"
    ))
    assert plan.index("memory_deleted_fts") < plan.index("events")
    assert json.dumps(memory.search_memory("JupyterHub idle culling")["results"]) == "[]"
