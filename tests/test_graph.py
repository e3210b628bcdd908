import re
import sqlite3

import pytest

from datasette_memory import InvalidInput, Memory, NotFound
from datasette_memory.core.ledger import verify_chain


def entity(name, entity_type="thing", observations=()):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def events(memory):
    return memory.conn.execute("SELECT kind, target FROM events ORDER BY id").fetchall()


def test_create_entities_ignores_existing_names(memory):
    assert memory.create_entities([entity("auth", "service", ["port 8080"])]) == [
        entity("auth", "service", ["port 8080"])
    ]
    assert memory.create_entities([entity("auth", "library", ["other"])]) == []
    assert memory.read_graph()["entities"] == [entity("auth", "service", ["port 8080"])]
    assert events(memory) == [("create_entity", "auth")]


def test_duplicates_within_a_batch_are_stored_once(memory):
    created = memory.create_entities(
        [entity("a", "t", ["x", "x", "y"]), entity("a", "u", ["z"])]
    )
    assert created == [entity("a", "t", ["x", "y"])]
    assert memory.read_graph()["entities"] == [entity("a", "t", ["x", "y"])]


def test_add_observations_to_missing_entity_saves_nothing(memory):
    memory.create_entities([entity("a")])
    with pytest.raises(NotFound, match="Entity with name missing not found"):
        memory.add_observations(
            [{"entityName": "a", "contents": ["kept?"]}, {"entityName": "missing", "contents": ["x"]}]
        )
    assert memory.open_nodes(["a"])["entities"][0]["observations"] == []
    assert events(memory) == [("create_entity", "a")]


def test_add_observations_dedupes_against_stored_and_within_call(memory):
    memory.create_entities([entity("a", observations=["one"])])
    result = memory.add_observations([{"entityName": "a", "contents": ["one", "two", "two"]}])
    assert result == [{"entityName": "a", "addedObservations": ["two"]}]
    assert memory.open_nodes(["a"])["entities"][0]["observations"] == ["one", "two"]


def test_relations_dedupe_and_may_point_at_missing_entities(memory):
    rel = {"from": "a", "to": "ghost", "relationType": "uses"}
    assert memory.create_relations([rel, rel]) == [rel]
    assert memory.create_relations([rel]) == []
    assert memory.read_graph()["relations"] == [rel]


def test_delete_entity_removes_its_relations(memory):
    memory.create_entities([entity("a"), entity("b"), entity("c")])
    memory.create_relations(
        [
            {"from": "a", "to": "b", "relationType": "uses"},
            {"from": "c", "to": "a", "relationType": "calls"},
            {"from": "b", "to": "c", "relationType": "owns"},
        ]
    )
    memory.delete_entities(["a", "never-existed"])
    graph = memory.read_graph()
    assert [e["name"] for e in graph["entities"]] == ["b", "c"]
    assert graph["relations"] == [{"from": "b", "to": "c", "relationType": "owns"}]
    assert [kind for kind, _ in events(memory)][-3:] == ["delete_relation", "delete_relation", "delete_entity"]


def test_delete_observations_and_relations_ignore_missing(memory):
    memory.create_entities([entity("a", observations=["x", "y"])])
    memory.delete_observations(
        [{"entityName": "a", "observations": ["x", "nope"]}, {"entityName": "zz", "observations": ["x"]}]
    )
    memory.delete_relations([{"from": "a", "to": "b", "relationType": "r"}])
    assert memory.open_nodes(["a"])["entities"][0]["observations"] == ["y"]
    assert [kind for kind, _ in events(memory)] == ["create_entity", "delete_observation"]


def test_search_and_open_nodes_return_touching_relations(memory):
    memory.create_entities(
        [entity("auth", "service", ["Listens on port 8080"]), entity("db", "database", ["postgres"])]
    )
    memory.create_relations([{"from": "auth", "to": "db", "relationType": "reads"}])
    found = memory.search_nodes("PORT 80")
    assert [e["name"] for e in found["entities"]] == ["auth"]
    assert found["relations"] == [{"from": "auth", "to": "db", "relationType": "reads"}]
    assert len(memory.search_nodes("")["entities"]) == 2
    assert memory.search_nodes("nothing like this")["entities"] == []
    opened = memory.open_nodes(["db", "missing"])
    assert [e["name"] for e in opened["entities"]] == ["db"]
    assert opened["relations"] == [{"from": "auth", "to": "db", "relationType": "reads"}]


def test_same_name_in_two_projects(db_path):
    a = Memory.open(db_path, project="a")
    b = Memory.open(db_path, project="b")
    a.create_entities([entity("auth", "service", ["a's"])])
    b.create_entities([entity("auth", "library", ["b's"])])
    a.create_relations([{"from": "auth", "to": "x", "relationType": "r"}])
    b.delete_entities(["auth"])
    assert a.read_graph() == {
        "entities": [entity("auth", "service", ["a's"])],
        "relations": [{"from": "auth", "to": "x", "relationType": "r"}],
    }
    assert b.read_graph() == {"entities": [], "relations": []}
    assert b.search_nodes("auth")["entities"] == []
    assert b.open_nodes(["auth"])["entities"] == []


AWKWARD = ["foo/bar", "O'Brien \"quoted\"", "ünïcödé 🚀", "  spaces  ", "a;DROP TABLE entities;--", "%_*"]


