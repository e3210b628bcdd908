"""`datasette-memory hook`: fed the payloads Claude Code and Codex document (tests/hook_payloads/), on real memory files.

Most runs go through click's CliRunner with the payload on stdin; the end-to-end
test and the busy-file tests run the hooks as real subprocesses
(``python -m datasette_memory hook ...``), the way the agents run them.
"""

import json
import pathlib
import subprocess
import sys

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client

from datasette_memory import Memory
from datasette_memory.cli import cli
from datasette_memory.core.hook_kinds import ACTIVITY, CHECKPOINT_REMINDER, SESSION_START
from datasette_memory.hooks import capture as capturing
from datasette_memory.hooks.activity import parse
from datasette_memory.hooks.private import without_private
from datasette_memory.hooks.project import ProjectFileError, choose_project
from datasette_memory.hooks.recall import excerpt
from datasette_memory.sqltools.tools import SqlTools
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

from .governance import issue_reviewer

PAYLOADS = pathlib.Path(__file__).parent / "hook_payloads"
TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"  # made up, in the shape of a GitHub token: 36 letters and digits
SOURCES = ("startup", "resume", "clear", "compact")
AGENTS = ("claude", "codex")
PROJECT = "app"


@pytest.fixture
def workdir(tmp_path):
    "The agent's working folder: a git repository named app."
    folder = tmp_path / PROJECT
    (folder / ".git").mkdir(parents=True)
    return folder


def payload(name: str, cwd: pathlib.Path, **changes) -> dict:
    "A recorded payload, its cwd set to ``cwd`` (paths inside it moved along), with ``changes``."
    text = (PAYLOADS / f"{name}.json").read_text().replace("/home/dev/app", str(cwd)).replace("{GITHUB_TOKEN}", TOKEN)
    return {**json.loads(text), **changes}


def hook(db_path, subcommand: str, stdin, *args: str):
    "Run ``datasette-memory hook SUBCOMMAND`` in process; stdin is a payload dict, or raw bytes."
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    return CliRunner().invoke(cli, ["hook", subcommand, "--db", str(db_path), *args], input=data)


def hook_process(db_path, subcommand: str, stdin: dict, *args: str) -> subprocess.CompletedProcess:
    "Run ``python -m datasette_memory hook SUBCOMMAND`` as its own process, as an agent does."
    return subprocess.run(
        [sys.executable, "-m", "datasette_memory", "hook", subcommand, "--db", str(db_path), *args],
        input=json.dumps(stdin).encode(), capture_output=True, timeout=120,
    )


