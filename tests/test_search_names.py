"""Names and aliases are the strongest evidence: a query that is an entity's name, or holds it, finds that entity first.

Written as a new user meets search: a made-up service graph (tests/service_graph.py) whose names are
mentioned all over each other's observations, so a name's words are in many entities; each entity
asked for by its own name, as stored and as people type it (spaces, hyphens, underscores, dots,
camelCase), through every door that searches: MCP, the search page, the entity page's link, the
rename and merge confirmations, the prompt hook and context packs. Then Hypothesis over generated
names: every entity is found by its exact name, by its name's words, and by a former name after a
rename or a merge.
"""

import json
import re
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import hypothesis.strategies as st
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from hypothesis import HealthCheck, given, settings

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.cli import cli
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import issue_reviewer
from .service_graph import SERVICES, entities

PROJECT = "shop"
NAMES = [name for name, _, _ in SERVICES]
CURATOR = {"permissions": {"memory-curate": {"id": ["carol"]}}}
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


def name_words(name: str) -> list[str]:
    "A name's words as a person reads them: split at spaces, hyphens, underscores, dots and camelCase humps."
    humps = "".join(f" {c}" if c.isupper() and (p.islower() or p.isdigit()) else c for p, c in zip(" " + name, name))
    return [word.lower() for word in re.split(r"[\s\-_.]+", humps) if word]


def spellings(name: str) -> list[str]:
    "How people type a name: as stored, and its words joined by spaces, hyphens, underscores, dots and in camelCase."
    words = name_words(name)
    camel = words[0] + "".join(word.capitalize() for word in words[1:])
    return list(dict.fromkeys([name, " ".join(words), "-".join(words), "_".join(words), ".".join(words), camel]))


ASKED = [(name, spelling) for name in NAMES for spelling in spellings(name)]


def first_names(result: dict) -> list[str]:
    return [r["entity"]["name"] for r in result["results"]]


def test_the_graph_is_one_where_name_words_are_everywhere():
    "The premise: many of the names' words are each in more than a fifth of the entities, so coverage alone calls them generic."
    texts = [" ".join([name, *observations]).lower() for name, _, observations in SERVICES]
    generic = {word for name in NAMES for word in name_words(name) if sum(word in text for text in texts) > len(texts) / 5}
    assert {"checkout", "api", "orders", "postgres"} <= generic


@pytest.fixture
def mcp_server(db_path):
    "Our MCP server on a new memory file, with the default configuration a new user gets."
    backend = LocalBackend(db_path, actor="agent")
    yield create_server(backend)
    backend.close()


async def test_search_memory_over_mcp_finds_each_entity_by_its_name(mcp_server):
    async with Client(mcp_server) as client:
        await client.call_tool("create_entities", {"entities": entities(), "project": PROJECT})
        missed = []
        for name, spelling in ASKED:
            found = (await client.call_tool("search_memory", {"query": spelling, "project": PROJECT})).structured_content
            if first_names(found)[:1] != [name]:
                missed.append((spelling, first_names(found)[:3]))
            elif found["results"][0]["why"] != "match" or not found["results"][0]["name_match"]:
                missed.append((spelling, "not said to be a name match"))
        assert missed == []
        # search_nodes keeps the official contract (every entity containing the query) and ranks the one it names
        # first; when nothing contains the query, it answers by name
        texts = {name: " ".join([name, entity_type, *observations]).lower() for name, entity_type, observations in SERVICES}
        for name, spelling in ASKED:
            found = (await client.call_tool("search_nodes", {"query": spelling, "project": PROJECT})).structured_content
            containing = {n for n, text in texts.items() if spelling.lower() in text}
            if containing:
                assert {e["name"] for e in found["entities"]} == containing, spelling
            if name in containing or not containing:
                assert found["entities"][0]["name"] == name, spelling


@pytest.fixture
def shop(db_path):
    memory = Memory.open(db_path, project=PROJECT, actor="agent")
    memory.create_entities(entities())
    memory.wait_for_semantic_index()
    memory.close()
    return db_path


