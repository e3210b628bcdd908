"""The optional semantic arm: lexical without it; with it, paraphrases, deletes, scope, backfill, and embedding off the write path.

The tests without the extra run everywhere: they switch the arm off with the
search setting ``semantic``, which behaves as if the extra were missing. The
tests with it need ``pip install 'datasette-memory[vectors]'`` and are
skipped, by name, where it is not installed.
"""

import json
import subprocess
import sys
import threading

import click
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Memory, SearchSettings, vectors
from datasette_memory.cli import cli
from datasette_memory.cli.options import search_settings
from datasette_memory.search import fusion, ranking
from datasette_memory.vectors import index, nearest
from datasette_memory.vectors.side_file import side_file, side_file_path_for

from .serving import screenshot, serving
from .test_search import entity

TEAM = [
    entity("auth-gateway", "service", "handles sign-in and token issuance for the web app", "listens on port 8443"),
    entity("card-vault", "service", "replaces card numbers with tokens before anything is stored"),
    entity("payouts-scheduler", "service", "sends merchants their money by bank transfer every night"),
    entity("ledger-db", "database", "postgres 15 cluster for the ledger", "backups run nightly at 02:00"),
    entity("Dana", "person", "Dana is on call for auth this week"),
]
PARAPHRASE = "which component swaps credit card digits for surrogates"


def names(result):
    "The matches' names."
    return [r["entity"]["name"] for r in result["results"]]


def related(result):
    "The names of the entities only similar in meaning."
    return [r["entity"]["name"] for r in result["related"]]


def shown(result):
    "Everything a search shows: matches and related entities."
    return json.dumps([result["results"], result["related"]])


def backfill(db_path, **env):
    return CliRunner().invoke(cli, ["backfill-vectors", "--db", str(db_path)], env=env)


@pytest.fixture
def lexical_team(db_path, lexical):
    memory = Memory.open(db_path, project="payments", config=lexical)
    memory.create_entities(TEAM)
    yield memory
    memory.close()


# ---- without the extra (simulated): everything is lexical


@pytest.mark.parametrize("value,available", [("1", False), ("true", False), ("0", vectors.extra_installed()), ("", vectors.extra_installed())])
def test_switch_turns_the_arm_off(value, available):
    assert search_settings({"DATASETTE_MEMORY_NO_VECTORS": value}).semantic_on() is available


def test_without_vectors_search_is_lexical(lexical_team, db_path):
    assert not side_file_path_for(db_path).exists()  # writes made no side file
    assert lexical_team.search_memory(PARAPHRASE)["results"] == []  # no shared words: abstains
    result = lexical_team.search_memory("card tokens")
    assert names(result) == ["card-vault"]
    assert all(r["why"] == "match" and r["matched_terms"] for r in result["results"])
    assert "semantic" not in result
    assert lexical_team.wait_for_semantic_index(timeout=0)


def test_without_vectors_ranking_is_exactly_lexical(lexical_team, lexical):
    "The fusion step is a no-op when the arm is off."
    for query in ["auth port", "when do backups run?", PARAPHRASE]:
        found = ranking.find(lexical_team.conn, "payments", query, ranking.DEFAULT_MIN_COVERAGE, lexical.search)
        assert fusion.fused(found.matches, None, lexical.search) == found.matches
        assert all(c.fused is None for c in found.matches) and found.related == []


def test_backfill_says_the_switch_is_on(lexical_team, db_path):
    result = backfill(db_path, DATASETTE_MEMORY_NO_VECTORS="1")
    assert result.exit_code == 1
    assert "semantic search is off" in result.output
    assert "pip install 'datasette-memory[vectors]'" in result.output
    assert not side_file_path_for(db_path).exists()


def test_backfill_says_the_extra_is_missing(monkeypatch, db_path):
    monkeypatch.setattr(vectors, "extra_installed", lambda: False)
    result = backfill(db_path, DATASETTE_MEMORY_NO_VECTORS=None)
    assert result.exit_code == 1
    assert "the vectors extra is not installed" in result.output
    assert "pip install 'datasette-memory[vectors]'" in result.output


@pytest.mark.parametrize("value", ["heavy", "1,5"])
def test_bad_tuning_value_names_the_variable(value):
    with pytest.raises(click.ClickException, match=r"\$DATASETTE_MEMORY_RRF_BM25 must be a number such as 1.0"):
        search_settings({"DATASETTE_MEMORY_RRF_BM25": value})


# ---- with the extra


