"""The semantic index under bulk loads: few calls into the model, each embedding many entities, and still only current text.

The batching itself is tested everywhere; the tests that run the model need
``pip install 'datasette-memory[vectors]'`` and are skipped, by name, where it
is not installed. They count the calls a real catch-up makes into the model
and check the side file against the memory file afterwards: every entity has
a vector of its current text, and a deleted one has none.
"""

import json
import math
import threading
import types

import pytest
from click.testing import CliRunner

from datasette_memory import Memory
from datasette_memory.cli import cli
from datasette_memory.graph.jsonl import import_lines
from datasette_memory.vectors import embedding, index
from datasette_memory.vectors.entity_texts import entity_texts
from datasette_memory.vectors.side_file import side_file

from .test_search import entity


def bulk(count, start=0):
    "``count`` entities with three observations each."
    return [
        entity(f"svc-{i:04d}", "service", f"svc-{i:04d} handles job {i}", f"owned by team {i % 7}", f"deployed in region {i % 3}")
        for i in range(start, start + count)
    ]


@pytest.mark.parametrize(
    "count,most,sizes",
    [(0, 256, []), (1, 256, [1]), (256, 256, [256]), (257, 256, [128, 129]), (600, 256, [200, 200, 200]), (10, 3, [2, 3, 2, 3])],
)
def test_batches_are_as_few_and_even_as_can_be(count, most, sizes):
    "No small batch is left at the end: the model's rate falls with the batch size."
    batches = list(index.even_batches(list(range(count)), most))
    assert [len(b) for b in batches] == sizes
    assert [i for b in batches for i in b] == list(range(count))


@pytest.mark.parametrize(
    "kind,target,leads_to,expected",
    [
        ("create_entity", "auth", None, [("p", "auth")]),
        ("rename_entity", "auth", "identity", [("p", "auth"), ("p", "identity")]),
        ("merge_entity", "auth", "identity", [("p", "auth"), ("p", "identity")]),
        ("create_relation", json.dumps(["a", "calls", "b"]), None, []),
        ("delete_relation", json.dumps(["a", "calls", "b"]), None, []),
    ],
)
def test_events_name_the_entities_whose_text_they_change(kind, target, leads_to, expected):
    assert index.named("p", kind, target, leads_to) == expected


# ---- with the extra


@pytest.fixture
def model_calls(semantic, monkeypatch):
    "The number of texts in each call the index makes into the model (which runs as usual)."
    calls = []
    embed = index.embed

    def counted(texts):
        calls.append(len(texts))
        return embed(texts)

    monkeypatch.setattr(index, "embed", counted)
    return calls


@pytest.fixture
def held(semantic, monkeypatch):
    "The index's first call into the model waits for ``held.release``; ``held.started`` is set once it is waiting."
    gate = threading.Event()
    started = threading.Event()
    embed = index.embed

    def waiting(texts):
        started.set()
        gate.wait(120)
        return embed(texts)

    monkeypatch.setattr(index, "embed", waiting)
    return types.SimpleNamespace(started=started, release=gate.set)


def assert_index_is_current(memory):
    "Every entity has one vector, of its text as stored now; nothing else has one."
    assert memory.wait_for_semantic_index(timeout=300)
    current = {e.id: e.digest for e in entity_texts(memory.conn, "1", [])}
    with side_file(memory.conn) as side:
        digests = dict(side.execute("SELECT entity_id, digest FROM entity_digests").fetchall())
        vectors = {id for (id,) in side.execute("SELECT entity_id FROM entity_vectors").fetchall()}
    assert digests == current
    assert vectors == set(current)


def test_a_catch_up_embeds_many_entities_per_call(db_path, model_calls, lexical):
    "600 entities written while nothing catches up: one catch-up embeds them in 3 calls of 200."
    memory = Memory.open(db_path, project="p")
    memory.create_entities(bulk(1))
    assert memory.wait_for_semantic_index(timeout=300)
    model_calls.clear()
    writer = Memory(memory.conn, project="p", config=lexical)  # asks for no catch-up
    for start in range(1, 601, 200):
        writer.create_entities(bulk(200, start))
    writer.create_relations([{"from": f"svc-{i:04d}", "to": "svc-0000", "relationType": "calls"} for i in range(1, 601)])
    assert index.catch_up(memory.conn) == 600
    assert model_calls == [200, 200, 200]
    assert_index_is_current(memory)
    assert index.catch_up(memory.conn) == 0 and model_calls == [200, 200, 200]  # caught up: the model is not called
    memory.close()


def test_an_interrupted_catch_up_resumes_without_embedding_twice(db_path, model_calls, lexical, monkeypatch):
    "The model fails after one call of three: the next catch-up embeds only the two calls' worth left."
    memory = Memory.open(db_path, project="p")
    memory.create_entities(bulk(1))
    assert memory.wait_for_semantic_index(timeout=300)
    through = index.pending_changes(memory.conn)
    writer = Memory(memory.conn, project="p", config=lexical)
    writer.create_entities(bulk(600, 1))
    model_calls.clear()
    counted = index.embed

    def fails_after_one_call(texts):
        if model_calls:
            raise RuntimeError("the model failed")
        return counted(texts)

    monkeypatch.setattr(index, "embed", fails_after_one_call)
    with pytest.raises(RuntimeError, match="the model failed"):
        index.catch_up(memory.conn)
    assert model_calls == [200] and index.pending_changes(memory.conn) == through + 600  # the step did not finish
    monkeypatch.setattr(index, "embed", counted)
    assert index.catch_up(memory.conn) == 400
    assert model_calls == [200, 200, 200]
    assert_index_is_current(memory)
    memory.close()


