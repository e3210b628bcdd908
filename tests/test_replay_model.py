"""The ledger as the source of truth, over random histories made through every door.

Rules write through the core, the MCP tools, Datasette's curation and review
forms and the CLI import, with a small alphabet of names and texts so that
collisions, re-creation after a delete, renames onto freed names and merges
are common. After every step the tables equal a replay of the ledger, and the
memory is remembered under the ledger's head; any earlier moment read back
(``as_of``, through the core and MCP) is exactly what was remembered, and a
diff from it names exactly the entities that came and went.
"""

import asyncio
import json
import tempfile
from urllib.parse import quote, urlencode

import hypothesis.strategies as st
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.cli import cli
from datasette_memory.core.errors import MemoryStoreError
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import issue_reviewer

REVIEWER = issue_reviewer("alice")
LEXICAL = Config(search=SearchSettings(semantic=False))  # nothing embeds in the background
DATASETTE_CONFIG = {
    "permissions": {"memory-curate": {"id": ["carol"]}, "memory-approve": {"id": ["alice"]}},
    "plugins": {"datasette-memory": {"search": {"semantic": False}}},
}
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
NAMES = ["auth", "db", "Dana", "q/ü 'x'"]
TEXTS = ["port 8080", "owned by Dana", 'says "hi"', "uses db"]
TYPES = ["service", "person"]
RELATION_TYPES = ["uses", "owns"]

names = st.sampled_from(NAMES)
texts = st.sampled_from(TEXTS)
some_names = st.lists(names, min_size=1, max_size=3)
some_texts = st.lists(texts, max_size=3)
entities = st.lists(st.builds(lambda n, t, o: {"name": n, "entityType": t, "observations": o}, names, st.sampled_from(TYPES),
                              st.lists(texts, max_size=2, unique=True)), min_size=1, max_size=3)
relations = st.lists(st.builds(lambda f, t, r: {"from": f, "to": t, "relationType": r}, names, names, st.sampled_from(RELATION_TYPES)),
                     min_size=1, max_size=3)


QUERIES = ["port", "dana", "auth uses", "who owns the db", "what says hi", "port OR owned"]


def names_of(graph):
    return {e["name"] for e in graph["entities"]}


class CurrentBackend:
    """
    Forwards to the running example's :class:`LocalBackend`, so one MCP server
    (slow to build) serves every example.
    """

    config = LEXICAL
    target = None

    def caller(self):
        return self.target.caller()

    async def call(self, function, project, write=False):
        return await self.target.call(function, project, write)

    async def sql(self, function, project):
        return await self.target.sql(function, project)


BACKEND = CurrentBackend()
SERVER = create_server(BACKEND, project="p")


