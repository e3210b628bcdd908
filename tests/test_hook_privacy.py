"""What a hook never stores: text inside ``<private>...</private>``, wherever in the payload the span is, and credentials, whichever field holds them.

Every test runs the real hook commands (click's CliRunner, the payloads Claude
Code and Codex send: tests/hook_payloads/) on a real memory file, then reads
every byte of the file and of the files beside it (its WAL included), every row
of every table, and what the next session's start prints.

The property test writes the hidden text in runic letters, which no payload,
path, heading or stored text otherwise holds: any runic letter found anywhere
was inside a span. Its model of a span is the plainest one (tags counted as they
nest, in the payload's order); the hooks hide at least that much.

The credential tests put a GitHub token or an AWS key into each string of each
recorded payload in turn: whatever field holds it, the hook records what it
records without it, and says what it left out.
"""

import json
import re
import shutil
import sqlite3
import string

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.core.hook_kinds import ACTIVITY, CHECKPOINT_REMINDER, SESSION_START
from datasette_memory.hooks.activity import parse

from .test_hooks import PAYLOADS, PROJECT, TOKEN, context_of, hook

HIDDEN = "ᚠᚢᚦᚨᚱᚲᚷᚹᚺᚾᛁᛃᛇᛈᛉᛊᛏᛒᛖᛗᛚᛜᛞᛟ"  # Elder Futhark: in no payload, path or heading
HIDDEN_TEXT = re.compile(f"[{HIDDEN}]|\\\\u16[a-f][0-9a-f]", re.IGNORECASE)  # as stored, or escaped in JSON
HIDDEN_BYTES = re.compile(rb"(?:\xe1[\x9a\x9b][\x80-\xbf]){2}")  # two runic letters in UTF-8, in any file's raw bytes
TAG = re.compile(r"<(/?)private>", re.IGNORECASE)
SUBCOMMANDS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt", "PostToolUse": "tool",
               "PostToolUseFailure": "tool", "Stop": "stop"}
TEMPLATES = sorted(path.stem for path in PAYLOADS.glob("*.json"))
CLEAN_START = "claude_session_start_startup"


def template(name: str) -> dict:
    "A recorded payload as the agent sends it (its cwd, /home/dev/app, need not exist: the project is given)."
    return json.loads((PAYLOADS / f"{name}.json").read_text().replace("{GITHUB_TOKEN}", TOKEN))


def run(db_path, sent: dict, *args: str):
    "The hook for ``sent``'s event, pinned to the project, on ``db_path``."
    return hook(db_path, SUBCOMMANDS[sent["hook_event_name"]], sent, "--project", PROJECT, *args)


def stored(db_path, kind: str) -> list[dict]:
    "The events of ``kind``: session and content."
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT session, new FROM events WHERE kind = ? ORDER BY id", [kind]).fetchall()
    finally:
        conn.close()
    return [{"session": session, "content": json.loads(new)} for session, new in rows]


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    "A memory file with an entity and a change no checkpoint covers, made in an agent's session (so Stop records a reminder), copied per example."
    folder = tmp_path_factory.mktemp("seed")
    # semantic arm off: its embedding thread's connection, closed later, would take the WAL away mid-copy
    lexical = Config(search=SearchSettings(semantic=False))
    memory = Memory.open(folder / "memory.db", project=PROJECT, actor="claude", session="mcp-seed", config=lexical)
    memory.create_entities([{"name": "auth-gateway", "entityType": "service", "observations": ["Listens on port 8443"]}])
    memory.append_event("moved the gateway to port 8443", kind="decision")
    memory.close()
    return folder


@pytest.fixture
def seeded(seed, tmp_path):
    folder = tmp_path / "memory"
    shutil.copytree(seed, folder)
    return folder / "memory.db"


def leak(folder) -> str | None:
    """
    Where runic text is in ``folder``: a file's raw bytes (the WAL, the witness and
    any side file included), or a row of a table of the memory file; None if nowhere.
    """
    for path in sorted(folder.iterdir()):
        if path.is_file() and HIDDEN_BYTES.search(path.read_bytes()):
            return f"the bytes of {path.name}"
    conn = sqlite3.connect(folder / "memory.db")
    try:
        for line in conn.iterdump():
            if HIDDEN_TEXT.search(line):
                return line
    finally:
        conn.close()
    return None