def results_on_page(html: str) -> list[str]:
    "The entity names the search page lists as results (not the related ones), in order."
    found = html.split('<ul class="memory-results">', 1)
    if len(found) < 2:
        return []
    listed = found[1].split("</ul>", 1)[0]
    return [unquote(parse_qs(urlsplit(href.replace("&amp;", "&")).query)["name"][0])
            for href in re.findall(r'<strong><a href="([^"]+)">', listed)]


async def test_the_search_page_finds_each_entity_by_its_name(shop):
    datasette = Datasette([str(shop)])
    missed = []
    for name, spelling in ASKED:
        page = await datasette.client.get(f"/-/memory/search?{urlencode({'project': PROJECT, 'q': spelling}, quote_via=quote)}")
        assert page.status_code == 200
        listed = results_on_page(page.text)
        if listed[:1] != [name] or "holds nothing that answers this" in page.text:
            missed.append((spelling, listed[:3]))
    assert missed == []


async def test_the_entity_pages_search_link_finds_the_entity(shop):
    datasette = Datasette([str(shop)])
    for name in NAMES:
        page = await datasette.client.get(f"/-/memory/entity?{urlencode({'project': PROJECT, 'name': name}, quote_via=quote)}")
        link = re.search(r'<a href="([^"]+)">Search for it</a>', page.text).group(1).replace("&amp;", "&")
        found = await datasette.client.get(link)
        assert results_on_page(found.text)[:1] == [name], link


def entity_form(page: str, name: str) -> str:
    return f"/-/memory/entity/{page}?{urlencode({'project': PROJECT, 'name': name}, quote_via=quote)}"


@pytest.mark.parametrize("curation, fields, survivor", [
    ("rename", {"new_name": "pg-main"}, "pg-main"),
    ("merge", {"into": "postgres-replica"}, "postgres-replica"),
])
async def test_the_curation_confirmations_promise_holds(shop, curation, fields, survivor):
    "The rename's promise ('searching for postgres-primary still finds it'), and the merge's 'another name of', are true."
    datasette = Datasette([str(shop)], config=CURATOR)
    carol = {"actor": {"id": "carol"}, "headers": SAME_SITE}
    confirm = await datasette.client.post(entity_form(curation, "postgres-primary"), data={**fields, "step": "confirm"}, follow_redirects=True, **carol)
    promise = "searching for <bdi>postgres-primary</bdi> still finds it" if curation == "rename" else "becomes another name of"
    assert promise in confirm.text.replace("<strong>", "").replace("</strong>", "")
    applied = await datasette.client.post(entity_form(curation, "postgres-primary"), data={**fields, "step": "apply"}, **carol)
    assert applied.status_code == 302, applied.text
    for spelling in spellings("postgres-primary"):
        page = await datasette.client.get(f"/-/memory/search?{urlencode({'project': PROJECT, 'q': spelling}, quote_via=quote)}")
        assert results_on_page(page.text)[:1] == [survivor], spelling
        found = (await datasette.client.get(f"/-/memory/search.json?{urlencode({'project': PROJECT, 'q': spelling})}")).json()
        assert "postgres-primary" in found["results"][0]["name_match"]


def prompt_hook(db_path, prompt: str) -> str:
    "What `datasette-memory hook prompt` injects for ``prompt`` in the shop project ('' for nothing)."
    sent = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s", "cwd": "/tmp", "prompt": prompt})
    result = CliRunner().invoke(cli, ["hook", "prompt", "--db", str(db_path), "--project", PROJECT], input=sent)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout.strip() else ""


@pytest.mark.parametrize("prompt, named", [
    ("checkout-api is timing out again, can you look?", "checkout-api"),
    ("the postgresPrimary failover: what do we do?", "postgres-primary"),
    ("add a retry to email worker", "email-worker"),
    ("what does v2.billing.sync copy?", "v2.billing.sync"),
])
def test_the_prompt_hook_injects_the_entity_a_prompt_names(shop, prompt, named):
    injected = prompt_hook(shop, prompt)
    assert f"> {named} (" in injected.splitlines()[1]


def test_the_prompt_hook_still_injects_nothing_for_a_prompt_naming_nothing(shop):
    assert prompt_hook(shop, "What is the capital of France?") == ""
    assert prompt_hook(shop, "thanks, that works") == ""