class LedgerReplay(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.path = f"{self.dir.name}/memory.db"
        self.memory = Memory.open(self.path, project="p", actor="agent", session="s1", config=LEXICAL)
        self.elsewhere = Memory(self.memory.conn, project="q", actor="agent", config=LEXICAL)
        self.loop = asyncio.new_event_loop()
        BACKEND.target = LocalBackend(self.path, actor="claude", config=LEXICAL)
        self.datasette = Datasette([self.path], config=DATASETTE_CONFIG)
        self.loop.run_until_complete(self.datasette.invoke_startup())
        self.captured = {}  # head event id: what state_now() said then
        self.claims = []

    def teardown(self):
        self.datasette.close()
        self.loop.close()
        BACKEND.target.close()
        self.memory.close()
        self.dir.cleanup()

    # Helpers

    def head(self):
        return self.memory.conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]

    def attempt(self, call):
        "Make ``call``; if the core refuses it, nothing is written."
        before = self.head()
        try:
            return call()
        except MemoryStoreError:
            assert self.head() == before
            return None

    def mcp(self, tool, arguments, may_fail=False):
        "Call an MCP tool in process; only a call that ``may_fail`` may come back as an error."

        async def call():
            async with Client(SERVER) as client:
                return await client.call_tool(tool, arguments, raise_on_error=False)

        before = self.head()
        result = self.loop.run_until_complete(call())
        assert may_fail or not result.is_error, result.content
        if result.is_error:
            assert self.head() == before
        return result

    def post(self, path, data, actor):
        return self.loop.run_until_complete(
            self.datasette.client.post(path, data=data, actor={"id": actor}, headers=SAME_SITE)
        )

    def state_now(self):
        "What is remembered of a moment: the graph, each entity opened alone, all opened together, and the searches."
        return self.state_as_of(None)

    def state_as_of(self, moment):
        return (
            self.memory.read_graph(as_of=moment),
            {name: self.memory.open_nodes([name], as_of=moment) for name in NAMES},
            self.memory.open_nodes(NAMES, as_of=moment),
            {
                query: (
                    self.memory.search_nodes(query, as_of=moment),
                    [r["entity"]["name"] for r in self.memory.search_memory(query, as_of=moment)["results"]],
                )
                for query in QUERIES
            },
        )

    # The core

    @rule(items=entities)
    def create_entities(self, items):
        self.attempt(lambda: self.memory.create_entities(items))

    @rule(name=names, contents=some_texts)
    def add_observations(self, name, contents):
        self.attempt(lambda: self.memory.add_observations([{"entityName": name, "contents": contents}]))

    @rule(name=names, observations=some_texts)
    def delete_observations(self, name, observations):
        self.attempt(lambda: self.memory.delete_observations([{"entityName": name, "observations": observations}]))

    @rule(entity_names=some_names)
    def delete_entities(self, entity_names):
        self.attempt(lambda: self.memory.delete_entities(entity_names))

    @rule(items=relations)
    def create_relations(self, items):
        self.attempt(lambda: self.memory.create_relations(items))

    @rule(items=relations)
    def delete_relations(self, items):
        self.attempt(lambda: self.memory.delete_relations(items))

    @rule(name=names, old=texts, new=texts)
    def update_observation(self, name, old, new):
        self.attempt(lambda: self.memory.update_observation(name, old, new))

    @rule(name=names, new_name=names)
    def rename_entity(self, name, new_name):
        self.attempt(lambda: self.memory.rename_entity(name, new_name))

    @rule(name=names, into=names)
    def merge_entity(self, name, into):
        self.attempt(lambda: self.memory.merge_entity(name, into))

    @rule(summary=texts)
    def checkpoint(self, summary):
        self.memory.checkpoint(summary)

    @rule(content=texts)
    def append_event(self, content):
        self.memory.append_event(content)

    @rule(items=entities, deleting=names)
    def another_project(self, items, deleting):
        "The same names in another project: its events are in the same ledger, and must not leak into this one."
        self.attempt(lambda: self.elsewhere.create_entities(items))
        self.attempt(lambda: self.elsewhere.rename_entity(items[0]["name"], deleting))
        self.attempt(lambda: self.elsewhere.delete_entities([deleting]))

    @rule(subject=names, object=texts, quoting=st.booleans())
    def propose_claim(self, subject, object, quoting):
        evidence = [{"entityName": subject, "observation": object}] if quoting else ["seen in a log"]
        proposed = self.attempt(lambda: self.memory.governed.propose_claim(subject, "says", object, evidence=evidence))
        if proposed and proposed["claim"]:
            self.claims.append(proposed["claim"]["id"])

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 50), approve=st.booleans())
    def review_claim(self, pick, approve):
        claim = self.claims[pick % len(self.claims)]
        act = self.memory.governed.approve_claim if approve else self.memory.governed.reject_claim
        self.attempt(lambda: act(REVIEWER, claim, "reviewed"))

    # MCP

    @rule(items=entities)
    def mcp_create_entities(self, items):
        self.mcp("create_entities", {"entities": items})

    @rule(name=names, contents=some_texts)
    def mcp_add_observations(self, name, contents):
        self.mcp("add_observations", {"observations": [{"entityName": name, "contents": contents}]}, may_fail=True)

    @rule(name=names, observations=some_texts)
    def mcp_delete_observations(self, name, observations):
        self.mcp("delete_observations", {"deletions": [{"entityName": name, "observations": observations}]})

    @rule(entity_names=some_names)
    def mcp_delete_entities(self, entity_names):
        self.mcp("delete_entities", {"entityNames": entity_names})

    @rule(items=relations, delete=st.booleans())
    def mcp_relations(self, items, delete):
        self.mcp("delete_relations" if delete else "create_relations", {"relations": items})

    # Datasette: a person's forms

    @rule(
        name=names,
        curation=st.sampled_from(["edit-observation", "delete-observation", "rename", "merge", "delete-relation"]),
        other=names, old=texts, new=texts, relation_type=st.sampled_from(RELATION_TYPES), held=st.booleans(), pick=st.integers(0, 50),
    )
    def curate_in_datasette(self, name, curation, other, old, new, relation_type, held, pick):
        "A person corrects an entity through its forms: mostly one that exists, and what it holds now (``held``), or anything."
        present = [e["name"] for e in self.memory.read_graph()["entities"]]
        if held and present:
            name = present[pick % len(present)]
        opened = self.memory.open_nodes([name])
        observations = opened["entities"][0]["observations"] if opened["entities"] else []
        links = [[r["from"], r["relationType"], r["to"]] for r in opened["relations"]]
        if held and observations:
            old = observations[pick % len(observations)]
        fields = {
            "edit-observation": {"old": old, "new": new},
            "delete-observation": {"observation": old},
            "rename": {"new_name": other},
            "merge": {"into": other},
            "delete-relation": {"relation": json.dumps(links[pick % len(links)] if held and links else [name, relation_type, other])},
        }[curation]
        path = f"/-/memory/entity/{curation}?{urlencode({'project': 'p', 'name': name}, quote_via=quote)}"
        before = self.head()
        response = self.post(path, {**fields, "step": "apply"}, "carol")
        assert response.status_code in (302, 400, 404), response.text
        if response.status_code != 302:
            assert self.head() == before

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 50), pending=st.booleans())
    def approve_in_datasette(self, pick, pending):
        "A person approves a claim through its form: mostly a pending one, or any (then it is refused)."
        candidates = [id for (id,) in self.memory.conn.execute("SELECT id FROM claims WHERE status = 'candidate' ORDER BY id")]
        choices = candidates if pending and candidates else self.claims
        before = self.head()
        response = self.post(f"/-/memory/claims/{choices[pick % len(choices)]}/approve", {"rationale": "checked", "step": "apply"}, "alice")
        assert response.status_code in (302, 400), response.text
        if response.status_code != 302:
            assert self.head() == before

    # The CLI

    @rule(items=entities, links=relations)
    def cli_import(self, items, links):
        lines = [json.dumps({"type": "entity", **item}) for item in items]
        lines += [json.dumps({"type": "relation", **link}) for link in links]
        file = f"{self.dir.name}/import.jsonl"
        with open(file, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        result = CliRunner().invoke(
            cli, ["import", file, "--db", self.path, "--project", "p"], env={"DATASETTE_MEMORY_NO_VECTORS": "1"}, catch_exceptions=False
        )
        assert result.exit_code == 0, result.output

    # The past

    @rule(pick=st.integers(0, 2**16), later=st.integers(0, 2**16), through_mcp=st.booleans())
    def read_the_past(self, pick, later, through_mcp):
        "A moment remembered earlier reads back exactly, through the core or MCP, and a diff from it names who came and went."
        moments = sorted(self.captured)
        moment = moments[pick % len(moments)]
        graph, nodes, _, _ = self.captured[moment]
        if through_mcp:
            assert self.mcp("read_graph", {"as_of": moment}).structured_content == graph
            name = NAMES[later % len(NAMES)]
            assert self.mcp("open_nodes", {"names": [name], "as_of": str(moment)}).structured_content == nodes[name]
        else:
            assert self.state_as_of(moment) == self.captured[moment]
        ts = self.memory.conn.execute("SELECT ts FROM events WHERE id = ?", [moment]).fetchone()
        if ts and self.memory.moment(ts[0])["event_id"] == moment:  # no later event shares its time
            assert self.memory.read_graph(as_of=ts[0]) == graph
        until = moments[pick % len(moments) + later % (len(moments) - pick % len(moments))]
        for end, end_graph in ((None, self.memory.read_graph()), (until, self.captured[until][0])):
            diff = self.memory.memory_diff(moment, end, budget=200_000)
            assert diff["accounting"]["left_out_by_budget"] == 0
            added = {c["entity"]["name"] for c in diff["changes"] if c["change"] == "entity added"}
            deleted = {c["entity"]["name"] for c in diff["changes"] if c["change"] == "entity deleted"}
            assert added == names_of(end_graph) - names_of(graph)
            assert deleted == names_of(graph) - names_of(end_graph)

    @invariant()
    def the_tables_are_the_replay_and_now_is_remembered(self):
        check = self.memory.check_replay()
        assert check == {"ok": True, "problems": []}, check["problems"]
        head = self.head()
        now = self.state_now()
        if head in self.captured:  # no event, no change
            assert self.captured[head] == now
        self.captured[head] = now
        assert self.state_as_of(head) == now


def tie_between_equal_observations(memory):
    "Two equal observations: today's search prefers the newer one; so must a search as of now."
    memory.create_entities([entity("auth"), entity("db", "port 8080")])
    memory.add_observations([{"entityName": "auth", "contents": ["port 8080"]}])
    return "port"


def words_only_another_project_holds(memory):
    "A word only another project holds is no question wording: today's search abstains, and so must a search as of now."
    memory.create_entities([entity("auth", "issues tokens")])
    Memory(memory.conn, project="q", config=LEXICAL).create_entities([entity("billing", "charges cards monthly")])
    return "auth tokens charges"


def words_memory_forgot(memory):
    "A question about a deleted observation abstains today, and so must a search as of now."
    memory.create_entities([entity("auth", "issues tokens", "rotates keys nightly"), entity("db", "stores keys")])
    memory.delete_observations([{"entityName": "auth", "observations": ["rotates keys nightly"]}])
    return "rotates keys"


def words_an_edit_removed(memory):
    "An edited observation's old words are forgotten too."
    memory.create_entities([entity("auth", "rotates keys nightly"), entity("db", "stores keys")])
    memory.update_observation("auth", "rotates keys nightly", "issues tokens")
    return "rotates keys"


def entity(name, *observations):
    return {"name": name, "entityType": "service", "observations": list(observations)}


@pytest.mark.parametrize("history", [
    tie_between_equal_observations, words_only_another_project_holds, words_memory_forgot, words_an_edit_removed,
])
def test_a_search_as_of_now_is_the_search_now(tmp_path, history):
    memory = Memory.open(tmp_path / "memory.db", project="p", config=LEXICAL)
    query = history(memory)
    head = memory.conn.execute("SELECT max(id) FROM events").fetchone()[0]
    ranked = [r["entity"]["name"] for r in memory.search_memory(query)["results"]]
    assert [r["entity"]["name"] for r in memory.search_memory(query, as_of=head)["results"]] == ranked
    assert memory.search_nodes(query, as_of=head) == memory.search_nodes(query)
    memory.close()


RUNS = dict(stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LedgerReplay.TestCase.settings = settings(max_examples=10, **RUNS)
test_replay_rebuilds_every_moment = LedgerReplay.TestCase


class LedgerReplayAtLength(LedgerReplay):
    "The same machine, four times the examples: benchmark-sized (marked large), so CI runs it and tests/run may not."


LedgerReplayAtLength.TestCase.settings = settings(max_examples=40, **RUNS)
test_replay_rebuilds_every_moment_at_length = pytest.mark.large(LedgerReplayAtLength.TestCase)
