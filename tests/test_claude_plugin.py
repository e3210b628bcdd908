"""The Claude Code plugin: PostToolUse only for the tools that change files or run commands, and the package's version."""

import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from datasette_memory.hooks.capture import capture
from datasette_memory.hooks.payloads import TOOL, Payload, read_payload

PLUGIN = pathlib.Path(__file__).parent.parent / "claude-plugin"
RECORDED = {"Edit", "MultiEdit", "Write", "NotebookEdit", "Bash"}
# tools a session calls that change nothing on disk and run nothing: no hook process for them
NOT_RECORDED = {"Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "TodoWrite", "Task", "TaskCreate", "TaskUpdate",
                "ExitPlanMode", "mcp__memory__search_nodes", "mcp__plugin_datasette-memory_memory__read_graph", "Bashful", "edit",
                "BashOutput", "KillShell", "mcp__files__Edit", "NotebookEditor"}


def hooks():
    return json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]


def matches(matcher: str, tool: str) -> bool:
    """
    Claude Code's rule for a matcher: letters, digits, _ and | are a list of exact
    names; anything else is an unanchored JavaScript regex. An anchored alternation
    means the same under both readings (and under versions that read every matcher
    as a regex, where a bare Bash would also match BashOutput).
    """
    assert re.fullmatch(r"\^\(\w+(\|\w+)*\)\$", matcher), "the plugin's matchers are anchored lists of names"
    return re.search(matcher, tool) is not None


@pytest.mark.parametrize("event", ["PostToolUse", "PostToolUseFailure"])
def test_the_tool_hook_runs_only_for_tools_that_change_files_or_run_commands(event):
    (group,) = hooks()[event]
    assert [h["command"] for h in group["hooks"]] == ["datasette-memory hook tool"]
    assert {tool for tool in RECORDED | NOT_RECORDED if matches(group["matcher"], tool)} == RECORDED


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_the_session_and_prompt_hooks_run_every_time(event):
    "SessionStart's matcher would pick among startup, resume, clear and compact: all four want memory."
    assert all("matcher" not in group for group in hooks()[event])


def payload(tool: str, tool_input: dict) -> Payload:
    sent = {"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/repo", "tool_name": tool, "tool_input": tool_input,
            "tool_response": {}}
    return read_payload(json.dumps(sent).encode(), (TOOL,))


@pytest.mark.parametrize("tool,tool_input,field", [
    ("Edit", {"file_path": "/repo/app.py", "old_string": "a", "new_string": "b"}, "files"),
    ("MultiEdit", {"file_path": "/repo/app.py", "edits": []}, "files"),
    ("Write", {"file_path": "/repo/new.py", "content": "x"}, "files"),
    ("NotebookEdit", {"notebook_path": "/repo/n.ipynb", "new_source": "x"}, "files"),
    ("Bash", {"command": "pytest -q"}, "command"),
])
def test_each_matched_tool_gives_the_activity_event_a_file_or_a_command(tool, tool_input, field):
    assert capture(payload(tool, tool_input)).fields[field]


def test_plugin_json_carries_the_packages_version():
    import tomllib

    version = tomllib.loads((PLUGIN.parent / "pyproject.toml").read_text())["project"]["version"]
    assert json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["version"] == version
    done = subprocess.run([sys.executable, str(PLUGIN / "plugin_version.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_version_script_rewrites_a_stale_manifest_and_check_names_both(tmp_path):
    plugin = tmp_path / "claude-plugin"
    shutil.copytree(PLUGIN, plugin)
    shutil.copy(PLUGIN.parent / "pyproject.toml", tmp_path / "pyproject.toml")
    manifest = plugin / ".claude-plugin" / "plugin.json"
    stale = json.loads(manifest.read_text()) | {"version": "0.0.1"}
    manifest.write_text(json.dumps(stale, indent=2) + "\n")
    script = [sys.executable, str(plugin / "plugin_version.py")]
    checked = subprocess.run(script + ["--check"], capture_output=True, text=True)
    assert checked.returncode == 1
    assert "version is '0.0.1' but the package is '0.1.0'" in checked.stderr
    assert subprocess.run(script, capture_output=True).returncode == 0
    assert json.loads(manifest.read_text()) == stale | {"version": "0.1.0"}
    assert manifest.read_text() == (PLUGIN / ".claude-plugin" / "plugin.json").read_text()
    assert subprocess.run(script + ["--check"]).returncode == 0
    assert subprocess.run(script + ["--fix"], capture_output=True).returncode == 2