@pytest.mark.parametrize("name", AWKWARD)
def test_awkward_names_round_trip(memory, name):
    memory.create_entities([entity(name, name, [name])])
    memory.create_relations([{"from": name, "to": name, "relationType": name}])
    assert memory.open_nodes([name])["entities"] == [entity(name, name, [name])]
    assert memory.search_nodes(name)["entities"] == [entity(name, name, [name])]
    memory.delete_entities([name])
    assert memory.read_graph() == {"entities": [], "relations": []}
    assert verify_chain(memory.conn).ok


BAD_INPUTS = [
    ("create_entities", [{"name": "", "entityType": "t", "observations": []}], "entities[0].name: must not be empty"),
    ("create_entities", [{"name": 7, "entityType": "t", "observations": []}], "entities[0].name: must be a string, got number"),
    ("create_entities", [{"name": "a", "entityType": "t"}], "entities[0]: missing required field observations"),
    ("create_entities", [{"name": "a", "entityType": "t", "observations": [], "colour": "red"}], "entities[0].colour: unknown field"),
    ("create_entities", [{"name": "a", "entityType": "t", "observations": ["x" * 70_000]}], "entities[0].observations[0]: 70000 bytes is over the limit of 65536"),
    ("create_entities", [{"name": "n" * 600, "entityType": "t", "observations": []}], "entities[0].name: 600 characters is over the limit of 512"),
    ("create_entities", [{"name": f"e{i}", "entityType": "t", "observations": []} for i in range(1001)], "entities: 1001 items is over the limit of 1000"),
    ("create_entities", "not a list", "entities: must be a list, got string"),
    ("create_entities", [{"name": "a\x00b", "entityType": "t", "observations": []}], "entities[0].name: must not contain NUL"),
    ("create_relations", [{"from": "a", "to": "", "relationType": "r"}], "relations[0].to: must not be empty"),
    ("add_observations", [{"entityName": "a", "contents": [None]}], "observations[0].contents[0]: must be a string, got null"),
    ("delete_entities", ["ok", ""], "entityNames[1]: must not be empty"),
    ("delete_observations", [{"entityName": "a"}], "deletions[0]: missing required field observations"),
    ("delete_relations", [{"from": "a", "to": "b"}], "relations[0]: missing required field relationType"),
]


@pytest.mark.parametrize("method,argument,message", BAD_INPUTS)
def test_bad_input_is_refused_and_writes_nothing(memory, method, argument, message):
    memory.create_entities([entity("a", observations=["x"])])
    before = memory.conn.execute("SELECT count(*) FROM events").fetchone()[0]
    # A valid first item must not be written when a later one is bad
    if isinstance(argument, list) and method == "create_entities" and len(argument) == 1:
        argument = [entity("valid-first")] + argument
        message = message.replace("entities[0]", "entities[1]")
    with pytest.raises(InvalidInput) as excinfo:
        getattr(memory, method)(argument)
    assert message in str(excinfo.value)
    assert memory.conn.execute("SELECT count(*) FROM events").fetchone()[0] == before
    assert [e["name"] for e in memory.read_graph()["entities"]] == ["a"]


def test_ledger_is_append_only(memory):
    memory.create_entities([entity("a")])
    for statement in ("UPDATE events SET actor = 'mallory'", "DELETE FROM events"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            memory.conn.execute(statement)
    assert memory.conn.execute("SELECT actor FROM events").fetchall() == [("tester",)]


SECRETS = [
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "private key block"),
    ("aws key AKIAIOSFODNN7EXAMPLE in config", "AWS access key id"),
    ("token ghp_" + "a1B2" * 9, "GitHub token"),
    ("export OPENAI_API_KEY=sk-proj-" + "x" * 40, "OpenAI API key"),
    ("xoxb-123456789012-abcdefghijkl", "Slack token"),
]


@pytest.mark.parametrize("text,kind", SECRETS)
def test_secrets_are_refused_everywhere_text_is_kept(memory, text, kind):
    memory.create_entities([entity("a")])
    calls = [
        lambda: memory.create_entities([entity("b", observations=["fine", text])]),
        lambda: memory.add_observations([{"entityName": "a", "contents": [text]}]),
        lambda: memory.create_relations([{"from": "a", "to": text, "relationType": "r"}]),
        lambda: memory.append_event(text),
        lambda: memory.checkpoint(text),
    ]
    for call in calls:
        with pytest.raises(InvalidInput, match=re.escape(f"looks like a credential ({kind}); memory does not store credentials")):
            call()
    assert events(memory) == [("create_entity", "a")]


def test_secrets_allowed_by_explicit_flag_and_deletable(db_path):
    memory = Memory.open(db_path, allow_secrets=True)
    memory.create_entities([entity("a", observations=[SECRETS[1][0]])])
    strict = Memory(memory.conn)
    strict.delete_observations([{"entityName": "a", "observations": [SECRETS[1][0]]}])
    assert strict.open_nodes(["a"])["entities"][0]["observations"] == []


def test_ordinary_text_is_not_mistaken_for_a_secret(memory):
    ordinary = ["sk-8 is our ticket prefix", "the AKIA prefix marks AWS keys", "ghp_ tokens are GitHub's", "-----BEGIN CERTIFICATE-----"]
    memory.create_entities([entity("notes", observations=ordinary)])
    assert memory.open_nodes(["notes"])["entities"][0]["observations"] == ordinary
