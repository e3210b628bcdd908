"""Where a new user stumbled outside the pages: a status word, the stop hook, the project a session starts in, install's leftovers.

Each test is one stumble (issue 25), through the real door: the core and the
MCP tool, the hooks run as the agents run them, Datasette's forms for a
person's edits, and the install command on a home and a repository of its own.
"""

import json
import shlex

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client

from datasette_memory import Memory
from datasette_memory.cli import cli
from datasette_memory.core.hook_kinds import CHECKPOINT_REMINDER
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import issue_reviewer
from .test_hooks import PROJECT, context_of, events, hook, payload
from .test_install import EXECUTABLE, env_for, files, install, run, setting_files, write_user_settings

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def workdir(tmp_path):
    "The agent's working folder: a git repository named app."
    folder = tmp_path / PROJECT
    (folder / ".git").mkdir(parents=True)
    return folder


# list_claims(status="pending")


def claims_of_each_status(db_path) -> Memory:
    agent = Memory.open(db_path, project="p", actor="claude")
    for port in (1, 2, 3):
        agent.governed.propose_claim("auth", "port", str(port))
    agent.governed.approve_claim(issue_reviewer(), 1, "ok")
    agent.governed.reject_claim(issue_reviewer(), 2, "no")
    return agent


async def test_pending_is_the_name_people_use_for_a_candidate_claim(db_path):
    agent = claims_of_each_status(db_path)
    try:
        assert [c["id"] for c in agent.governed.list_claims("pending")] == [3]
        assert agent.governed.list_claims("pending") == agent.governed.list_claims("candidate")
    finally:
        agent.close()
    async with Client(create_server(LocalBackend(db_path, actor="claude"), project="p")) as client:
        tool = next(t for t in await client.list_tools() if t.name == "list_claims")
        assert "pending" in json.dumps(tool.input_schema["properties"]["status"])
        result = await client.call_tool("list_claims", {"status": "pending"})
        assert [c["id"] for c in json.loads(result.content[0].text)["claims"]] == [3]
        refused = await client.call_tool("list_claims", {"status": "waiting"}, raise_on_error=False)
        assert refused.is_error
    datasette = Datasette([str(db_path)])
    listed = (await datasette.client.get("/-/memory/claims.json?project=p&status=pending")).json()
    assert [c["id"] for c in listed["claims"]] == [3]
    wrong = await datasette.client.get("/-/memory/claims.json?project=p&status=waiting")
    assert wrong.status_code == 400 and "pending" in wrong.json()["error"]


# The stop hook counts the agent session's own changes


async def test_the_stop_hook_does_not_count_a_persons_edits_in_the_browser(db_path, workdir):
    agent = Memory.open(db_path, project=PROJECT, actor="claude")
    agent.create_entities([{"name": "auth", "entityType": "service", "observations": ["listens on 8443"]}])
    agent.close()
    stop = payload("claude_stop", workdir)
    hook(db_path, "session-start", payload("claude_session_start_startup", workdir, session_id=stop["session_id"]))
    # a person corrects memory in Datasette while the agent's session runs: two changes, neither the agent's
    datasette = Datasette([str(db_path)], config={"permissions": {"memory-curate": {"id": ["olive"]}}})
    await datasette.invoke_startup()
    olive = {"actor": {"id": "olive"}, "headers": SAME_SITE}
    for path, fields in (
        ("/-/memory/entity/edit-observation?project=app&name=auth", {"old": "listens on 8443", "new": "listens on 9443"}),
        ("/-/memory/entity/rename?project=app&name=auth", {"new_name": "auth-service"}),
    ):
        done = await datasette.client.post(path, data={**fields, "step": "apply"}, **olive)
        assert done.status_code == 302, done.text[:300]
    assert hook(db_path, "stop", stop).stdout == ""
    assert events(db_path, CHECKPOINT_REMINDER) == []
    # the agent's own change, over its MCP server, is counted
    async with Client(create_server(LocalBackend(db_path, actor="claude"), project=PROJECT)) as client:
        await client.call_tool("add_observations", {"observations": [{"entityName": "auth-service", "contents": ["uses RS256"]}]})
    asked = json.loads(hook(db_path, "stop", stop).stdout)
    assert asked["decision"] == "block" and "(1 change)" in asked["reason"]


# The project a session starts in, and the others


