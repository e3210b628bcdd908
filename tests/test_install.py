"""``install`` and ``uninstall``: our entries go into Claude Code's and Codex's settings, and come out again, and nothing else moves.

Each test has a home folder and a project folder of its own in tmp_path, with
settings files as a user would have them (other MCP servers, other hooks on the
same events, comments and other tables in config.toml), and runs the real
command through click's CliRunner (one test, the installed executable in a
subprocess).
"""

import json
import os
import pathlib
import shlex
import subprocess
import sys
import tomllib

import pytest
from click.testing import CliRunner

from datasette_memory.cli import cli
from datasette_memory.clients import Registration, claude_code
from datasette_memory.clients.claude_code import server_entry
from datasette_memory.clients.registration import HOOK_SUBCOMMANDS

EXECUTABLE = "/opt/datasette memory/bin/datasette-memory"  # a space, so quoting is tested too
PLUGIN = pathlib.Path(__file__).parent.parent / "claude-plugin"

CLAUDE_SETTINGS = """{
  "permissions": {
    "allow": ["Bash(npm run test:*)"]
  },
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [{"type": "command", "command": "echo 'hello from my own hook'"}]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "/usr/local/bin/check-bash", "timeout": 5}]
      }
    ]
  },
  "model": "sonnet"
}
"""
MCP_JSON = """{
  "mcpServers": {
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    }
  }
}
"""
CLAUDE_JSON = json.dumps({
    "numStartups": 12,
    "theme": "dark",
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}}},
    "mcpServers": {"sqlite": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite"]}},
    "userID": "ab12",
}, indent=2)  # no final newline, as Claude Code writes it
CODEX_CONFIG = """# My Codex settings
model = "gpt-5"  # the default
approval_policy = "on-request"

[features]
web_search_request = true

# docs for the team
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.docs.env]
DOCS_TOKEN_FILE = "~/.docs-token"

[profiles.fast]
model = "o4-mini"
"""
CODEX_HOOKS = """{
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup|resume",
        "hooks": [{"type": "command", "command": "sh .codex/hooks/session-start.sh", "statusMessage": "Loading"}]
      }
    ]
  }
}
"""


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


def env_for(home):
    "A user whose home is ``home``: nothing of the real user's settings can be read or written."
    return {"HOME": str(home), "CODEX_HOME": None, "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state")}


def run(home, folder, *args, ok=True):
    result = CliRunner().invoke(cli, [*args, "--folder", str(folder)], env=env_for(home))
    assert (result.exit_code == 0) == ok, result.output
    return result


def install(home, folder, client, *args, ok=True):
    return run(home, folder, "install", client, "--executable", EXECUTABLE, *args, ok=ok)