# The audit's three cases, and the other hooks


def test_a_command_given_as_a_list_keeps_its_span_across_its_items(seeded):
    sent = template("codex_post_tool_use_npm_test") | {"tool_input": {"command": ["echo", "<private>", "Xylo-hidden", "</private>", "done"]}}
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    assert "Xylo-hidden" not in event["content"]
    assert parse(event["content"])["command"] == "echo [private] done"


def test_a_nested_span_hides_everything_to_the_end_of_the_payload(seeded):
    sent = template("claude_post_tool_use_failure_bash")
    sent["tool_input"]["command"] = "echo <private>a<private>b</private>Xylo-hidden</private> and Xylo-after"
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    fields = parse(event["content"])
    assert "Xylo" not in event["content"] and fields["command"] == "echo [private]"
    assert "error" not in fields and fields["exit"] == "failed"  # the error came after the span: hidden too


def test_a_span_opened_in_the_command_and_closed_in_the_error_hides_both_parts(seeded):
    sent = template("claude_post_tool_use_failure_bash")
    sent["tool_input"]["command"] = "deploy --customer <private>Xylo-customer"
    sent["error"] = "Exit code 1\nXylo-error for the customer</private>\nconnection refused"
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    fields = parse(event["content"])
    assert "Xylo" not in event["content"]
    assert fields["command"] == "deploy --customer [private]" and fields["error"] == "connection refused"


def test_an_unclosed_span_hides_the_rest_of_the_payload_not_only_its_field(seeded):
    sent = template("claude_post_tool_use_bash_pytest")
    sent["tool_input"] = {"command": "pytest -q <private>Xylo-one", "description": "Xylo-two"}
    sent["tool_response"] = {"stdout": "Xylo-three\n1 failed in 0.1s\n", "stderr": ""}
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    assert "Xylo" not in event["content"]
    assert parse(event["content"]) == {"tool": "Bash", "command": "pytest -q [private]", "exit": "0"}  # no test counts: hidden


def test_a_stray_closing_tag_hides_the_rest(seeded):
    sent = template("codex_post_tool_use_npm_test") | {"tool_input": {"command": "npm test Xylo-before</PRIVATE> Xylo-after"}}
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    assert "Xylo-after" not in event["content"] and parse(event["content"])["command"] == "npm test Xylo-before[private]"


def test_tags_match_in_any_case_and_spans_end_where_they_close(seeded):
    sent = template("codex_post_tool_use_npm_test")
    sent["tool_input"] = {"command": "curl -u <Private>Xylo-user</PRIVATE> https://api.internal <pRiVaTe>Xylo-2</private> ok"}
    assert run(seeded, sent).exit_code == 0
    (event,) = stored(seeded, ACTIVITY)
    assert parse(event["content"])["command"] == "curl -u [private] https://api.internal [private] ok"


def test_every_hook_reads_the_payload_without_its_spans(seeded):
    "session-start, stop and prompt strip the same spans: the session id and the source are stored, the prompt searched."
    for name in ("codex_stop", "claude_session_start_resume"):  # the stop first: no session start covers the decision
        sent = template(name) | {"session_id": "abc-<private>Xylo-session</private>"}
        assert run(seeded, sent).exit_code == 0
    assert [e["session"] for e in stored(seeded, CHECKPOINT_REMINDER) + stored(seeded, SESSION_START)] == ["abc-[private]"] * 2
    sent = template("claude_session_start_compact") | {"source": "compact<private>Xylo-source"}
    started = run(seeded, sent)
    assert "Xylo" not in started.stdout and context_of(started.stdout, "SessionStart").startswith("# datasette-memory, session start:")
    assert "Xylo" not in json.dumps(stored(seeded, SESSION_START))
    asked = run(seeded, template("claude_user_prompt_submit") | {"prompt": "<private>Which port does the auth gateway listen on?</private>"})
    assert asked.exit_code == 0 and asked.stdout == ""  # the words memory would match were private: nothing is searched
    assert "auth-gateway" in context_of(run(seeded, template("claude_user_prompt_submit")).stdout, "UserPromptSubmit")


