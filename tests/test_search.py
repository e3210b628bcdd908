"""Ranked search: natural questions, abstention, ranking order, FTS5 syntax, scope, budget."""

import json
import sqlite3

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings
from sqlite_utils import Database

from datasette_memory import InvalidInput, Memory
from datasette_memory.core import database, migrations
from datasette_memory.search import forgotten, fusion, ranking, terms
from datasette_memory.search.candidates import natural_candidates


def entity(name, entity_type, *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


@pytest.fixture
def team(db_path):
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(
        [
            entity("auth-gateway", "service", "auth-gateway listens on port 8443", "handles sign-in for the web app"),
            entity("ledger-db", "database", "postgres 15 cluster for the ledger", "backups run nightly at 02:00"),
            entity("invoicer", "service", "the invoicer service renders invoices as PDF"),
            entity("Dana", "person", "Dana is on call for auth this week"),
            entity("deploys", "convention", "deploys happen on Tuesdays and Thursdays only"),
        ]
    )
    memory.create_relations([{"from": "Dana", "to": "auth-gateway", "relationType": "maintains"}])
    Memory(memory.conn, project="mobile").create_entities(
        [entity("auth-gateway", "service", "mobile auth-gateway listens on port 9443")]
    )
    memory.wait_for_semantic_index()  # searched as soon as written, as when writes embedded their changes
    return memory


def names(result):
    return [r["entity"]["name"] for r in result["results"]]


@pytest.mark.parametrize(
    "question,expected",
    [
        ("Which port does the auth service listen on?", "auth-gateway"),
        ("who is on call for auth?", "Dana"),
        ("When do backups run?", "ledger-db"),
        ("when do deploys happen?", "deploys"),
        ("invoices PDF", "invoicer"),
    ],
)
def test_natural_questions_find_the_answer_first(team, question, expected):
    result = team.search_memory(question)
    assert names(result)[0] == expected
    assert result["results"][0]["why"] == "match"
    assert result["results"][0]["matched_terms"]
    # search_nodes finds it too: nothing contains the whole question, so it ranks
    assert team.search_nodes(question)["entities"][0]["name"] == expected


@pytest.mark.parametrize(
    "question",
    [
        "What is the retention period for audit logs?",
        "Who is on call for mobile?",  # "mobile" is another project's: no answer here
        "what is it?",  # stop words only
        "",
        "kubernetes helm chart",
    ],
)
def test_abstains_when_memory_has_no_answer(team, question):
    assert team.search_memory(question)["results"] == []
    if question:
        assert team.search_nodes(question)["entities"] == []


@pytest.mark.parametrize(
    "query,expected",
    [
        ("What's the port? Who's on call?", ["port", "call"]),  # contractions are stop words, not "s"
        ("the invoicer’s format", ["invoicer", "format"]),  # a possessive is its word
        ("How long are backups kept?", ["backups", "kept"]),  # "how long" asks; it is not the topic
        ("How many workers, how often?", ["workers"]),
        ("long-running jobs", ["long", "running", "jobs"]),
    ],
)
def test_question_wording_is_not_a_content_term(query, expected):
    assert terms.content_terms(query) == expected


def test_how_long_is_the_question_not_its_topic(db_path, monkeypatch, lexical):
    "\"long\" is stored in another project, so as a term it would weigh in full and sink the question."
    memory = Memory.open(db_path, project="payments", config=lexical)
    memory.create_entities([entity("ledger-db", "database", "backups are kept for 30 days")])
    Memory(memory.conn, project="jobs", config=lexical).create_entities([entity("batch", "service", "runs long jobs overnight")])
    assert names(memory.search_memory("How long are backups kept?")) == ["ledger-db"]
    monkeypatch.setattr(terms, "HOW_WORDS", frozenset())
    assert memory.search_memory("How long are backups kept?")["results"] == []


def test_one_observation_must_cover_the_question(db_path, lexical):
    "Terms scattered over an entity's observations do not make a lexical match; one observation with them does."
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities(
        [
            entity("Ava", "person", "Ava signs the iOS builds", "Ava rotated off the release train", "Ava keeps the Xcode keys"),
            entity("vault", "service", "signing keys are rotated every 30 days"),
        ]
    )
    assert names(memory.search_memory("When are signing keys rotated?")) == ["vault"]
    memory.delete_entities(["vault"])
    assert memory.search_memory("When are signing keys rotated?")["results"] == []
    # the entity's name and type count with each of its observations
    assert names(memory.search_memory("What does Ava sign?")) == ["Ava"]


def test_questions_about_deleted_things_abstain(db_path, monkeypatch, lexical):
    "A question that a deleted passage would have answered abstains: its unknown words keep their full weight."
    memory = Memory.open(db_path, project="data", config=lexical)
    memory.create_entities(
        [
            entity("JupyterHub", "service", "idle notebook servers are culled after 2 hours"),
            entity("snowflake", "warehouse", "warehouses suspend when idle for 5 minutes"),
            *(entity(f"job-{i}", "dag", f"loads table {i} every night") for i in range(4)),
        ]
    )
    question = "JupyterHub idle culling"
    assert names(memory.search_memory(question))[0] == "JupyterHub"
    memory.delete_entities(["JupyterHub"])
    assert memory.search_memory(question)["results"] == []
    candidates, stats = natural_candidates(memory.conn, "data", terms.content_terms(question))
    assert forgotten.forgotten_terms(memory.conn, "data", stats, 0.45) == {"jupyterhub", "culling"}
    assert forgotten.forgotten_terms(memory.conn, "other", stats, 0.45) == set()  # per project
    monkeypatch.setattr(ranking, "forgotten_terms", lambda *args: set())  # without the rule, a look-alike answers
    assert names(memory.search_memory(question)) == ["snowflake"]


def test_an_unrelated_deletion_does_not_make_question_words_count(db_path, lexical):
    "A deleted note that shares one question word with a question did not answer it: the word stays question wording."
    memory = Memory.open(db_path, project="data", config=lexical)
    memory.create_entities(
        [
            entity("snowflake", "warehouse", "warehouses suspend when idle for 5 minutes"),
            entity("scratch", "note", "tidy up the policy page someday"),
        ]
    )
    memory.delete_entities(["scratch"])
    assert names(memory.search_memory("snowflake idle suspension policy")) == ["snowflake"]


def test_deletions_from_before_the_deleted_words_index_are_indexed(db_path, lexical):
    "A file whose ledger recorded deletions before migration m007 gets them indexed, beside an agent's own deleted_fts."
    conn = sqlite3.connect(db_path)
    database.configure(conn)
    with database.write_transaction(conn):
        migrations.migrations.apply(Database(conn, execute_plugins=False), stop_before="m007_deleted_words")
    conn.execute("CREATE TABLE deleted_fts (note TEXT)")  # an agent's table, made when the name was free
    older = Memory(conn, project="data", config=lexical)  # written as by a version without m007
    older.create_entities(
        [entity("JupyterHub", "service", "idle notebook servers are culled"), entity("spark", "service", "uses Glacier archives")]
    )
    older.delete_entities(["JupyterHub"])
    older.delete_observations([{"entityName": "spark", "observations": ["uses Glacier archives"]}])
    conn.commit()
    conn.close()
    memory = Memory.open(db_path, project="data", config=lexical)

    def deleted(term):
        return bool(forgotten.deleted_events(memory.conn, "data", term))

    assert deleted("jupyterhub") and deleted("culling")  # a deleted entity, stemmed as the search indexes are
    assert deleted("glacier") and deleted("archive")  # a deleted observation
    assert not deleted("spark")  # still stored: only the observation was deleted
    assert not deleted("observations") and not deleted("entitytype")  # the event's JSON keys are not its words
    assert memory.conn.execute("SELECT count(*) FROM deleted_fts").fetchone()[0] == 0


def test_a_word_of_another_projects_name_is_not_a_reason_to_abstain(db_path, lexical):
    "Lexical search ignores project names; the semantic arm stays out only for a real project's, not the default one's."
    memory = Memory.open(db_path, project="payments", config=lexical)
    memory.create_entities([entity("auth-gateway", "service", "auth-gateway listens on port 8443")])
    Memory(memory.conn, config=lexical).create_entities([entity("scratch", "note", "anything")])  # the default project
    Memory(memory.conn, project="mobile", config=lexical).create_entities([entity("app", "client", "the iOS app")])
    assert names(memory.search_memory("What is the default port of the auth gateway?")) == ["auth-gateway"]
    assert names(memory.search_memory("mobile auth gateway port")) == ["auth-gateway"]
    words = fusion.other_project_words(memory.conn, "payments")
    assert "mobile" in words and "default" not in words


def test_more_matched_terms_rank_above_fewer(team):
    result = team.search_memory("auth port", limit=10)
    scores = [r["score"] for r in result["results"]]
    assert names(result)[0] == "auth-gateway"  # auth and port
    assert scores == sorted(scores, reverse=True)
    assert len(result["results"][0]["matched_terms"]) == 2
    assert all(len(r["matched_terms"]) <= 2 for r in result["results"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    documents=st.lists(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "filler"]), min_size=1, max_size=8), min_size=2, max_size=8),
    query=st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=3),
)
def test_ranking_is_monotonic(tmp_path_factory, documents, query):
    "More matched terms always rank higher; with the same terms, a stronger BM25 match never scores lower."
    memory = Memory.open(tmp_path_factory.mktemp("rank") / "memory.db")
    memory.create_entities([entity(f"e{i}", "note", " ".join(words)) for i, words in enumerate(documents)])
    results = memory.search_memory(" ".join(query), limit=50, budget=200_000)["results"]
    keys = [(len(r["matched_terms"]), r["score"]) for r in results]
    assert keys == sorted(keys, reverse=True)
    for r in results:
        assert len(r["matched_terms"]) <= r["score"] < len(r["matched_terms"]) + 1