def test_session_start_names_the_project_it_chose_the_others_holding_memory_and_how_to_switch(db_path, workdir):
    for project, names in (("payments", ["auth-gateway", "ledger-db", "s3-archive"]), ("docs", ["style-guide"])):
        memory = Memory.open(db_path, project=project, actor="claude")
        memory.create_entities([{"name": name, "entityType": "thing", "observations": ["x"]} for name in names])
        memory.close()
    started = hook(db_path, "session-start", payload("claude_session_start_startup", workdir))
    text = context_of(started.stdout, "SessionStart")
    assert f'project "app", chosen by the git repository at {workdir}' in text
    assert 'Project "app" holds no memory yet' in text
    assert 'Other projects holding memory: "payments" (3 entities), "docs" (1 entity)' in text
    assert f'write project = "payments" in {workdir / ".datasette-memory"}' in text
    assert 'run datasette-memory install again with --project "payments"' in text
    (workdir / ".datasette-memory").write_text('project = "payments"\n')  # as the advice says
    switched = context_of(hook(db_path, "session-start", payload("claude_session_start_startup", workdir)).stdout, "SessionStart")
    assert f'project "payments", chosen by .datasette-memory file at {workdir / ".datasette-memory"}' in switched
    assert 'Other projects holding memory: "docs" (1 entity)' in switched
    (workdir / ".datasette-memory").unlink()
    # once the chosen project holds memory, the others are still named, without the alarm
    Memory.open(db_path, project="app", actor="claude").create_entities([{"name": "app-server", "entityType": "service", "observations": []}])
    text = context_of(hook(db_path, "session-start", payload("claude_session_start_startup", workdir)).stdout, "SessionStart")
    assert "holds no memory yet" not in text and '"payments" (3 entities)' in text


def test_session_start_in_the_only_project_says_nothing_of_others(db_path, workdir):
    Memory.open(db_path, project="app", actor="claude").create_entities([{"name": "a", "entityType": "t", "observations": []}])
    text = context_of(hook(db_path, "session-start", payload("claude_session_start_startup", workdir)).stdout, "SessionStart")
    assert "Other projects" not in text and "holds no memory yet" not in text


# install and uninstall leave the user's repository as they found it


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_install_keeps_its_backups_in_the_users_state_folder_and_uninstall_removes_the_folders_it_made(client, home, folder):
    state = home / ".local" / "state" / "datasette-memory"
    write_user_settings(client, "project", home, folder)
    before = files(folder)
    result = install(home, folder, client, "--project", "app", "--with-stop-hook")
    backups = sorted(p for p in state.rglob("*") if p.is_file())
    assert sorted(b.read_bytes() for b in backups) == sorted(before.values()), backups
    assert all(str(b) in result.output for b in backups)
    assert not [p for p in folder.rglob("*") if ".bak-" in p.name], "a backup was left in the user's repository"
    # uninstall takes install's options, so the install command undoes with one word changed
    undone = run(home, folder, "uninstall", client, "--executable", EXECUTABLE, "--project", "app", "--with-stop-hook")
    assert files(folder) == before
    assert all(str(p) in undone.output for p in sorted(state.rglob("*")) if p.is_file() and p not in backups)


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_uninstall_removes_the_folders_install_created_and_only_those(client, home, folder):
    install(home, folder, client, "--db", str(folder / "memory.db"))
    made = {setting_files(client, "project", home, folder)[1].parent}
    assert all(path.is_dir() for path in made)
    result = run(home, folder, "uninstall", client, "--db", str(folder / "memory.db"))
    assert sorted(p.name for p in folder.iterdir()) == [], result.output
    assert "removed the folder" in result.output
    # a folder that was there before the install stays, even empty
    for path in made:
        path.mkdir()
    install(home, folder, client)
    run(home, folder, "uninstall", client)
    assert all(path.is_dir() for path in made)


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_folder_install_made_keeps_what_the_user_put_in_it(client, home, folder):
    install(home, folder, client)
    settings = setting_files(client, "project", home, folder)[1]
    (settings.parent / "notes.md").write_text("mine")
    result = run(home, folder, "uninstall", client)
    assert (settings.parent / "notes.md").read_text() == "mine"
    assert "kept" in result.output


def test_install_says_where_the_backups_go(home, folder):
    write_user_settings("claude-code", "project", home, folder)
    result = install(home, folder, "claude-code")
    state = home / ".local" / "state" / "datasette-memory" / "backups"
    assert f"backup: {state}" in result.output
    assert "Undo with: " + shlex.join(["datasette-memory", "uninstall", "claude-code", "--folder", str(folder)]) in result.output


def test_install_follows_xdg_state_home(tmp_path, home, folder):
    write_user_settings("claude-code", "project", home, folder)
    state = tmp_path / "state"
    result = CliRunner().invoke(
        cli, ["install", "claude-code", "--executable", EXECUTABLE, "--folder", str(folder)],
        env={**env_for(home), "XDG_STATE_HOME": str(state)},
    )
    assert result.exit_code == 0, result.output
    assert len([p for p in (state / "datasette-memory" / "backups").rglob("*") if p.is_file()]) == 2


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