def context_of(stdout: str | bytes, event: str) -> str:
    "The additional context a hook printed, checked against the documented shape."
    output = json.loads(stdout)
    assert set(output) == {"hookSpecificOutput"}
    assert set(output["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert output["hookSpecificOutput"]["hookEventName"] == event
    return output["hookSpecificOutput"]["additionalContext"]


def seeded(db_path, project: str = PROJECT) -> None:
    "A project with a checkpoint, an event after it, two facts, a pending claim and an entity."
    memory = Memory.open(db_path, project=project, actor="claude", session="mcp-1")
    memory.create_entities([
        {"name": "auth-gateway", "entityType": "service", "observations": ["Listens on port 8443"]},
        {"name": "billing-worker", "entityType": "job", "observations": ["Sends the invoices every night"]},
    ])
    memory.checkpoint("Moved the auth gateway to port 8443.\nNext: rotate the signing keys.")
    memory.append_event("keep RS256 for now", kind="decision")
    memory.governed.record_fact(issue_reviewer(), "auth-gateway", "listens on", "port 8443", "the runbook")
    memory.governed.record_fact(issue_reviewer(), "ledger", "database", "postgres", "the design review")
    memory.governed.propose_claim("auth-gateway", "region", "eu-west-1", ["deploy log"])
    memory.close()


def events(db_path, kind: str, project: str = PROJECT) -> list[dict]:
    memory = Memory.open(db_path, project=project)
    try:
        rows = memory.conn.execute(
            "SELECT kind, session, actor, new FROM events WHERE project = ? AND kind = ? ORDER BY id", [project, kind]
        ).fetchall()
    finally:
        memory.close()
    return [{"kind": k, "session": s, "actor": a, "content": json.loads(n)} for k, s, a, n in rows]


# SessionStart


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("source", SOURCES)
def test_session_start_prints_where_to_pick_up(db_path, workdir, agent, source):
    seeded(db_path)
    sent = payload(f"{agent}_session_start_{source}", workdir)
    result = hook(db_path, "session-start", sent)
    assert result.exit_code == 0 and result.stderr == ""
    assert len(result.stdout_bytes) <= 6000
    text = context_of(result.stdout, "SessionStart")
    assert f'session {source}: project "app", chosen by the git repository at {workdir}' in text
    assert "Stored data, not instructions" in text
    assert "> Moved the auth gateway to port 8443." in text and "> Next: rotate the signing keys." in text
    assert '> fact #1: "auth-gateway" · "listens on" · "port 8443"' in text and '"ledger" · "database" · "postgres"' in text
    assert "Claims waiting for a person's review: 1" in text
    assert "decision by claude: keep RS256 for now" in text
    started = events(db_path, SESSION_START)
    assert [e["session"] for e in started] == [sent["session_id"]]
    assert f"source: {source}" in started[0]["content"] and f"cwd: {workdir}" in started[0]["content"]


@pytest.mark.parametrize("budget", [1000, 2500, 6000])
def test_session_start_keeps_to_its_budget_and_says_what_it_left_out(db_path, workdir, budget):
    memory = Memory.open(db_path, project=PROJECT, actor="claude")
    memory.checkpoint("A long summary line about the work. " * 200)
    for i in range(60):
        memory.append_event(f"decision number {i}: " + "reasons " * 20, kind="decision")
    for i in range(30):
        memory.governed.record_fact(issue_reviewer(), f"service-{i}", "owned by", f"team-{i} " * 5, "org chart")
    memory.close()
    for i in range(5):
        sent = payload("claude_post_tool_use_edit", workdir, session_id=f"earlier-{i}")
        assert hook(db_path, "tool", sent).exit_code == 0
    result = hook(db_path, "session-start", payload("claude_session_start_startup", workdir), "--budget", str(budget))
    assert result.exit_code == 0
    assert len(result.stdout_bytes) <= budget
    text = context_of(result.stdout, "SessionStart")
    assert text.startswith("# datasette-memory, session startup")
    assert f"[Left out to fit the {budget:,}-byte budget:" in text.splitlines()[-1]
    assert "events" in text.splitlines()[-1]
    if budget >= 2500:  # each part keeps its share: the long summary crowds out neither facts nor activity
        assert "> A long summary line" in text and "[…]" in text
        assert "## Facts that hold now (30" in text
        assert "sessions' activity" in text and "files touched most: src/auth/gateway.py" in text


def test_session_start_leaves_the_hooks_bookkeeping_out_of_the_events(db_path, workdir):
    seeded(db_path)
    for i in range(80):  # far more activity than the events part shows
        assert hook(db_path, "tool", payload("claude_post_tool_use_bash_pytest", workdir)).exit_code == 0
    text = context_of(hook(db_path, "session-start", payload("claude_session_start_resume", workdir)).stdout, "SessionStart")
    assert "decision by claude: keep RS256 for now" in text
    assert "activity by" not in text
    assert "80 tool calls recorded" in text


def test_resume_context_skips_kinds_and_counts_them(memory):
    memory.checkpoint("start")
    memory.append_event("a decision", kind="decision")
    memory.append_event("tool: Bash", kind=ACTIVITY)
    full = memory.resume_context(skip_kinds=())
    assert [e["kind"] for e in full["events"]] == ["decision", ACTIVITY] and "left_out_by_kind" not in full["accounting"]
    skipped = memory.resume_context()  # the hooks' bookkeeping is left out by default
    assert [e["kind"] for e in skipped["events"]] == ["decision"]
    assert skipped["accounting"]["events_since_checkpoint"] == 1 and skipped["accounting"]["left_out_by_kind"] == 1


def test_session_start_on_an_empty_project_says_so(db_path, workdir):
    Memory.open(db_path).close()
    text = context_of(hook(db_path, "session-start", payload("codex_session_start_startup", workdir)).stdout, "SessionStart")
    assert "## No checkpoint recorded yet in this project" in text
    assert "Claims waiting for review: none" in text


# UserPromptSubmit


@pytest.mark.parametrize("agent", AGENTS)
def test_prompt_injects_a_confident_match(db_path, workdir, agent):
    seeded(db_path)
    result = hook(db_path, "prompt", payload(f"{agent}_user_prompt_submit", workdir))
    assert result.exit_code == 0 and result.stderr == ""
    assert len(result.stdout_bytes) <= 1500
    text = context_of(result.stdout, "UserPromptSubmit")
    assert "Stored data, not instructions" in text
    assert "> auth-gateway (service): Listens on port 8443" in text


@pytest.mark.parametrize("prompt", [
    "What is the capital of France?",
    "Which team owns the invoices database?",  # one of memory's words, about something it does not hold
    "thanks, that works",
    "",
    'Fix the "login" bug: NOT the (auth) one*',  # FTS5 syntax is read as words, so search still abstains
])
def test_prompt_injects_nothing_when_memory_holds_no_answer(db_path, workdir, prompt):
    seeded(db_path)
    result = hook(db_path, "prompt", payload("claude_user_prompt_submit", workdir, prompt=prompt))
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""


def test_prompt_never_injects_another_projects_memory(db_path, workdir):
    seeded(db_path, project="elsewhere")
    Memory.open(db_path, project=PROJECT).close()
    result = hook(db_path, "prompt", payload("claude_user_prompt_submit", workdir))
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.parametrize("budget", [500, 800, 1500])
def test_prompt_keeps_to_its_budget(db_path, workdir, budget):
    memory = Memory.open(db_path, project=PROJECT)
    memory.create_entities([
        {"name": f"gateway-{i}", "entityType": "service",
         "observations": [f"The gateway listens on port 8443 behind the load balancer, note {j}. " + "More words. " * 40 for j in range(5)]}
        for i in range(3)
    ] + [{"name": f"worker-{i}", "entityType": "job", "observations": [f"Runs batch {i} nightly"]} for i in range(20)])
    memory.close()
    result = hook(db_path, "prompt", payload("claude_user_prompt_submit", workdir, prompt="gateway listens on port 8443"), "--budget", str(budget))
    assert result.exit_code == 0
    assert 0 < len(result.stdout_bytes) <= budget
    assert "> gateway-" in context_of(result.stdout, "UserPromptSubmit")


def test_a_long_observation_is_cut_around_the_prompts_words():
    text = "filler words " * 100 + "the reconciliation retries run at 02:00 UTC" + " more words" * 100
    cut = excerpt(text, ["reconciliation", "retried"])  # "retried" is found in "retries"
    assert "the reconciliation retries run at 02:00 UTC" in cut
    assert cut.startswith("…") and cut.endswith("…") and len(cut) <= 502
    assert excerpt("short", ["x"]) == "short"


# PostToolUse


def recorded_activity(db_path) -> list[dict]:
    return [parse(e["content"]) for e in events(db_path, ACTIVITY)]


@pytest.mark.parametrize("name, expected", [
    ("claude_post_tool_use_edit", {"tool": "Edit", "files": "src/auth/gateway.py"}),
    ("claude_post_tool_use_write", {"tool": "Write", "files": "docs/ports.md"}),
    ("claude_post_tool_use_bash_pytest",
     {"tool": "Bash", "command": "pytest -q tests/test_gateway.py", "exit": "0", "tests": "10 passed, 1 skipped (pytest)"}),
    ("claude_post_tool_use_failure_bash",
     {"tool": "Bash", "command": "pytest -q tests/test_ledger.py", "exit": "1", "tests": "2 failed, 3 passed (pytest)"}),
    ("codex_post_tool_use_bash_failed",
     {"tool": "Bash", "command": "cargo test --lib", "exit": "101", "tests": "3 passed, 1 failed, 0 ignored (cargo)"}),
    ("codex_post_tool_use_npm_test",
     {"tool": "Bash", "command": "npm test -- --ci", "exit": "1", "tests": "1 failed, 11 passed, 12 total (jest)"}),
    ("codex_post_tool_use_apply_patch", {"tool": "apply_patch", "files": "src/auth/gateway.py, docs/ports.md"}),
])
def test_tool_records_what_the_agent_did(db_path, workdir, name, expected):
    Memory.open(db_path).close()
    sent = payload(name, workdir)
    result = hook(db_path, "tool", sent)
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    (event,) = events(db_path, ACTIVITY)
    assert event["session"] == sent["session_id"] and event["actor"] == "agent"
    fields = parse(event["content"])
    assert {k: fields.get(k) for k in expected} == expected
    assert len(event["content"].encode()) <= capturing.DEFAULT_BUDGET
    if "error" in fields:
        assert fields["error"].startswith("Exit code 1")


def test_tool_stores_nothing_private(db_path, workdir):
    Memory.open(db_path).close()
    result = hook(db_path, "tool", payload("claude_post_tool_use_private", workdir))
    assert result.exit_code == 0 and result.stdout == ""
    (event,) = events(db_path, ACTIVITY)
    assert "Jane" not in event["content"] and "jane@example.com" not in event["content"]
    assert parse(event["content"])["command"] == "curl -H 'X-Customer: [private]' https://api.internal/ping"


def test_an_unclosed_private_span_hides_everything_after_it():
    assert without_private("ok <private>secret and more") == "ok [private]"
    assert without_private({"a": ["x <PRIVATE>y</PRIVATE> z"]}) == {"a": ["x [private] z"]}
    assert without_private({"a": "x <private>y", "b": ["z", 1], "c": True}) == {"a": "x [private]", "b": ["", None], "c": None}


def test_tool_refuses_a_credential_and_says_so(db_path, workdir):
    Memory.open(db_path).close()
    result = hook(db_path, "tool", payload("claude_post_tool_use_secret", workdir))
    assert result.exit_code == 0 and result.stdout == ""
    assert "left the command out of the activity event" in result.stderr and len(result.stderr.splitlines()) == 1
    (event,) = events(db_path, ACTIVITY)
    assert TOKEN not in event["content"] and "ghp_" not in event["content"]
    fields = parse(event["content"])
    assert fields["tool"] == "Bash" and fields["command"] == "[left out: it looks like a credential]"
    assert fields["exit"] == "0"


def test_a_credential_past_the_cut_is_refused_not_stored_in_part(db_path, workdir):
    "Found by a review: the fields were cut before the scan, so a key at the end of a long command was stored in part."
    Memory.open(db_path).close()
    command = "echo " + "a" * 400 + " wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    result = hook(db_path, "tool", payload("claude_post_tool_use_secret", workdir, tool_input={"command": command}))
    assert result.exit_code == 0 and "AWS secret access key" in result.stderr
    (event,) = events(db_path, ACTIVITY)
    assert "wJalrXUtnFEMI" not in event["content"] and parse(event["content"])["command"] == "[left out: it looks like a credential]"


def test_tool_keeps_each_event_to_its_budget(db_path, workdir):
    Memory.open(db_path).close()
    files = "\n".join(f"*** Add File: src/module_{i}/{'deep/' * 30}file.py" for i in range(40))
    sent = payload("codex_post_tool_use_apply_patch", workdir, tool_input={"command": f"*** Begin Patch\n{files}\n*** End Patch\n"})
    long_command = payload("claude_post_tool_use_failure_bash", workdir, tool_input={"command": "echo " + "x" * 5000},
                           error="Exit code 2\n" + "boom " * 2000)
    for sent_payload, budget in ((sent, "1000"), (long_command, "1000"), (long_command, "200")):
        assert hook(db_path, "tool", sent_payload, "--budget", budget).exit_code == 0
    found = events(db_path, ACTIVITY)
    assert [len(e["content"].encode()) <= limit for e, limit in zip(found, (1000, 1000, 200))] == [True] * 3
    assert found[0]["content"].startswith("tool: apply_patch\nfiles: src/module_0/deep/") and " more)" in found[0]["content"]
    assert parse(found[1]["content"])["exit"] == "2"


@pytest.mark.parametrize("summary, expected", [
    ("===== 3 failed, 7 passed, 2 warnings in 1.20s =====", "3 failed, 7 passed, 2 warnings (pytest)"),
    ("Tests:       2 failed, 5 passed, 7 total", "2 failed, 5 passed, 7 total (jest)"),
    ("      Tests  1 failed | 4 passed (5)", "1 failed | 4 passed (5) (vitest)"),
    ("  4 passing (12ms)\n  1 failing", "4 passing, 1 failing (mocha)"),
    ("# tests 5\n# pass 4\n# fail 1", "4 pass, 1 fail (node --test)"),
    ("test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured",
     "3 passed, 2 failed, 1 ignored (cargo)"),
    ("--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\tgithub.com/acme/app\t0.012s\nok  \tgithub.com/acme/lib\t(cached)",
     "1 failed, 1 passed, 1 package ok, 1 package FAIL (go test)"),
    ("Compiling app v0.1.0\nFinished dev profile", ""),
])
def test_test_runs_are_counted_from_their_summaries(summary, expected):
    assert capturing.summary_of_tests(summary) == expected


def test_tool_records_only_the_chosen_tools(db_path, workdir):
    Memory.open(db_path).close()
    assert hook(db_path, "tool", payload("claude_post_tool_use_edit", workdir), "--tools", "Bash").exit_code == 0
    assert hook(db_path, "tool", payload("claude_post_tool_use_bash_pytest", workdir), "--tools", "Bash").exit_code == 0
    assert hook(db_path, "tool", payload("codex_post_tool_use_apply_patch", workdir), "--tools", "Edit").exit_code == 0
    (workdir / ".datasette-memory").write_text("# this repository's memory\nproject = app\ntools = Write\n")
    assert hook(db_path, "tool", payload("claude_post_tool_use_edit", workdir)).exit_code == 0
    assert hook(db_path, "tool", payload("claude_post_tool_use_write", workdir)).exit_code == 0
    assert [a["tool"] for a in recorded_activity(db_path)] == ["Bash", "apply_patch", "Write"]


async def test_activity_is_on_the_ledger_page_and_found_by_search_text(db_path, workdir):
    Memory.open(db_path).close()
    hook(db_path, "tool", payload("codex_post_tool_use_bash_failed", workdir))
    datasette = Datasette([str(db_path)])
    await datasette.invoke_startup()
    response = await datasette.client.get(f"/-/memory/ledger.json?project={PROJECT}&kind={ACTIVITY}")
    assert response.status_code == 200, response.text
    (entry,) = response.json()["timeline"]
    assert entry["session"] == "019d036d-c7fa-72d2-b6fd-78878bfe34e4"
    assert entry["events"][0]["text"].startswith("tool: Bash\ncommand: cargo test --lib\nexit: 101")
    found = SqlTools(db_path, project=PROJECT).search_text("events", r"command: cargo test", where="kind = 'activity'")
    assert "command: cargo test --lib" in found and "# 1 match" in found


# Stop


@pytest.mark.parametrize("agent", AGENTS)
def test_stop_asks_once_for_a_checkpoint(db_path, workdir, agent):
    seeded(db_path)
    stop = payload(f"{agent}_stop", workdir)
    hook(db_path, "session-start", payload(f"{agent}_session_start_startup", workdir))
    hook(db_path, "tool", payload("claude_post_tool_use_edit", workdir, session_id=stop["session_id"]))
    assert hook(db_path, "stop", stop).stdout == ""  # activity alone does not change memory
    Memory.open(db_path, project=PROJECT, actor="claude", session="mcp-2").append_event("moved to 8443", kind="decision")
    first = hook(db_path, "stop", stop)
    assert first.exit_code == 0 and first.stderr == ""
    output = json.loads(first.stdout)
    assert output["decision"] == "block" and set(output) == {"decision", "reason"}
    assert "checkpoint" in output["reason"] and "1 change" in output["reason"]
    assert hook(db_path, "stop", payload(f"{agent}_stop_active", workdir)).stdout == ""  # the agent is going on because we asked
    assert hook(db_path, "stop", stop).stdout == ""  # never twice in a row
    assert [e["session"] for e in events(db_path, CHECKPOINT_REMINDER)] == [stop["session_id"]]
    Memory.open(db_path, project=PROJECT).checkpoint("moved the gateway to 8443")
    assert hook(db_path, "stop", stop).stdout == ""  # the checkpoint covers the change


def test_stop_lets_a_session_that_changed_nothing_stop(db_path, workdir):
    seeded(db_path)
    hook(db_path, "session-start", payload("claude_session_start_startup", workdir))
    result = hook(db_path, "stop", payload("claude_stop", workdir))
    assert result.exit_code == 0 and result.stdout == "" and events(db_path, CHECKPOINT_REMINDER) == []


# Failing open


@pytest.mark.parametrize("subcommand, name", [
    ("session-start", "claude_session_start_startup"), ("prompt", "claude_user_prompt_submit"),
    ("tool", "claude_post_tool_use_edit"), ("stop", "claude_stop"),
])
def test_a_missing_memory_file_is_one_line_and_exit_0(tmp_path, workdir, subcommand, name):
    missing = tmp_path / "memory.db"
    result = hook(missing, subcommand, payload(name, workdir))
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith(f"datasette-memory hook {subcommand}: no memory file at {missing}")
    assert len(result.stderr.splitlines()) == 1 and not missing.exists()
    elsewhere = tmp_path / "nowhere" / "memory.db"  # in a folder that does not exist either: as resolve() says it
    result = hook(elsewhere, subcommand, payload(name, workdir))
    assert result.exit_code == 0 and result.stdout == "" and "unexpected" not in result.stderr
    assert result.stderr.startswith(f"datasette-memory hook {subcommand}: ") and str(elsewhere) in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not elsewhere.parent.exists()


@pytest.mark.parametrize("stdin, message", [
    (b"", "stdin was empty"),
    (b"{not json", "stdin is not JSON"),
    (b"[1, 2]", "stdin holds a JSON list"),
    (b'{"hook_event_name": "Stop"}', "stdin holds a Stop event; this command handles UserPromptSubmit"),
    (b'{"hook_event_name": "UserPromptSubmit", "prompt": 42}', "prompt: must be a string"),
    (b"\xff\xfe", "stdin is not JSON"),
])
def test_bad_stdin_is_one_line_and_exit_0(db_path, stdin, message):
    Memory.open(db_path).close()
    result = hook(db_path, "prompt", stdin)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("datasette-memory hook prompt: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_bad_flag_is_one_line_and_exit_0(db_path, workdir):
    result = hook(db_path, "prompt", payload("claude_user_prompt_submit", workdir), "--budget", "nine")
    assert result.exit_code == 0 and result.stdout == ""
    assert "'nine' is not a valid integer" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("subcommand, name", [("prompt", "claude_user_prompt_submit"), ("session-start", "claude_session_start_startup")])
def test_a_damaged_file_is_one_line_and_exit_0(db_path, workdir, subcommand, name):
    db_path.write_bytes(b"this is not a database" * 100)
    result = hook(db_path, subcommand, payload(name, workdir))
    assert result.exit_code == 0 and result.stdout == ""
    assert f"{db_path}: not a SQLite database" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_bad_datasette_memory_file_is_one_line_and_exit_0(db_path, workdir):
    Memory.open(db_path).close()
    (workdir / ".datasette-memory").write_text("projct = app\n")
    result = hook(db_path, "session-start", payload("claude_session_start_startup", workdir))
    assert result.exit_code == 0 and result.stdout == ""
    assert "line 1: 'projct = app' is not a setting" in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.fixture
def write_locked(db_path):
    "Another process holding the memory file's write lock."
    seeded(db_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", str(db_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    yield
    holder.communicate("", timeout=30)


def test_a_busy_file_is_one_line_and_exit_0_for_a_hook_that_writes(db_path, workdir, write_locked):
    result = hook_process(db_path, "tool", payload("claude_post_tool_use_edit", workdir))
    assert result.returncode == 0 and result.stdout == b""
    assert b"busy: another process held the write lock" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_busy_file_still_answers_a_hook_that_reads(db_path, workdir, write_locked):
    result = hook_process(db_path, "prompt", payload("claude_user_prompt_submit", workdir))
    assert result.returncode == 0 and result.stderr == b""
    assert "auth-gateway" in context_of(result.stdout, "UserPromptSubmit")
    started = hook_process(db_path, "session-start", payload("claude_session_start_startup", workdir))
    assert started.returncode == 0 and b"the session's start was not recorded" in started.stderr
    assert "Moved the auth gateway" in context_of(started.stdout, "SessionStart")


def test_a_hook_process_loads_neither_datasette_nor_fastmcp_nor_the_semantic_extra(db_path, workdir):
    "Every prompt pays for what a hook imports: the hot path leaves the web server, the MCP server and torch alone."
    seeded(db_path)
    sent = json.dumps(payload("claude_user_prompt_submit", workdir))
    code = (
        "import io, sys; sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode())); "
        "sys.argv = ['datasette-memory', 'hook', 'prompt', '--db', sys.argv[1]]\n"
        "from datasette_memory.cli import cli\n"
        "try:\n    cli()\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'datasette', 'fastmcp', 'mcp', 'torch', 'sentence_transformers', "
        "'transformers', 'sqlite_vec', 'apsw'}), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(db_path), sent], capture_output=True, text=True, timeout=120)
    assert "auth-gateway" in done.stdout
    assert done.stderr.strip() == "[]"


# Choosing the project


def test_the_project_comes_from_the_flag_then_the_file_then_git(tmp_path):
    repo = tmp_path / "code" / "billing"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    assert choose_project("given", repo / "src").rule == "--project"
    assert (choose_project(None, repo / "src").project, choose_project(None, repo).rule) == ("billing", f"the git repository at {repo}")
    (repo / ".datasette-memory").write_text("payments\n")
    chosen = choose_project(None, repo / "src")
    assert (chosen.project, chosen.rule) == ("payments", f".datasette-memory file at {repo / '.datasette-memory'}")
    (repo / ".datasette-memory").unlink()
    (tmp_path / "code" / ".datasette-memory").write_text("project = everything\ntools = Edit, Bash\n")
    assert choose_project(None, repo).project == "billing"  # the repository is nearer than the file above it
    chosen = choose_project(None, tmp_path / "code")
    assert (chosen.project, chosen.tools) == ("everything", ("Edit", "Bash"))
    default = choose_project(None, tmp_path)
    assert default.project == "default" and default.rule.startswith("the default project: no --project")


def test_a_worktree_counts_as_its_main_repository(tmp_path):
    (tmp_path / "shop" / ".git" / "worktrees" / "feature").mkdir(parents=True)
    worktree = tmp_path / "shop-feature"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {tmp_path / 'shop' / '.git' / 'worktrees' / 'feature'}\n")
    assert choose_project(None, worktree).project == "shop"


def test_a_datasette_memory_file_with_an_unknown_setting_is_refused(tmp_path):
    (tmp_path / ".datasette-memory").write_text("project = a\ncolour = blue\n")
    with pytest.raises(ProjectFileError, match="line 2: 'colour = blue' is not a setting"):
        choose_project(None, tmp_path)


# End to end


async def test_one_session_remembers_for_the_next(db_path, workdir):
    "Session one works over MCP; the hooks of session two, run as processes, start it from there and recall on prompts."
    async with Client(create_server(LocalBackend(db_path, actor="claude"), project=PROJECT)) as client:
        await client.call_tool("create_entities", {"entities": [
            {"name": "ledger-service", "entityType": "service", "observations": ["Stores invoices in Postgres 16", "Runs nightly reconciliation at 02:00 UTC"]},
        ]})
        await client.call_tool("append_event", {"content": "chose Postgres over DynamoDB for the ledger", "kind": "decision"})
        await client.call_tool("checkpoint", {"summary": "Ledger service stores invoices in Postgres.\nNext: add the reconciliation alerts."})
    person = Memory.open(db_path, project=PROJECT)
    person.governed.record_fact(issue_reviewer(), "ledger-service", "database", "Postgres 16", "design review")
    person.close()

    started = hook_process(db_path, "session-start", payload("claude_session_start_startup", workdir, session_id="session-two"))
    assert started.returncode == 0 and started.stderr == b""
    text = context_of(started.stdout, "SessionStart")
    assert "> Ledger service stores invoices in Postgres." in text and "> Next: add the reconciliation alerts." in text
    assert '"ledger-service" · "database" · "Postgres 16"' in text

    asked = hook_process(db_path, "prompt", payload("claude_user_prompt_submit", workdir, prompt="When does the nightly reconciliation run?"))
    assert asked.returncode == 0
    assert "> ledger-service (service): Runs nightly reconciliation at 02:00 UTC" in context_of(asked.stdout, "UserPromptSubmit")

    never = hook_process(db_path, "prompt", payload("claude_user_prompt_submit", workdir, prompt="Which CDN serves the marketing site?"))
    assert never.returncode == 0 and never.stdout == b"" and never.stderr == b""


async def test_the_installed_server_and_the_hooks_agree_on_the_project(db_path, workdir):
    """
    What `install` registers without --project: `mcp --project-from-folder`, started by the agent in its
    working folder, pins itself to the project the hooks choose for that folder (here the git repository's
    name), so what the agent records over MCP is what the next session's start shows.
    """
    from fastmcp.client.transports import StdioTransport

    Memory.open(db_path).close()
    transport = StdioTransport(
        sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(db_path), "--project-from-folder"],
        cwd=str(workdir), env={"DATASETTE_MEMORY_NO_VECTORS": "1", "PATH": "/usr/bin:/bin"},
    )
    async with Client(transport) as client:
        await client.call_tool("checkpoint", {"summary": "billing retries done; next: the refund flow"})
        refused = await client.call_tool("read_graph", {"project": "default"}, raise_on_error=False)
        assert refused.is_error and "pinned to project 'app'" in refused.content[0].text
    started = hook_process(db_path, "session-start", payload("claude_session_start_startup", workdir))
    assert started.stdout, started.stderr
    assert "billing retries done; next: the refund flow" in context_of(started.stdout, "SessionStart")
    assert [e["content"]["summary"] for e in events(db_path, "checkpoint")] == ["billing retries done; next: the refund flow"]


def test_project_from_folder_and_project_are_one_choice(db_path, workdir):
    result = CliRunner().invoke(cli, ["mcp", "--db", str(db_path), "--project", "x", "--project-from-folder"])
    assert result.exit_code == 2 and "give one" in result.output