# The property: whatever the payload, nothing inside a span is stored


def casings(word: str) -> st.SearchStrategy[str]:
    "``word`` in any mix of upper and lower case."
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if up else c for c, up in zip(word, upper))
    )


OPENING = casings("private").map(lambda word: f"<{word}>")
CLOSING = casings("private").map(lambda word: f"</{word}>")
VISIBLE = st.one_of(
    st.sampled_from(["echo ", " ", "\n", "pytest -q ", "Exit code 1\n", "src/app.py", "2 failed in 0.1s\n",
                     "<privat>", "</ private>", "private", "<", ">", "/", "</", "<private"]),
    st.text(alphabet=string.ascii_letters + string.digits + " <>/\n", max_size=12),
)
SECRET = st.text(alphabet=HIDDEN, min_size=2, max_size=12)


def depth_after(text: str, depth: int) -> int:
    "How many spans are open after ``text``, ``depth`` before it: the test's own model, tags counted as they nest."
    for tag in TAG.finditer(text):
        depth = max(0, depth - 1) if tag.group(1) else depth + 1
    return depth


def string_paths(value, path=()):
    "Where the strings in ``value`` are, in the order the agent sends them."
    if isinstance(value, str):
        yield path
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_paths(item, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_paths(item, path + (key,))


def put(value, path, text):
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


@st.composite
def private_payloads(draw):
    """
    A recorded payload (any hook's, either agent's; a command sometimes given as a
    list) with text added before and after its strings: ordinary text, opening and
    closing tags in any case, and, only where a span is open, runic text.
    """
    sent = template(draw(st.sampled_from(TEMPLATES)))
    tool_input = sent.get("tool_input")
    if isinstance(tool_input, dict) and isinstance(tool_input.get("command"), str) and draw(st.booleans()):
        tool_input["command"] = tool_input["command"].split(" ")
    depth = 0
    for path in list(string_paths(sent)):
        if path == ("hook_event_name",):
            depth = depth_after(sent["hook_event_name"], depth)
            continue
        start, text = depth, ""
        for part in ("before", "original", "after"):
            if part == "original":
                text += sent_value(sent, path)
                continue
            for _ in range(draw(st.integers(0, 3))):
                open_now = depth_after(text, start) > 0
                kinds = ["visible", "opening", "closing"] + (["secret"] * 2 if open_now else [])
                piece = draw({"visible": VISIBLE, "opening": OPENING, "closing": CLOSING, "secret": SECRET}[draw(st.sampled_from(kinds))])
                text += piece
        put(sent, path, text)
        depth = depth_after(text, start)
    return sent


def sent_value(value, path):
    for step in path:
        value = value[step]
    return value


@settings(max_examples=150, deadline=None)
@given(sent=private_payloads())
def test_no_text_inside_a_private_span_is_ever_stored(seed, tmp_path_factory, sent):
    folder = tmp_path_factory.mktemp("example") / "memory"
    shutil.copytree(seed, folder)
    db_path = folder / "memory.db"
    result = run(db_path, sent)
    assert result.exit_code == 0
    assert not HIDDEN_TEXT.search(result.stdout + result.stderr), result.output
    started = run(db_path, template(CLEAN_START))
    assert started.exit_code == 0 and started.stdout
    assert not HIDDEN_TEXT.search(started.stdout), started.stdout
    assert leak(folder) is None, leak(folder)


# Credentials: every field a hook stores goes through the core's scanner

CREDENTIALS = {"GitHub token": TOKEN, "AWS access key id": "AKIA" + "Q7WZ3K9D2M5X8B4N"}  # made up, in their shapes
LEFT_OUT = "[left out: it looks like a credential]"


def kept(folder, credential: str) -> str | None:
    "Which file beside (or in) the memory file holds any 12 characters of ``credential``, as they are or lowercased."
    pieces = {credential[i : i + 12].encode() for i in range(len(credential) - 11)}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes().lower() if path.is_file() else b""
        if any(piece.lower() in data for piece in pieces):
            return path.name
    return None


def event_count(db_path) -> int:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("name", TEMPLATES)
def test_a_credential_in_any_field_of_any_payload_never_reaches_the_file(seed, tmp_path, name):
    "Each string of each recorded payload in turn holds a credential; the hook still records what it records, without it."
    writes = 0 if "user_prompt" in name or name.endswith("stop_active") else 1
    paths = [path for path in string_paths(template(name)) if path != ("hook_event_name",)]
    for n, (path, (kind, credential)) in enumerate((path, item) for path in paths for item in CREDENTIALS.items()):
        folder = tmp_path / str(n)
        shutil.copytree(seed, folder)
        sent = template(name)
        put(sent, path, sent_value(sent, path) + " " + credential)
        before = event_count(folder / "memory.db")
        result = run(folder / "memory.db", sent)
        assert result.exit_code == 0, result.output
        assert kept(folder, credential) is None, (path, kind, kept(folder, credential))
        assert event_count(folder / "memory.db") == before + writes, (path, kind, result.stderr)
        assert credential not in result.stdout and credential not in result.stderr


def test_a_session_id_holding_a_credential_is_left_out_and_said(seeded):
    for name in ("claude_post_tool_use_edit", "codex_stop", "claude_session_start_startup"):
        result = run(seeded, template(name) | {"session_id": f"run-{TOKEN}"})
        assert result.exit_code == 0
        assert result.stderr.count("left the session_id out of the ledger: it looks like a credential (GitHub token)") == 1
    assert [e["session"] for e in stored(seeded, ACTIVITY) + stored(seeded, CHECKPOINT_REMINDER) + stored(seeded, SESSION_START)] == [None] * 3


def test_a_working_folder_holding_a_credential_is_left_out_of_the_session_start(seeded):
    "The session start is still recorded and the context still printed; the folder (and the rule naming it) are left out."
    folder = seeded.parent.parent / TOKEN / "app"
    (folder / ".git").mkdir(parents=True)
    result = hook(seeded, "session-start", template(CLEAN_START) | {"cwd": str(folder / "src")})
    assert result.exit_code == 0
    assert "left the cwd out of the session_start event: it looks like a credential (GitHub token)" in result.stderr
    assert "left the project out of the session_start event" in result.stderr  # the rule: the repository at .../ghp_.../app
    assert 'project "app", chosen by the git repository at' in context_of(result.stdout, "SessionStart")
    (event,) = stored(seeded, SESSION_START)
    assert event["content"] == f"source: startup\ncwd: {LEFT_OUT}\nproject: {LEFT_OUT}"
    assert kept(seeded.parent, TOKEN) is None


@pytest.mark.parametrize("setting", ["repository", "file", "--actor", "--project"])
def test_a_name_the_hook_writes_under_holding_a_credential_is_refused(seeded, setting):
    "A project or actor is on every event: it cannot be left out, so the hook says why in one line and stores nothing."
    folder = seeded.parent.parent / "work" / (TOKEN if setting == "repository" else "app")
    (folder / ".git").mkdir(parents=True)
    if setting == "file":
        (folder / ".datasette-memory").write_text(f"project = {TOKEN}\n")
    args = {"--actor": ["--actor", TOKEN], "--project": ["--project", TOKEN]}.get(setting, [])
    before = event_count(seeded)
    result = hook(seeded, "tool", template("claude_post_tool_use_edit") | {"cwd": str(folder)}, *args)
    assert result.exit_code == 0 and result.stdout == ""
    name = "--actor" if setting == "--actor" else "project"
    assert f"{name}: looks like a credential (GitHub token)" in result.stderr and len(result.stderr.splitlines()) == 1
    assert "--allow-secrets" not in result.stderr and TOKEN not in result.stderr
    assert event_count(seeded) == before and kept(seeded.parent, TOKEN) is None