def test_neighbours_rank_below_every_match(team):
    result = team.search_memory("port 8443", expand=True)
    assert names(result) == ["auth-gateway", "Dana"]
    assert result["results"][1]["why"] == "neighbour: Dana maintains auth-gateway"
    assert result["results"][1]["score"] < min(r["score"] for r in result["results"] if r["why"] == "match")
    assert "Dana" not in names(team.search_memory("port 8443"))


@pytest.mark.parametrize(
    "query,expected",
    [
        ('"renders invoices"', ["invoicer"]),
        ("invoic*", ["invoicer"]),
        ("auth NOT port", ["Dana"]),
        ("name:invoicer", ["invoicer"]),
    ],
)
def test_fts5_syntax_is_honoured(team, query, expected):
    result = team.search_memory(query)
    assert result["mode"] == "fts"
    assert [n for n in names(result) if n != "auth-gateway" or "NOT" not in query] == expected


@pytest.mark.parametrize("query", ['"unbalanced', "port AND", "NEAR(", "col:umn:x", "*", "(((", "NOT"])
def test_malformed_fts_never_raises(team, query):
    result = team.search_memory(query)
    assert result["mode"] == "natural"
    team.search_nodes(query)


def test_deleted_memory_never_comes_back(team):
    team.add_observations([{"entityName": "auth-gateway", "contents": ["auth-gateway moved to port 9000"]}])
    team.delete_observations([{"entityName": "auth-gateway", "observations": ["auth-gateway listens on port 8443"]}])
    team.delete_entities(["Dana"])
    for query in ["auth port 8443 on call Dana", "8443", "Dana on call"]:
        text = json.dumps(team.search_memory(query, limit=50, expand=True)["results"])
        assert "8443" not in text and "Dana" not in text
        assert "8443" not in json.dumps(team.search_nodes(query)["entities"])
    assert team.search_memory("what port is auth on?")["results"][0]["observations"] == [
        "auth-gateway moved to port 9000"
    ]