@pytest.fixture
def facts(shop):
    memory = Memory.open(shop, project=PROJECT, actor="agent")
    reviewer = issue_reviewer("alice")
    memory.governed.record_fact(reviewer, "checkout-api", "timeout", "30 seconds", "the runbook", valid_from="2020-01-01")
    memory.governed.record_fact(reviewer, "postgres-primary", "version", "15", "the runbook", valid_from="2020-01-01")
    memory.governed.propose_claim("web-frontend", "framework", "Next.js 14")
    yield memory
    memory.close()


@pytest.mark.parametrize("spelling", spellings("checkout-api"))
def test_a_context_pack_finds_what_holds_about_the_entity_a_query_names(facts, spelling):
    pack = facts.governed.build_context_pack(spelling)
    assert [item["subject"] for item in pack["items"]][:1] == ["checkout-api"]
    assert pack["items"][0]["why"].startswith("names checkout-api")


def test_a_context_pack_follows_a_rename(facts):
    facts.rename_entity("postgres-primary", "pg-main")
    for query in ("pg-main", "pg main", "postgres primary"):
        pack = facts.governed.build_context_pack(query)
        assert [item["subject"] for item in pack["items"]][:1] == ["postgres-primary"], query


# Hypothesis: generated names, stored in a graph where they are mentioned everywhere

WORDS = ["api", "orders", "checkout", "postgres", "primary", "cache", "worker", "v2", "billing", "sync", "auth", "db",
         "queue", "eu", "west", "1", "gateway", "report", "Ünïcode", "straße"]
SEPARATORS = ["-", "_", ".", " ", "camel"]


@st.composite
def a_name(draw) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    separator = draw(st.sampled_from(SEPARATORS))
    if separator == "camel":
        return words[0] + "".join(word[:1].upper() + word[1:] for word in words[1:])
    return separator.join(words)


def name_key(name: str) -> str:
    "Names that differ only in case and separators are the same name to a person typing it."
    return "".join(name_words(name)).casefold()


@st.composite
def a_graph(draw) -> list[str]:
    names = draw(st.lists(a_name(), min_size=2, max_size=12, unique_by=name_key))
    return names


def stored(names: list[str]) -> tuple[Memory, tempfile.TemporaryDirectory]:
    "A memory file holding ``names``, each observation mentioning the next two, so their words are in many entities."
    folder = tempfile.TemporaryDirectory()
    memory = Memory.open(Path(folder.name) / "memory.db", project=PROJECT, config=Config(search=SearchSettings(semantic=False)))
    memory.create_entities([
        {"name": name, "entityType": "service", "observations": [f"talks to {names[(i + 1) % len(names)]} and {names[(i + 2) % len(names)]}"]}
        for i, name in enumerate(names)
    ])
    return memory, folder


def asked_by(memory: Memory, query: str) -> list[str]:
    return first_names(memory.search_memory(query, limit=50))


NAME_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@NAME_SETTINGS
@given(a_graph())
def test_every_entity_is_found_first_by_its_exact_name_and_by_its_words(names):
    memory, folder = stored(names)
    try:
        for name in names:
            assert asked_by(memory, name)[:1] == [name], name
            assert asked_by(memory, " ".join(name_words(name)))[:1] == [name], name
            assert asked_by(memory, f"what does {' '.join(name_words(name))} do?")[:1] != [] , name
            assert name in asked_by(memory, f"what does {' '.join(name_words(name))} do?"), name
    finally:
        memory.close()
        folder.cleanup()


@NAME_SETTINGS
@given(a_graph(), st.data())
def test_a_former_name_finds_the_entity_after_a_rename_or_a_merge(names, data):
    memory, folder = stored(names)
    try:
        old = data.draw(st.sampled_from(names))
        others = [n for n in names if n != old]
        if data.draw(st.booleans()):
            survivor = data.draw(a_name().filter(lambda n: name_key(n) not in {name_key(m) for m in names}))
            memory.rename_entity(old, survivor)
        else:
            survivor = data.draw(st.sampled_from(others))
            memory.merge_entity(old, into=survivor)
        assert asked_by(memory, old)[:1] == [survivor], (old, survivor)
        assert asked_by(memory, " ".join(name_words(old)))[:1] == [survivor], (old, survivor)
        assert asked_by(memory, survivor)[:1] == [survivor], (old, survivor)
    finally:
        memory.close()
        folder.cleanup()
