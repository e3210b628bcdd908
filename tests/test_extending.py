"""The extension points (docs/extending.md), through the example plugin in tests/example_plugin/.

The example is a real distribution: its ``dist-info`` names its module in the
``datasette_memory`` entry-point group, so putting its folder on the path is
installing it, and the plugin manager finds it as it finds any installed
plugin, in process (``load_setuptools_entrypoints``) and in a subprocess
(``PYTHONPATH``). Each hook is used through a real door: the MCP tools, a
person's form in Datasette, the ``install`` command, the core's writes.
"""

import importlib.metadata
import json
import logging
import os
import pathlib
import subprocess
import sys
from urllib.parse import quote, urlencode

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.exceptions import ToolError

from datasette_memory import InvalidInput, Memory, hookimpl
from datasette_memory.cli import cli
from datasette_memory.clients import agent_clients
from datasette_memory.core import plugins
from datasette_memory.core.database import rehearsal, write_transaction
from datasette_memory.core.ledger import Caller, append_event
from datasette_memory.vectors import embedding
from datasette_memory.vectors.entity_texts import EntityText
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

EXAMPLE = pathlib.Path(__file__).parent / "example_plugin"
ACME_KEY = "acme_live_" + "Q7xK2mP9vR4tW8yB3nD6fH1j"
SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def acme(monkeypatch):
    "The example plugin installed: its folder on the path, loaded from its entry point as any installed plugin is."
    monkeypatch.syspath_prepend(str(EXAMPLE))
    importlib.invalidate_caches()
    manager = plugins.plugin_manager()
    manager.load_setuptools_entrypoints(plugins.ENTRY_POINT_GROUP)
    module = manager.get_plugin("acme")
    assert module is not None, "the example plugin's entry point was not found"
    yield module
    manager.unregister(name="acme")


def subprocess_env(**extra) -> dict:
    "The environment of a subprocess that has the example plugin installed."
    path = os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, "DATASETTE_MEMORY_NO_VECTORS": "1", **extra}


def test_the_example_is_loaded_from_a_real_entry_point(acme):
    distribution = importlib.metadata.distribution("datasette-memory-acme")
    [entry_point] = distribution.entry_points.select(group="datasette_memory")
    assert (entry_point.name, entry_point.value) == ("acme", "datasette_memory_acme")
    hooks = {hook.name for hook in plugins.plugin_manager().get_hookcallers(acme)}
    assert hooks == {"register_secret_patterns", "register_agent_clients", "memory_event"}
    assert pathlib.Path(acme.__file__).parent == EXAMPLE


def test_the_built_in_behaviour_is_the_default_implementation_of_each_hook():
    assert {"claude-code", "codex"} <= set(agent_clients())
    assert isinstance(embedding.chosen_model(), embedding.SentenceTransformersModel)
    manager = plugins.plugin_manager()
    for hook, names in plugins.DEFAULT_PLUGINS.items():
        for name in names:
            assert {caller.name for caller in manager.get_hookcallers(manager.get_plugin(name))} == {hook}, name


# ---------------------------------------------------------------- register_secret_patterns


def test_a_plugins_pattern_refuses_a_write_the_built_in_ones_let_through(acme, db_path):
    memory = Memory.open(db_path, project="p", actor="agent")
    with pytest.raises(InvalidInput, match=r"observations\[0\]\.contents\[0\]: looks like a credential \(Acme API key\)"):
        memory.add_observations([{"entityName": "billing", "contents": [f"the key is {ACME_KEY}"]}])
    memory.create_entities([{"name": "billing", "entityType": "service", "observations": ["acme_live_ keys start so"]}])
    assert ACME_KEY not in db_path.read_bytes().decode("latin-1")
    memory.close()


def test_without_the_plugin_the_same_text_is_stored(db_path):
    "The control: the built-in patterns do not know Acme's keys, so the plugin's pattern is what refused it."
    memory = Memory.open(db_path, project="p", actor="agent")
    memory.create_entities([{"name": "billing", "entityType": "service", "observations": [f"the key is {ACME_KEY}"]}])
    memory.close()


