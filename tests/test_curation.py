"""A person's corrections through the core: edit an observation, rename an entity, merge two."""

import json

import pytest

from datasette_memory import InvalidInput, Memory, NotFound
from datasette_memory.search.forgotten import deleted_events


def entity(name, entity_type="service", *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


@pytest.fixture
def graph(db_path, lexical):
    memory = Memory.open(db_path, project="payments", actor="alice", config=lexical)
    memory.create_entities(
        [
            entity("auth", "service", "listens on port 8443", "issues JWTs", "owned by Dana"),
            entity("auth-gateway", "service", "fronts the auth service", "issues JWTs"),
            entity("Dana", "person", "on call this week"),
            entity("ledger", "database"),
        ]
    )
    memory.create_relations(
        [
            {"from": "Dana", "to": "auth", "relationType": "maintains"},
            {"from": "auth", "to": "ledger", "relationType": "writes to"},
            {"from": "auth-gateway", "to": "auth", "relationType": "routes to"},
            {"from": "auth-gateway", "to": "ledger", "relationType": "writes to"},
        ]
    )
    yield memory
    memory.close()


def last_event(memory):
    kind, actor, target, old, new = memory.conn.execute(
        "SELECT kind, actor, target, old, new FROM events ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return kind, actor, target, json.loads(old) if old else None, json.loads(new) if new else None


def test_an_edited_observation_keeps_its_place_and_its_history(graph):
    graph.update_observation("auth", "listens on port 8443", "listens on port 9443")
    assert graph.open_nodes(["auth"])["entities"][0]["observations"] == ["listens on port 9443", "issues JWTs", "owned by Dana"]
    assert last_event(graph) == ("update_observation", "alice", "auth", "listens on port 8443", "listens on port 9443")
    assert graph.verify_chain().ok
    assert [r["entity"]["name"] for r in graph.search_memory("port 9443")["results"]] == ["auth"]
    # the old words join the deleted words, which tell search a question asks about something forgotten
    assert deleted_events(graph.conn, "payments", "8443")


@pytest.mark.parametrize(
    "arguments,error,message",
    [
        (("nobody", "x", "y"), NotFound, "entityName: no entity named 'nobody'"),
        (("auth", "never said", "y"), NotFound, "old: entity 'auth' has no observation 'never said'"),
        (("auth", "issues JWTs", "issues JWTs"), InvalidInput, "new: is the observation as it stands"),
        (("auth", "issues JWTs", "owned by Dana"), InvalidInput, "new: entity 'auth' already has this observation"),
        (("auth", "issues JWTs", "  "), InvalidInput, "new: must not be empty"),
    ],
)
def test_bad_edits_change_nothing(graph, arguments, error, message):
    before = graph.conn.execute("SELECT count(*) FROM events").fetchone()[0]
    with pytest.raises(error, match=message):
        graph.update_observation(*arguments)
    assert graph.conn.execute("SELECT count(*) FROM events").fetchone()[0] == before


def test_a_renamed_entity_keeps_its_relations_and_answers_to_its_old_name(graph):
    result = graph.rename_entity("auth", "auth-service")
    assert result["entity"]["name"] == "auth-service"
    relations = graph.open_nodes(["auth-service"])["relations"]
    assert relations == [
        {"from": "Dana", "to": "auth-service", "relationType": "maintains"},
        {"from": "auth-service", "to": "ledger", "relationType": "writes to"},
        {"from": "auth-gateway", "to": "auth-service", "relationType": "routes to"},
    ]
    assert graph.open_nodes(["auth"])["entities"] == []
    assert [e["name"] for e in graph.search_nodes("auth-serv")["entities"]] == ["auth-service"]
    # the old name is an alias: substring and ranked search both find the entity by it
    assert "auth-service" in [e["name"] for e in graph.search_nodes("auth")["entities"]]
    assert "auth-service" in [r["entity"]["name"] for r in graph.search_memory("auth JWTs")["results"]]
    kind, actor, target, old, new = last_event(graph)
    assert (kind, actor, target, old, new["name"]) == ("rename_entity", "alice", "auth", "auth", "auth-service")
    assert len(new["relations"]) == 3
    assert graph.verify_chain().ok


@pytest.mark.parametrize(
    "arguments,message",
    [
        (("auth", "auth-gateway"), "new_name: an entity named 'auth-gateway' exists; merge into it instead"),
        (("auth", "auth"), "new_name: is the entity's name already"),
        (("auth", ""), "new_name: must not be empty"),
        (("ghost", "spirit"), "name: no entity named 'ghost'"),
    ],
)
def test_bad_renames_change_nothing(graph, arguments, message):
    before = graph.read_graph()
    with pytest.raises((InvalidInput, NotFound), match=message):
        graph.rename_entity(*arguments)
    assert graph.read_graph() == before


def test_a_merge_moves_what_the_survivor_lacks_and_drops_relations_between_the_two(graph):
    result = graph.merge_entity("auth", into="auth-gateway")
    assert result["observations"] == ["listens on port 8443", "owned by Dana"]  # "issues JWTs" it had
    survivor = graph.open_nodes(["auth-gateway"])
    assert survivor["entities"][0]["observations"] == [
        "fronts the auth service", "issues JWTs", "listens on port 8443", "owned by Dana"
    ]
    assert survivor["relations"] == [
        {"from": "Dana", "to": "auth-gateway", "relationType": "maintains"},
        {"from": "auth-gateway", "to": "ledger", "relationType": "writes to"},
    ]  # auth writes to ledger repeated one the survivor had; auth-gateway routes to auth became a loop
    assert graph.open_nodes(["auth"])["entities"] == []
    assert "auth-gateway" in [e["name"] for e in graph.search_nodes("auth")["entities"]]
    kind, _, target, old, new = last_event(graph)
    assert (kind, target, old["name"], new["into"]) == ("merge_entity", "auth", "auth", "auth-gateway")
    assert [r["became"] for r in new["relations"]] == [
        {"from": "Dana", "to": "auth-gateway", "relationType": "maintains"}, None, None
    ]
    assert graph.verify_chain().ok


def test_aliases_follow_a_second_merge_and_go_with_their_entity(graph):
    graph.rename_entity("Dana", "Dana K")
    graph.merge_entity("Dana K", into="auth-gateway")
    aliases = graph.conn.execute("SELECT alias FROM memory_aliases ORDER BY alias").fetchall()
    assert aliases == [("Dana",), ("Dana K",)]
    assert [e["name"] for e in graph.search_nodes("dana")["entities"]][0] == "auth-gateway"
    graph.delete_entities(["auth-gateway"])
    assert graph.conn.execute("SELECT count(*) FROM memory_aliases").fetchone()[0] == 0


def test_merging_an_entity_into_itself_or_a_missing_one_is_refused(graph):
    with pytest.raises(InvalidInput, match="into: is the entity being merged"):
        graph.merge_entity("auth", "auth")
    with pytest.raises(NotFound, match="into: no entity named 'nowhere'"):
        graph.merge_entity("auth", "nowhere")


def test_curated_text_is_checked_for_secrets(graph):
    with pytest.raises(InvalidInput, match="AWS access key id"):
        graph.update_observation("auth", "issues JWTs", "key AKIAIOSFODNN7EXAMPLE")