def test_a_bulk_load_embeds_each_entity_once_in_few_calls(db_path, model_calls):
    "Writes of 100 entities while the background catches up: however the catch-ups fall, no entity is embedded twice."
    memory = Memory.open(db_path, project="p")
    for start in range(0, 400, 100):
        memory.create_entities(bulk(100, start))
    assert_index_is_current(memory)
    assert sum(model_calls) == 400
    assert len(model_calls) <= 4 + math.ceil(400 / index.EMBED_BATCH)  # at most one short call per write
    memory.close()


def test_an_import_embeds_in_batches(db_path, model_calls, tmp_path):
    lines = [json.dumps({"type": "entity", **e}) for e in bulk(300)]
    lines += [json.dumps({"type": "relation", "from": f"svc-{i:04d}", "to": "svc-0000", "relationType": "calls"}) for i in range(1, 300)]
    (tmp_path / "graph.jsonl").write_text("\n".join(lines))
    result = CliRunner().invoke(cli, ["import", str(tmp_path / "graph.jsonl"), "--db", str(db_path), "--project", "p"])
    assert result.exit_code == 0, result.output
    memory = Memory.open(db_path, project="p")
    assert_index_is_current(memory)  # the command waited for the index
    assert sum(model_calls) == 300 and max(model_calls) <= index.EMBED_BATCH
    memory.close()


def test_an_entity_changed_during_a_catch_up_is_re_embedded(db_path, held):
    "The catch-up embeds the text it read; a change made while the model runs is embedded by the next one."
    memory = Memory.open(db_path, project="p")
    memory.create_entities(bulk(50))
    assert held.started.wait(120)  # the catch-up has read the 50 texts and is in the model
    memory.add_observations([{"entityName": "svc-0007", "contents": ["moved to the platform team"]}])
    memory.delete_observations([{"entityName": "svc-0009", "observations": ["owned by team 2"]}])
    held.release()
    assert_index_is_current(memory)
    with side_file(memory.conn) as side:
        embedded = dict(side.execute("SELECT name, digest FROM entity_digests").fetchall())
    changed = {e.name: e for e in entity_texts(memory.conn, "name IN ('svc-0007', 'svc-0009')", [])}
    assert "platform team" in changed["svc-0007"].text and "team 2" not in changed["svc-0009"].text
    assert all(embedded[name] == e.digest for name, e in changed.items())
    memory.close()


def test_entities_deleted_during_a_bulk_load_have_no_vectors(db_path, held):
    "Deleted while the catch-up that read them is in the model: their vectors are stored, then forgotten."
    memory = Memory.open(db_path, project="p")
    memory.create_entities(bulk(50))
    assert held.started.wait(120)
    memory.delete_entities([f"svc-{i:04d}" for i in range(0, 50, 5)])
    memory.create_entities(bulk(20, 50))
    memory.delete_entities(["svc-0060"])  # created and deleted before any catch-up read it
    held.release()
    assert_index_is_current(memory)
    with side_file(memory.conn) as side:
        names = {name for (name,) in side.execute("SELECT name FROM entity_digests")}
        assert side.execute("SELECT count(*) FROM entity_vectors").fetchone()[0] == 50 - 10 + 20 - 1
    assert names == {f"svc-{i:04d}" for i in range(70) if i % 5 or i >= 50} - {"svc-0060"}
    memory.close()


def test_relations_alone_call_no_model(db_path, model_calls):
    memory = Memory.open(db_path, project="p")
    import_lines(memory, [json.dumps({"type": "entity", **e}) for e in bulk(20)])
    assert memory.wait_for_semantic_index(timeout=300)
    model_calls.clear()
    memory.create_relations([{"from": f"svc-{i:04d}", "to": "svc-0000", "relationType": "calls"} for i in range(1, 20)])
    memory.delete_relations([{"from": "svc-0001", "to": "svc-0000", "relationType": "calls"}])
    assert memory.wait_for_semantic_index(timeout=300)
    assert model_calls == []
    assert memory.search_memory("anything").get("semantic") is None  # caught up all the same
    memory.close()


def test_embed_keeps_the_order_of_its_texts(semantic):
    "Texts go through the model longest first; each vector comes back in its text's place, as if embedded alone."
    import numpy

    texts = ["auth", "the card vault replaces card numbers with tokens before anything is stored", "Dana", "payouts run nightly"]
    texts = texts * (embedding.PASS_SIZE // 2)  # more than one pass
    together = numpy.array([numpy.frombuffer(v, dtype="float32") for v in embedding.embed(texts)])
    alone = numpy.array([numpy.frombuffer(embedding.embed([t])[0], dtype="float32") for t in texts[:4]])
    similarity = together @ alone.T
    assert list(similarity.argmax(axis=1)) == [i % 4 for i in range(len(texts))]
    assert similarity.max(axis=1).min() > 0.999  # bfloat16 passes, where the CPU has it, stay this close to float32
    assert numpy.allclose(numpy.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_renames_and_merges_are_followed_to_the_name_they_lead_to(db_path, semantic):
    "The name a rename or merge leads to is read from the event: its entity's new text is embedded, the old name forgotten."
    memory = Memory.open(db_path, project="p")
    memory.create_entities(bulk(10))
    assert memory.wait_for_semantic_index(timeout=300)
    memory.rename_entity("svc-0001", "identity-gateway")
    memory.merge_entity("svc-0002", "svc-0003")
    assert_index_is_current(memory)
    with side_file(memory.conn) as side:
        names = {name for (name,) in side.execute("SELECT name FROM entity_digests")}
    assert "identity-gateway" in names and not {"svc-0001", "svc-0002"} & names
    merged = entity_texts(memory.conn, "name = 'svc-0003'", [])[0]
    assert "svc-0002 handles job 2" in merged.text  # the digest checked above is of the merged text
    memory.close()