async def test_a_plugins_pattern_refuses_a_write_through_mcp(acme, db_path):
    async with Client(create_server(LocalBackend(db_path, actor="claude"))) as client:
        with pytest.raises(ToolError, match=r"looks like a credential \(Acme API key\)"):
            await client.call_tool("create_entities", {"entities": [
                {"name": "billing", "entityType": "service", "observations": [f"key {ACME_KEY}"]}]})
        await client.call_tool("create_entities", {"entities": [
            {"name": "billing", "entityType": "service", "observations": ["keys are in the vault"]}]})
        graph = (await client.call_tool("read_graph", {})).content[0].text
    assert "keys are in the vault" in graph and ACME_KEY not in graph


async def test_a_plugins_pattern_refuses_a_write_over_stdio_and_its_events_are_announced(tmp_path):
    "A real MCP server process with the example installed: the key refused, the ordinary write announced once."
    from fastmcp.client.transports import StdioTransport

    events_file, path = tmp_path / "events.jsonl", tmp_path / "memory.db"
    env = subprocess_env(ACME_EVENTS_FILE=str(events_file))
    env["PYTHONPATH"] = os.pathsep.join([str(EXAMPLE), *sys.path])
    transport = StdioTransport(sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(path)], env=env, keep_alive=False)
    async with Client(transport) as client:
        with pytest.raises(ToolError, match=r"looks like a credential \(Acme API key\)"):
            await client.call_tool("create_entities", {"entities": [
                {"name": "billing", "entityType": "service", "observations": [f"key {ACME_KEY}"]}]})
        await client.call_tool("create_entities", {"entities": [
            {"name": "billing", "entityType": "service", "observations": ["keys are in the vault"]}]})
    written = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert [(e["id"], e["kind"], e["hash"]) for e in written] == [(r["id"], r["kind"], r["hash"]) for r in ledger(path)]
    assert ACME_KEY not in path.read_bytes().decode("latin-1")


def entity_page(name, page="/-/memory/entity", project="p"):
    return f"{page}?{urlencode({'project': project, 'name': name}, quote_via=quote)}"


async def test_a_plugins_pattern_refuses_a_persons_edit_on_a_page(acme, tmp_path):
    "Plain datasette, a curator granted by its configuration: the edit form refuses the key and keeps the observation."
    path = tmp_path / "team.db"
    memory = Memory.open(path, project="p", actor="agent")
    memory.create_entities([{"name": "billing", "entityType": "service", "observations": ["keys are in the vault"]}])
    memory.close()
    datasette = Datasette([str(path)], config={"permissions": {"memory-curate": {"id": "carol"}}})
    refused = await datasette.client.post(
        entity_page("billing", page="/-/memory/entity/edit-observation"),
        data={"old": "keys are in the vault", "new": f"key {ACME_KEY}", "step": "apply"},
        actor={"id": "carol"}, headers=SAME_SITE, follow_redirects=True,
    )
    assert refused.status_code == 400 and "looks like a credential (Acme API key)" in refused.text
    page = (await datasette.client.get(entity_page("billing", page="/-/memory/entity.json"))).json()
    assert [o["content"] for o in page["observations"]] == ["keys are in the vault"]
    accepted = await datasette.client.post(
        entity_page("billing", page="/-/memory/entity/edit-observation"),
        data={"old": "keys are in the vault", "new": "keys are in the vault, rotated monthly", "step": "apply"},
        actor={"id": "carol"}, headers=SAME_SITE,
    )
    assert accepted.status_code == 302
    page = (await datasette.client.get(entity_page("billing", page="/-/memory/entity.json"))).json()
    assert [o["content"] for o in page["observations"]] == ["keys are in the vault, rotated monthly"]