@pytest.fixture
def team(db_path, semantic):
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(TEAM)
    memory.create_relations([{"from": "Dana", "to": "auth-gateway", "relationType": "maintains"}])
    assert memory.wait_for_semantic_index(timeout=120)
    yield memory
    memory.wait_for_semantic_index(timeout=120)
    memory.close()


def side_rows(memory) -> dict:
    "What the side file holds, once the index has caught up with every write so far."
    assert memory.wait_for_semantic_index(timeout=120)
    with side_file(memory.conn) as side:
        rows = side.execute("SELECT project, name, digest FROM entity_digests").fetchall()
    return {(project, name): digest for project, name, digest in rows}


def test_writes_embed_every_entity(team, db_path):
    assert side_file_path_for(db_path).exists()
    assert team.search_memory("card tokens").get("semantic") is None
    assert set(side_rows(team)) == {("payments", e["name"]) for e in TEAM}


@pytest.mark.parametrize(
    "query,expected",
    [
        (PARAPHRASE, "card-vault"),
        ("how do shops get paid out", "payouts-scheduler"),
        ("what box answers logins", "auth-gateway"),
    ],
)
def test_paraphrase_is_related_not_matched(team, query, expected):
    "A paraphrase sharing no word with memory finds its entity, labelled as similar in meaning only."
    result = team.search_memory(query)
    assert result["results"] == []
    assert related(result)[0] == expected
    assert result["related"][0]["why"] == "similar in meaning only: its words do not answer the query"
    assert 0 < result["related"][0]["similarity"] <= 1
    assert result["accounting"]["related"] == len(result["related"]) <= SearchSettings().related_limit


def test_lexical_matches_rank_above_semantic_ones(team):
    result = team.search_memory("who is on call for auth", limit=10, expand=True)
    matches = [r for r in result["results"] if not r["why"].startswith("neighbour")]
    keys = [(len(r["matched_terms"]), r["score"]) for r in matches]
    assert keys == sorted(keys, reverse=True)
    assert names(result)[0] == "Dana"
    assert all(len(r["matched_terms"]) <= r["score"] < len(r["matched_terms"]) + 1 for r in matches)
    assert min(r["score"] for r in matches) > max([0.0] + [r["score"] for r in result["results"] if r["why"].startswith("neighbour")])


NEVER_STORED = [
    "What is the retention period for audit logs?",
    "kubernetes helm chart",
    "what is it?",
    "the service",
    "which team owns the mobile push notifications?",
    "how are refunds paid back to customers?",
    "where do we keep the terraform state?",
]


@pytest.mark.parametrize("query", NEVER_STORED)
def test_a_single_project_memory_abstains_on_things_never_stored(team, query):
    "One project, the extra on: no closer project can veto a look-alike, yet matches stay empty; anything similar is labelled."
    assert {name for (name,) in team.conn.execute("SELECT DISTINCT project FROM entities")} == {"payments"}
    found = team.search_memory(query)
    assert found["results"] == []
    assert all(r["why"] == "similar in meaning only: its words do not answer the query" and "similarity" in r for r in found["related"])


@pytest.mark.parametrize("query", [*NEVER_STORED, PARAPHRASE, "how do shops get paid out", "what box answers logins"])
def test_search_nodes_never_returns_a_meaning_only_hit(team, query):
    "The drop-in search returns entities whose words answer the query, never ones only similar in meaning."
    found = team.search_nodes(query)["entities"]
    assert found == []
    assert team.search_memory(query)["results"] == []


def test_fts_syntax_stays_lexical(team):
    result = team.search_memory('"card numbers"')
    assert result["mode"] == "fts"
    assert names(result) == ["card-vault"]


def test_deleted_entity_loses_its_vector(team):
    team.delete_entities(["card-vault"])
    assert "card-vault" not in shown(team.search_memory(PARAPHRASE, limit=50))  # caught up or not
    assert ("payments", "card-vault") not in side_rows(team)
    assert "card-vault" not in shown(team.search_memory(PARAPHRASE, limit=50))


def test_deleted_observation_is_re_embedded_and_never_returned(team):
    before = side_rows(team)[("payments", "auth-gateway")]
    team.delete_observations([{"entityName": "auth-gateway", "observations": ["listens on port 8443"]}])
    queries = ["which port does sign-in listen on", "8443", "what box answers logins"]
    for query in queries:  # before the index has caught up: the old vector no longer matches the entity
        assert "8443" not in shown(team.search_memory(query, limit=50, expand=True))
    assert side_rows(team)[("payments", "auth-gateway")] != before
    for query in queries:
        assert "8443" not in shown(team.search_memory(query, limit=50, expand=True))