def files(*roots):
    "Every file under the roots, with its bytes: what a run wrote, backups included."
    return {p: p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def setting_files(client, scope, home, folder):
    "The files a client's install writes at a scope."
    if client == "claude-code":
        return [folder / ".mcp.json", folder / ".claude" / "settings.json"] if scope == "project" else [
            home / ".claude.json", home / ".claude" / "settings.json"]
    base = folder / ".codex" if scope == "project" else home / ".codex"
    return [base / "config.toml", base / "hooks.json"]


def write_user_settings(client, scope, home, folder):
    "The settings a user had before installing: the other servers and hooks that must survive."
    texts = [MCP_JSON if scope == "project" else CLAUDE_JSON, CLAUDE_SETTINGS] if client == "claude-code" else [
        CODEX_CONFIG, CODEX_HOOKS]
    originals = {}
    for path, text in zip(setting_files(client, scope, home, folder), texts):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        originals[path] = text.encode()
    return originals


def servers_and_hooks(client, scope, home, folder):
    "The MCP servers and the hooks a client would read after the run."
    servers_file, hooks_file = setting_files(client, scope, home, folder)
    if client == "claude-code":
        servers = json.loads(servers_file.read_text()).get("mcpServers", {})
    else:
        servers = tomllib.loads(servers_file.read_text()).get("mcp_servers", {})
    return servers, json.loads(hooks_file.read_text())["hooks"]


def our_commands(hooks):
    return {event: [h["command"] for g in groups for h in g["hooks"] if "datasette-memory" in h["command"]]
            for event, groups in hooks.items()}


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_install_keeps_the_users_settings_and_uninstall_gives_them_back(client, scope, home, folder):
    originals = write_user_settings(client, scope, home, folder)
    result = install(home, folder, client, "--scope", scope, "--project", "my-app")
    servers, hooks = servers_and_hooks(client, scope, home, folder)

    assert servers["memory"]["command"] == EXECUTABLE
    assert servers["memory"]["args"] == ["mcp", "--project", "my-app"]
    quoted = shlex.quote(EXECUTABLE)
    assert our_commands(hooks) == {
        "SessionStart": [f"{quoted} hook session-start --project my-app"],
        "UserPromptSubmit": [f"{quoted} hook prompt --project my-app"],
        "PostToolUse": [f"{quoted} hook tool --project my-app"],
        # Claude Code sends a failed tool call as an event of its own; Codex has no such event
        **({"PostToolUseFailure": [f"{quoted} hook tool --project my-app"], "PreToolUse": []} if client == "claude-code" else {}),
    }
    # the user's own servers and hooks, the same event's included, are where they were
    if client == "claude-code":
        assert set(servers) == {"github" if scope == "project" else "sqlite", "memory"}
        assert hooks["SessionStart"][0] == json.loads(CLAUDE_SETTINGS)["hooks"]["SessionStart"][0]
        assert hooks["PreToolUse"] == json.loads(CLAUDE_SETTINGS)["hooks"]["PreToolUse"]
        settings = json.loads(setting_files(client, scope, home, folder)[1].read_text())
        assert (settings["permissions"], settings["model"]) == ({"allow": ["Bash(npm run test:*)"]}, "sonnet")
        if scope == "user":
            state = json.loads((home / ".claude.json").read_text())
            assert {key: state[key] for key in ("numStartups", "theme", "projects", "userID")} == {
                key: json.loads(CLAUDE_JSON)[key] for key in ("numStartups", "theme", "projects", "userID")}
    else:
        config_text = setting_files(client, scope, home, folder)[0].read_text()
        config = tomllib.loads(config_text)
        assert config["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "docs-mcp"],
                                                 "env": {"DOCS_TOKEN_FILE": "~/.docs-token"}}
        assert config["features"] == {"web_search_request": True, "codex_hooks": True}
        assert (config["model"], config["profiles"]) == ("gpt-5", {"fast": {"model": "o4-mini"}})
        assert "# My Codex settings" in config_text and "# docs for the team" in config_text
        assert hooks["SessionStart"][0] == json.loads(CODEX_HOOKS)["hooks"]["SessionStart"][0]
    # each file written is named, with its backup (in the user's state folder), which holds the file as it was
    for path, original in originals.items():
        assert str(path) in result.output
        backups = list((home / ".local" / "state" / "datasette-memory" / "backups").glob(f"*/{path.relative_to(path.anchor)}"))
        assert [b.read_bytes() for b in backups] == [original]
        assert f"(backup: {backups[0]})" in result.output

    before_second = files(home, folder)
    second = install(home, folder, client, "--scope", scope, "--project", "my-app")
    assert files(home, folder) == before_second, "a second install changed a file or made a backup"
    assert second.output.count("unchanged") == 2

    run(home, folder, "uninstall", client, "--scope", scope)
    for path, original in originals.items():
        assert path.read_bytes() == original


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_uninstall_removes_the_files_install_created(client, home, folder):
    install(home, folder, client, "--with-stop-hook")
    created = setting_files(client, "project", home, folder)
    assert all(path.exists() for path in created)
    result = run(home, folder, "uninstall", client)
    assert "removed, nothing else was in it" in result.output
    assert not any(path.exists() for path in created)
    assert run(home, folder, "uninstall", client).output.count("unchanged") == 2


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_the_stop_hook_only_when_asked_for(client, home, folder):
    install(home, folder, client)
    assert "Stop" not in servers_and_hooks(client, "project", home, folder)[1]
    install(home, folder, client, "--with-stop-hook")
    assert our_commands(servers_and_hooks(client, "project", home, folder)[1])["Stop"] == [
        f"{shlex.quote(EXECUTABLE)} hook stop"]
    result = install(home, folder, client)
    assert "- removed Stop hook" in result.output
    assert "Stop" not in servers_and_hooks(client, "project", home, folder)[1]


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_installing_again_with_other_options_updates_ours_in_place(client, home, folder):
    write_user_settings(client, "project", home, folder)
    install(home, folder, client, "--project", "one")
    result = install(home, folder, client, "--project", "two", "--db", "team.db")
    assert "~ updated MCP server" in result.output and "~ updated SessionStart hook" in result.output
    servers, hooks = servers_and_hooks(client, "project", home, folder)
    db = str(pathlib.Path("team.db").absolute())  # a relative --db is made absolute: clients run hooks elsewhere
    assert servers["memory"]["args"] == ["mcp", "--db", db, "--project", "two"]
    assert our_commands(hooks)["SessionStart"] == [shlex.join([EXECUTABLE, "hook", "session-start", "--db", db, "--project", "two"])]
    assert len(hooks["SessionStart"]) == 2  # the user's group and ours


def test_a_hook_of_ours_the_user_moved_and_gave_a_timeout_keeps_both(home, folder):
    install(home, folder, "claude-code")
    settings_file = folder / ".claude" / "settings.json"
    settings = json.loads(settings_file.read_text())
    ours = settings["hooks"]["SessionStart"][0]["hooks"][0]
    ours["timeout"] = 30
    settings["hooks"]["SessionStart"].insert(0, {"matcher": "startup", "hooks": [{"type": "command", "command": "date"}]})
    settings_file.write_text(json.dumps(settings, indent=2))
    install(home, folder, "claude-code", "--project", "p")
    groups = json.loads(settings_file.read_text())["hooks"]["SessionStart"]
    assert groups[0]["hooks"] == [{"type": "command", "command": "date"}]
    assert groups[1]["hooks"] == [{"type": "command", "command": f"{shlex.quote(EXECUTABLE)} hook session-start --project p",
                                   "timeout": 30}]


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_dry_run_writes_nothing_and_shows_the_change(client, home, folder):
    write_user_settings(client, "project", home, folder)
    before = files(home, folder)
    result = install(home, folder, client, "--dry-run")
    assert files(home, folder) == before
    assert "dry run, nothing written" in result.output
    assert "hook session-start" in result.output and "+++" in result.output
    install(home, folder, client)
    before = files(home, folder)
    result = run(home, folder, "uninstall", client, "--dry-run")
    assert files(home, folder) == before
    assert "- removed MCP server" in result.output


@pytest.mark.parametrize("client, path, text, message", [
    ("claude-code", ".claude/settings.json", '{"hooks": {"SessionStart": [}', "is not valid JSON (line 1, column 29"),
    ("claude-code", ".claude/settings.json", '{"hooks": ["SessionStart"]}', '"hooks" should be an object'),
    ("claude-code", ".claude/settings.json", '{"hooks": {"SessionStart": {}}}', '"hooks.SessionStart" should be a list'),
    ("claude-code", ".claude/settings.json", "[1, 2]", "holds a JSON list, not an object"),
    ("claude-code", ".mcp.json", '{"mcpServers": "none"}', '"mcpServers" should be an object'),
    ("codex", ".codex/config.toml", 'model = "gpt-5\n', "is not valid TOML"),
    ("codex", ".codex/config.toml", 'mcp_servers = { docs = { command = "npx" } }\n', "make that change by hand"),
    ("codex", ".codex/hooks.json", "{,}", "is not valid JSON"),
])
def test_malformed_settings_are_refused_and_nothing_is_written(client, path, text, message, home, folder):
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text(text)
    before = files(home, folder)
    result = install(home, folder, client, ok=False)
    assert message in result.output and str(folder / path) in result.output
    assert "Nothing was written" in result.output or "nothing was written" in result.output
    assert files(home, folder) == before  # not the broken file, nor the client's other file


@pytest.mark.parametrize("client, path, text", [
    ("claude-code", ".mcp.json", '{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}'),
    ("codex", ".codex/config.toml", '[mcp_servers.memory]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-memory"]\n'),
])
def test_another_server_with_our_name_is_left_alone(client, path, text, home, folder):
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text(text)
    result = install(home, folder, client, ok=False)
    assert 'already has an MCP server named "memory"' in result.output and "--name" in result.output
    assert (folder / path).read_text() == text
    install(home, folder, client, "--name", "datasette_memory")
    servers = servers_and_hooks(client, "project", home, folder)[0]
    assert servers["memory"]["command"] == "npx" and servers["datasette_memory"]["command"] == EXECUTABLE
    run(home, folder, "uninstall", client)  # without --name: our hooks go, but our server is not "memory", and "memory" is not ours
    assert (folder / path).read_text() != text
    run(home, folder, "uninstall", client, "--name", "datasette_memory")
    assert (folder / path).read_text() == text


def test_a_server_name_must_be_plain(home, folder):
    result = install(home, folder, "codex", "--name", "my memory", ok=False)
    assert "letters, digits, _ and - only" in result.output
    assert files(home, folder) == {}


def test_codex_hooks_turned_off_by_the_user_stay_off_with_a_warning(home, folder):
    config = folder / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("[features]\nhooks = false\n")
    result = install(home, folder, "codex")
    assert "! [features] hooks = false" in result.output
    assert tomllib.loads(config.read_text())["features"] == {"hooks": False}
    run(home, folder, "uninstall", "codex")
    assert config.read_text() == "[features]\nhooks = false\n"


def test_codex_user_scope_follows_codex_home(tmp_path, home, folder):
    codex_home = tmp_path / "codex-home"
    result = CliRunner().invoke(cli, ["install", "codex", "--scope", "user", "--executable", EXECUTABLE],
                                env={**env_for(home), "CODEX_HOME": str(codex_home)})
    assert result.exit_code == 0, result.output
    assert (codex_home / "config.toml").exists() and (codex_home / "hooks.json").exists()
    assert not (home / ".codex").exists()


def test_a_symlinked_settings_file_stays_a_link(tmp_path, home, folder):
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(CLAUDE_SETTINGS)
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").symlink_to(dotfiles)
    install(home, folder, "claude-code", "--scope", "user")
    assert (home / ".claude" / "settings.json").is_symlink()
    assert "hook session-start" in dotfiles.read_text()
    run(home, folder, "uninstall", "claude-code", "--scope", "user")
    assert (home / ".claude" / "settings.json").is_symlink() and dotfiles.read_text() == CLAUDE_SETTINGS


def test_the_installed_command_registers_its_own_absolute_path(home, folder):
    "A real subprocess: the client is given this executable's path, so it needs no virtualenv on its PATH."
    executable = pathlib.Path(sys.executable).parent / "datasette-memory"
    env = {**os.environ, **{k: v for k, v in env_for(home).items() if v}, "PATH": "/usr/bin:/bin"}
    env.pop("CODEX_HOME", None)
    subprocess.run([str(executable), "install", "claude-code"], cwd=folder, env=env, check=True, capture_output=True)
    server = json.loads((folder / ".mcp.json").read_text())["mcpServers"]["memory"]
    assert server["command"] == os.path.abspath(executable)
    hooks = json.loads((folder / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == f"{shlex.quote(os.path.abspath(executable))} hook prompt"


def read_plugin(path):
    return json.loads((PLUGIN / path).read_text())


def test_the_claude_code_plugin_matches_what_install_writes():
    "The plugin runs datasette-memory from PATH; otherwise its server and hooks are install's, Stop (opt-in) left out."
    manifest = read_plugin(".claude-plugin/plugin.json")
    assert manifest["name"] == "datasette-memory"
    marketplace = read_plugin(".claude-plugin/marketplace.json")
    assert [(p["name"], p["source"]) for p in marketplace["plugins"]] == [("datasette-memory", "./")]
    on_path = Registration(executable="datasette-memory")
    assert read_plugin(".mcp.json") == {"mcpServers": {"memory": server_entry(on_path)}}
    hooks = read_plugin("hooks/hooks.json")["hooks"]
    assert {event: [h["command"] for g in groups for h in g["hooks"]] for event, groups in hooks.items()} == {
        event: [command] for event, command in on_path.hook_commands(claude_code.HOOK_EVENTS).items()}


def test_the_plugin_and_install_name_only_hook_commands_that_exist():
    hook = cli.commands["hook"]
    commands = read_plugin("hooks/hooks.json")["hooks"]
    named = {shlex.split(h["command"])[2] for groups in commands.values() for g in groups for h in g["hooks"]}
    assert named | set(HOOK_SUBCOMMANDS.values()) <= set(hook.commands)


def test_a_private_settings_file_stays_private(home, folder):
    "~/.claude.json holds Claude Code's sign-in: readable by its owner only, before and after."
    state = home / ".claude.json"
    state.write_text(CLAUDE_JSON)
    state.chmod(0o600)
    install(home, folder, "claude-code", "--scope", "user")
    assert state.stat().st_mode & 0o777 == 0o600


def test_keys_the_user_added_to_our_codex_server_survive_an_update(home, folder):
    install(home, folder, "codex", "--project", "one")
    config = folder / ".codex" / "config.toml"
    config.write_text(config.read_text().replace('args = ["mcp", "--project", "one"]\n',
                                                 'args = ["mcp", "--project", "one"]\nstartup_timeout_sec = 30\n'))
    install(home, folder, "codex", "--project", "two")
    assert tomllib.loads(config.read_text())["mcp_servers"]["memory"] == {
        "command": EXECUTABLE, "args": ["mcp", "--project", "two"], "startup_timeout_sec": 30}
    run(home, folder, "uninstall", "codex")
    assert not config.exists()


def test_keys_the_user_added_to_our_claude_code_server_survive_an_update(home, folder):
    install(home, folder, "claude-code", "--project", "one")
    servers_file = folder / ".mcp.json"
    settings = json.loads(servers_file.read_text())
    settings["mcpServers"]["memory"]["env"] = {"DATASETTE_MEMORY_NO_VECTORS": "1"}
    servers_file.write_text(json.dumps(settings, indent=2) + "\n")
    install(home, folder, "claude-code", "--project", "two")
    assert json.loads(servers_file.read_text())["mcpServers"]["memory"] == {
        "type": "stdio", "command": EXECUTABLE, "args": ["mcp", "--project", "two"], "env": {"DATASETTE_MEMORY_NO_VECTORS": "1"}}


def test_claude_codes_tool_hook_matches_only_the_tools_it_records_as_the_plugin_does(home, folder):
    "install writes the plugin's matcher on the tool hook's groups, and a second install of an older entry adds it."
    from datasette_memory.clients.claude_code import RECORDED_TOOLS

    plugin = json.loads((pathlib.Path(__file__).parent.parent / "claude-plugin" / "hooks" / "hooks.json").read_text())["hooks"]
    install(home, folder, "claude-code")
    settings = folder / ".claude" / "settings.json"
    hooks = json.loads(settings.read_text())["hooks"]
    for event in ("PostToolUse", "PostToolUseFailure"):
        (group,) = hooks[event]
        assert group["matcher"] == RECORDED_TOOLS == plugin[event][0]["matcher"]
    assert all("matcher" not in group for event in ("SessionStart", "UserPromptSubmit") for group in hooks[event])
    # an install from before the matcher: the group had none, and every tool started a hook process
    for event in ("PostToolUse", "PostToolUseFailure"):
        del hooks[event][0]["matcher"]
    settings.write_text(json.dumps({"hooks": hooks}, indent=2))
    result = install(home, folder, "claude-code")
    assert "~ updated PostToolUse hook" in result.output and RECORDED_TOOLS in result.output
    again = json.loads(settings.read_text())["hooks"]
    assert [group["matcher"] for event in ("PostToolUse", "PostToolUseFailure") for group in again[event]] == [RECORDED_TOOLS] * 2
    unchanged = install(home, folder, "claude-code")
    assert "PostToolUse" not in unchanged.output