def test_newer_observation_breaks_ties(db_path, lexical):
    memory = Memory.open(db_path, config=lexical)
    memory.create_entities([entity("old", "note", "cache size is 512"), entity("new", "note", "cache size is 256")])
    assert names(memory.search_memory("cache size")) == ["new", "old"]


def test_scope_holds(team):
    for query in ["mobile auth-gateway 9443", "port 9443", "9443"]:
        assert "9443" not in json.dumps(team.search_memory(query, expand=True)["results"])
        assert "9443" not in json.dumps(team.search_nodes(query)["entities"])
    mobile = Memory(team.conn, project="mobile")
    assert names(mobile.search_memory("port 9443")) == ["auth-gateway"]


def test_budget_and_accounting(team):
    full = team.search_memory("auth", limit=10)
    assert full["accounting"]["returned"] == len(full["results"]) >= 2
    small = team.search_memory("auth", limit=10, budget=200)
    assert small["accounting"]["bytes"] <= 200
    assert small["accounting"]["left_out_by_budget"] == len(full["results"]) - len(small["results"]) > 0
    assert names(small) == names(full)[: len(small["results"])]
    assert "untrusted" in full["note"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"limit": 0}, "limit: must be between 1 and 50"),
        ({"budget": 10}, "budget: must be between 200 and 200000"),
        ({"query": 5}, "query: must be a string"),
    ],
)
def test_bad_search_input(team, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        team.search_memory(**{"query": "auth", **kwargs})