def test_stale_vector_is_ignored_until_backfilled(team, db_path):
    "Text changed outside the write path (here: raw SQL) never steers a search by its old vector."
    team.conn.execute("DELETE FROM entities WHERE name = 'card-vault'")  # no ledger event: the write hook never saw it
    team.conn.execute(
        "UPDATE observations SET content = 'renamed' WHERE content = 'sends merchants their money by bank transfer every night'"
    )
    for query in [PARAPHRASE, "how do shops get paid out"]:
        assert "card-vault" not in shown(found := team.search_memory(query, limit=50)) and "payouts-scheduler" not in shown(found)
    result = backfill(db_path)
    assert result.exit_code == 0, result.output
    assert "1 deleted ones forgotten" in result.output
    assert ("payments", "card-vault") not in side_rows(team)


def test_scope_holds(team):
    mobile = Memory(team.conn, project="mobile")
    mobile.create_entities([entity("push-notifier", "service", "sends push notifications to phones via APNs and FCM")])
    assert ("mobile", "push-notifier") in side_rows(team)
    for query in ["how do we alert people on their phones", "push notifications"]:
        assert "push-notifier" not in shown(team.search_memory(query, limit=50))
    assert related(mobile.search_memory("how do we alert people on their phones")) == ["push-notifier"]


def test_closer_match_in_another_project_means_no_answer(team):
    "A question whose best match is another project's thing is not answered with this one's look-alike."
    Memory(team.conn, project="mobile").create_entities([entity("Priya", "person", "Priya is on call for the mobile iOS app")])
    assert team.wait_for_semantic_index(timeout=120)
    for query in ["who is on call for the iPhone app?", "Who is on call for mobile?"]:  # the second names another project
        found = team.search_memory(query)
        assert found["results"] == [] and found["related"] == []


def test_questions_about_deleted_things_get_no_look_alike(team, monkeypatch):
    "When the words that carry a question were only in deleted text, the arm offers no look-alike."
    team.create_entities(
        [
            entity("JupyterHub", "service", "notebook servers for analysts; idle ones are culled after 2 hours"),
            entity("spark", "service", "batch clusters shut down when unused for 30 minutes"),
        ]
    )
    team.delete_entities(["JupyterHub"])
    assert team.wait_for_semantic_index(timeout=120)
    query = "JupyterHub idle culling"
    found = team.search_memory(query)
    assert found["results"] == [] and found["related"] == []
    monkeypatch.setattr(ranking, "forgotten_terms", lambda *args: set())  # without the rule the look-alike comes back
    assert related(team.search_memory(query)) == ["spark"]


def test_backfill_shows_progress_and_is_idempotent(db_path, semantic, lexical):
    Memory.open(db_path, project="payments", config=lexical).create_entities(TEAM)  # stored before the extra
    memory = Memory.open(db_path, project="payments")
    assert nearest.similar(memory.conn, "payments", PARAPHRASE) is None  # nothing embedded yet
    assert memory.search_memory(PARAPHRASE)["semantic"]["state"] == "not built"
    first = backfill(db_path)
    assert first.exit_code == 0, first.output
    assert "Embedding entities" in first.output
    assert f"{len(TEAM)} entities, {len(TEAM)} embedded, 0 deleted ones forgotten" in first.output
    assert str(side_file_path_for(db_path.resolve())) in first.output
    again = backfill(db_path)
    assert f"{len(TEAM)} entities, 0 embedded" in again.output
    found = memory.search_memory(PARAPHRASE)
    assert related(found)[0] == "card-vault" and found.get("semantic") is None
    memory.close()


# ---- embedding off the write path


def test_writes_commit_without_waiting_for_the_model(db_path, semantic, monkeypatch):
    "The embedder is held; the write returns anyway, and search says the index is behind until it catches up."
    release = threading.Event()
    embed = index.embed

    def held(texts):
        release.wait(60)
        return embed(texts)

    monkeypatch.setattr(index, "embed", held)
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(TEAM)  # returns although the embedder is held
    behind = memory.search_memory(PARAPHRASE)
    assert behind["semantic"]["state"] == "behind" and behind["semantic"]["changes_pending"] == len(TEAM)
    assert behind["results"] == []  # the lexical answer: no shared words
    assert not memory.wait_for_semantic_index(timeout=0.2)
    release.set()
    assert memory.wait_for_semantic_index(timeout=120)
    found = memory.search_memory(PARAPHRASE)
    assert found.get("semantic") is None
    assert related(found)[0] == "card-vault"
    memory.close()