def test_a_pattern_registered_with_a_bad_kind_is_named():
    class BadPattern:
        @hookimpl
        def register_secret_patterns(self, register):
            register("", "x")

    manager = plugins.plugin_manager()
    manager.register(BadPattern(), "bad-pattern")
    try:
        with pytest.raises(ValueError, match="register_secret_patterns: kind must be a name"):
            plugins.secret_patterns()
    finally:
        manager.unregister(name="bad-pattern")
    assert plugins.secret_patterns() == ()


# ---------------------------------------------------------------- register_agent_clients


def test_install_and_uninstall_the_example_client(acme, tmp_path):
    runner = CliRunner()
    installed = runner.invoke(cli, ["install", "acme-agent", "--folder", str(tmp_path), "--executable", "/opt/bin/datasette-memory"],
                              env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert installed.exit_code == 0, installed.output
    assert installed.output.startswith(f"Acme Agent, project scope ({tmp_path})")
    assert "Restart Acme Agent to pick this up." in installed.output
    assert "Undo with: datasette-memory uninstall acme-agent --folder" in installed.output
    settings = json.loads((tmp_path / ".acme" / "mcp.json").read_text())
    assert settings["mcpServers"]["memory"]["command"] == "/opt/bin/datasette-memory"
    again = runner.invoke(cli, ["install", "acme-agent", "--folder", str(tmp_path), "--executable", "/opt/bin/datasette-memory"],
                          env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert "mcp.json: unchanged" in again.output
    removed = runner.invoke(cli, ["uninstall", "acme-agent", "--folder", str(tmp_path)], env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert removed.exit_code == 0, removed.output
    assert not (tmp_path / ".acme").exists()


def test_install_names_every_client_it_knows_when_given_another(acme, tmp_path):
    result = CliRunner().invoke(cli, ["install", "acme", "--folder", str(tmp_path)])
    assert result.exit_code == 2
    assert "'acme' is not a client datasette-memory knows; use one of: acme-agent, claude-code, codex" in result.output
    assert list(tmp_path.iterdir()) == []


def test_install_with_the_example_installed_in_a_subprocess(tmp_path):
    "A real process: the plugin is found from its entry point on PYTHONPATH, as pip would have installed it."
    env = subprocess_env(XDG_STATE_HOME=str(tmp_path / "state"))
    command = [sys.executable, "-m", "datasette_memory", "install", "acme-agent", "--folder", str(tmp_path), "--executable", "/opt/bin/datasette-memory"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / ".acme" / "mcp.json").read_text())["mcpServers"]["memory"]["args"][0] == "mcp"
    without = subprocess.run(command, env={**env, "PYTHONPATH": ""}, capture_output=True, text=True, timeout=120)
    assert without.returncode == 2 and "use one of: claude-code, codex" in without.stderr


def test_a_client_named_twice_is_refused():
    from datasette_memory.clients import AgentClient

    class Impostor:
        @hookimpl
        def register_agent_clients(self, register):
            register(AgentClient("codex", "Not Codex", lambda r, p: [], lambda n, p: []))

    manager = plugins.plugin_manager()
    manager.register(Impostor(), "impostor")
    try:
        with pytest.raises(ValueError, match="two plugins register a client named 'codex'"):
            agent_clients()
    finally:
        manager.unregister(name="impostor")
    with pytest.raises(ValueError, match="use letters, digits and - only"):
        AgentClient("acme agent", "Acme", lambda r, p: [], lambda n, p: [])


# ---------------------------------------------------------------- memory_event


def ledger(db_path):
    memory = Memory.open(db_path)
    try:
        rows = memory.conn.execute("SELECT id, kind, target, hash FROM events ORDER BY id").fetchall()
        return [dict(zip(("id", "kind", "target", "hash"), row)) for row in rows]
    finally:
        memory.close()


def test_memory_event_fires_once_per_committed_event_with_the_event(recorder, db_path):
    memory = Memory.open(db_path, project="p", actor="agent", session="s1")
    memory.create_entities([{"name": "a", "entityType": "service", "observations": ["one", "two"]},
                            {"name": "b", "entityType": "service", "observations": []}])
    memory.create_relations([{"from": "a", "to": "b", "relationType": "calls"}])
    memory.delete_entities(["b"])
    memory.close()
    seen = [{k: e[k] for k in ("id", "kind", "target", "hash")} for e in recorder.events]
    assert seen == ledger(db_path) and len(seen) >= 4
    first = recorder.events[0]
    assert (first["actor"], first["session"], first["project"], first["kind"]) == ("agent", "s1", "p", "create_entity")
    assert json.loads(first["new"])["name"] == "a"


def test_memory_event_never_fires_for_a_rolled_back_event(recorder, db_path):
    memory = Memory.open(db_path, project="p", actor="agent")
    memory.create_entities([{"name": "a", "entityType": "service", "observations": []}])
    committed = len(recorder.events)
    with pytest.raises(InvalidInput):
        memory.create_entities([{"name": "c", "entityType": "service", "observations": []}, {"name": "d", "entityType": "service",
                                "observations": ["token ghp_" + "a" * 36]}])
    caller = Caller("agent")
    with pytest.raises(RuntimeError):
        with write_transaction(memory.conn):
            append_event(memory.conn, caller, "p", "note", "p", new="never kept")
            raise RuntimeError("a failure after the event was appended")
    with rehearsal(memory.conn):
        append_event(memory.conn, caller, "p", "note", "p", new="only rehearsed")
    with write_transaction(memory.conn):
        append_event(memory.conn, caller, "p", "note", "p", new="kept")
        with pytest.raises(RuntimeError):
            with write_transaction(memory.conn):  # a savepoint, rolled back alone
                append_event(memory.conn, caller, "p", "note", "p", new="rolled back to the savepoint")
                raise RuntimeError("inner")
    memory.close()
    assert [json.loads(e["new"]) for e in recorder.events[committed:]] == ["kept"]
    assert [e["id"] for e in recorder.events] == [row["id"] for row in ledger(db_path)]


class Failing:
    @hookimpl
    def memory_event(self, event):
        raise ConnectionError("the notification service is down")


def test_a_failing_memory_event_never_loses_or_blocks_a_write(recorder, db_path, caplog):
    manager = plugins.plugin_manager()
    manager.register(Failing(), "failing-notifier")
    try:
        memory = Memory.open(db_path, project="p", actor="agent")
        with caplog.at_level(logging.ERROR, logger="datasette_memory.plugins"):
            result = memory.create_entities([{"name": "a", "entityType": "service", "observations": ["kept"]}])
        memory.close()
    finally:
        manager.unregister(name="failing-notifier")
    assert [e["name"] for e in result] == ["a"]  # the caller got its result
    assert [row["kind"] for row in ledger(db_path)] == ["create_entity"]  # committed
    assert [e["kind"] for e in recorder.events] == ["create_entity"]  # the other plugin still heard of it
    [record] = caplog.records
    assert "plugin failing-notifier failed in memory_event for event 1 (create_entity); the event is committed" in record.getMessage()
    assert "the notification service is down" in caplog.text  # the traceback


async def test_memory_event_fires_for_writes_through_mcp_and_a_page(acme, tmp_path, monkeypatch):
    "The example plugin's own hook, its events file set: every door's commits, once each."
    events_file = tmp_path / "events.jsonl"
    monkeypatch.setenv("ACME_EVENTS_FILE", str(events_file))
    path = tmp_path / "team.db"
    async with Client(create_server(LocalBackend(path, actor="claude"))) as client:
        await client.call_tool("create_entities", {"entities": [{"name": "billing", "entityType": "service", "observations": ["v1"]}]})
    datasette = Datasette([str(path)], config={"permissions": {"memory-curate": {"id": "carol"}}})
    edit = await datasette.client.post(entity_page("billing", page="/-/memory/entity/edit-observation", project="default"),
                                       data={"old": "v1", "new": "v2", "step": "apply"}, actor={"id": "carol"}, headers=SAME_SITE)
    assert edit.status_code == 302
    written = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert [(e["id"], e["kind"]) for e in written] == [(row["id"], row["kind"]) for row in ledger(path)]
    assert [e["kind"] for e in written] == ["create_entity", "update_observation"]


def test_memory_event_fires_in_a_subprocess_from_the_entry_point(tmp_path):
    events_file = tmp_path / "events.jsonl"
    script = (
        "from datasette_memory import Memory\n"
        f"m = Memory.open({str(tmp_path / 'm.db')!r}, project='p', actor='agent')\n"
        "m.create_entities([{'name': 'a', 'entityType': 'x', 'observations': ['o']}])\n"
        "m.close()\n"
    )
    result = subprocess.run([sys.executable, "-c", script], env=subprocess_env(ACME_EVENTS_FILE=str(events_file)),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line)["kind"] for line in events_file.read_text().splitlines()] == ["create_entity"]


# ---------------------------------------------------------------- embedding_model


@pytest.fixture
def hashing_model(acme):
    manager = plugins.plugin_manager()
    manager.register(acme.AcmeEmbeddings(), "acme-embeddings")
    yield acme.HashingModel
    manager.unregister(name="acme-embeddings")


def test_a_plugins_model_replaces_the_default(hashing_model):
    model = embedding.chosen_model()
    assert isinstance(model, hashing_model) and model.model_id == "acme/hashing-64"
    [vector] = embedding.embed(["card tokens"])
    assert vector == hashing_model().embed(["card tokens"])[0] and len(vector) == 4 * 64


def test_a_vector_of_one_model_never_passes_for_anothers(acme):
    "An entity's digest names the model: vectors made by the default are stale once a plugin's model is chosen."
    text = EntityText(1, "p", "card-vault", "card-vault (service): stores card tokens")
    by_default = text.digest
    manager = plugins.plugin_manager()
    manager.register(acme.AcmeEmbeddings(), "acme-embeddings")
    try:
        by_plugin = text.digest
    finally:
        manager.unregister(name="acme-embeddings")
    assert by_plugin != by_default and text.digest == by_default


def test_the_semantic_arm_embeds_with_a_plugins_model(hashing_model, db_path, semantic):
    "With the extra: the side file is made for the plugin's dimensions, and every vector comes from its model."
    from datasette_memory.vectors import nearest
    from datasette_memory.vectors.side_file import side_file

    memory = Memory.open(db_path, project="p", actor="agent")
    memory.create_entities([{"name": "card-vault", "entityType": "service", "observations": ["stores card tokens"]},
                            {"name": "payouts", "entityType": "service", "observations": ["pays shops weekly"]}])
    assert memory.wait_for_semantic_index(timeout=120)
    with side_file(memory.conn) as side:
        digests = dict(side.execute("SELECT name, digest FROM entity_digests").fetchall())
        [(schema,)] = side.execute("SELECT sql FROM sqlite_master WHERE name = 'entity_vectors'").fetchall()
    assert "FLOAT[64]" in schema
    expected = EntityText(0, "p", "card-vault", "card-vault (service): stores card tokens").digest
    assert digests["card-vault"] == expected
    found = nearest.similar(memory.conn, "p", "card-vault (service): stores card tokens")
    card_vault = memory.conn.execute("SELECT id FROM entities WHERE name = 'card-vault'").fetchone()[0]
    assert found is not None and found.ranked[0][0] == card_vault and found.ranked[0][1] > 0.999
    memory.close()


def test_every_hook_is_documented_with_the_example_that_uses_it():
    from datasette_memory.core import hookspecs

    names = [name for name, value in vars(hookspecs).items() if getattr(value, "datasette_memory_spec", None) is not None]
    assert sorted(names) == ["embedding_model", "memory_event", "register_agent_clients", "register_secret_patterns"]
    docs = (pathlib.Path(__file__).parent.parent / "docs" / "extending.md").read_text()
    example = (EXAMPLE / "datasette_memory_acme.py").read_text()
    for name in names:
        assert f"## `{name}(" in docs, name
        assert f"def {name}(" in example, name