async def test_the_search_page_and_json_say_when_the_index_lags(db_path, semantic, monkeypatch):
    release = threading.Event()
    embed = index.embed
    monkeypatch.setattr(index, "embed", lambda texts: release.wait(60) and embed(texts))
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)])
    await datasette.invoke_startup()
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(TEAM)
    page = await datasette.client.get("/-/memory/search?project=payments&q=card+tokens")
    assert page.status_code == 200
    assert "Semantic index behind (5 changes not yet embedded): the semantic index is catching up" in " ".join(page.text.split())
    lag = (await datasette.client.get("/-/memory/search.json?project=payments&q=card+tokens")).json()["semantic"]
    assert lag["state"] == "behind" and lag["changes_pending"] == 5
    release.set()
    assert memory.wait_for_semantic_index(timeout=120)
    page = await datasette.client.get("/-/memory/search?project=payments&q=card+tokens")
    assert "card-vault" in page.text and "Semantic index" not in page.text
    memory.close()


def test_a_search_catches_up_what_no_process_did(team, lexical):
    "Progress is kept in the side file: changes no process embedded are caught up when a search finds them."
    Memory(team.conn, project="payments", config=lexical).create_entities(
        [entity("fraud-screen", "service", "scores every payment for the risk that it is stolen")]
    )  # a writer with the arm off asks for no catch-up
    assert team.search_memory("anything")["semantic"]["state"] == "behind"  # and this search asks for one
    assert team.wait_for_semantic_index(timeout=120)
    assert ("payments", "fraud-screen") in side_rows(team)
    assert team.search_memory("anything").get("semantic") is None


def test_a_process_embeds_its_writes_before_it_ends(db_path, semantic):
    "A short-lived writer (a command, a stdio server whose agent left) finishes the catch-up it started."
    script = (
        "import sys; from datasette_memory import Memory; "
        "Memory.open(sys.argv[1], project='payments').create_entities("
        "[{'name': 'card-vault', 'entityType': 'service', 'observations': ['replaces card numbers with tokens']}])"
    )
    finished = subprocess.run([sys.executable, "-c", script, str(db_path)], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0 and finished.stderr == "", finished.stderr
    memory = Memory.open(db_path, project="payments")
    assert memory.search_memory(PARAPHRASE).get("semantic") is None
    assert related(memory.search_memory(PARAPHRASE)) == ["card-vault"]
    memory.close()


def test_import_leaves_the_index_current(db_path, semantic, tmp_path):
    lines = [json.dumps({"type": "entity", **e}) for e in TEAM]
    (tmp_path / "memory.jsonl").write_text("\n".join(lines))
    result = CliRunner().invoke(cli, ["import", str(tmp_path / "memory.jsonl"), "--db", str(db_path), "--project", "payments"])
    assert result.exit_code == 0, result.output
    memory = Memory.open(db_path, project="payments")
    assert memory.search_memory(PARAPHRASE).get("semantic") is None
    assert related(memory.search_memory(PARAPHRASE))[0] == "card-vault"
    memory.close()


def test_the_search_page_shows_what_is_only_similar_apart(db_path, semantic, page):
    "A person searching with a paraphrase sees no answer, and apart from it the look-alike, labelled as not a match."
    memory = Memory.open(db_path, project="payments")
    memory.create_entities(TEAM)
    assert memory.wait_for_semantic_index(timeout=120)
    memory.close()
    with serving(db_path, semantic=True) as (base, _):
        page.goto(f"{base}/-/memory/search")
        page.get_by_label("Question or keywords").fill(PARAPHRASE)
        page.get_by_label("Project").select_option("payments")
        page.get_by_role("button", name="Search").click()
        expect(page.locator(".memory-empty")).to_have_text("Memory holds nothing that answers this in payments.")
        expect(page.get_by_role("heading", name="Similar in meaning only")).to_be_visible()
        related = page.locator(".memory-related li")
        expect(related.first.locator("strong a")).to_have_text("card-vault")
        expect(related.first.locator(".why")).to_contain_text("not a match")
        screenshot(page, "search-related")
        related.first.locator("strong a").click()
        expect(page.locator("h1")).to_contain_text("card-vault")
