"""One secret scanner on every path that stores or logs text: every path x every format, refused, nothing kept.

The formats are the outside audit's: a key in lowercase or upper case, with a
zero-width or full-width character inside it, 35 characters long, typed in
groups with spaces, a PEM body without its header, an AWS secret access key,
a JWT, a database URL with a password, base64 of a key, and a high-entropy
value after a label. The paths are every door that keeps text: the MCP tools
(graph, ledger, claims, project names, the SQL tools and their audit log),
``import``, the memory pages' forms and Datasette's own write API on the
agent's tables. After each refusal the whole file (FTS and audit tables
included) is searched for the secret, and an audited call's row must show it
masked.
"""

import base64
import json
import pathlib
import sqlite3
from urllib.parse import quote, urlencode

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.exceptions import ToolError
from hypothesis import given, settings, strategies as st

from datasette_memory import InvalidInput, Memory
from datasette_memory.cli import cli
from datasette_memory.core.secrets import (
    SUSPECT, find_secrets, full_scan, mask_secrets, mask_text, normalize, secret_kind, suspect,
)
from datasette_memory.plugin.resources import datasette_config
from datasette_memory.sqltools import SqlTools
from mcp_bridge.backends import LocalBackend
from mcp_bridge.server import create_server

BENCH = pathlib.Path(__file__).parent.parent / "bench" / "retrieval"
GITHUB = "ghp_" + "q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuic"
    "tGeurT8jNbvJZHtCSuYEvuNMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ"
)


def full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


# (variation, text, a fragment that must appear nowhere in the file afterwards, the kind named)
FORMATS = [
    ("GitHub token", f"deploy with {GITHUB}", "s9T0u1V2w3X4", "GitHub token"),
    ("lowercase", GITHUB.lower(), "s9t0u1v2w3x4", "GitHub token"),
    ("upper case", GITHUB.upper(), "S9T0U1V2W3X4", "GitHub token"),
    ("zero-width inside", GITHUB[:12] + "\u200b" + GITHUB[12:], "u1V2w3X4y5Z6", "GitHub token"),
    ("full-width inside", GITHUB[:8] + full_width(GITHUB[8:20]) + GITHUB[20:], "y5Z6a7B8c9D0", "GitHub token"),
    ("35 characters", GITHUB[:-1], "s9T0u1V2w3X4", "GitHub token"),
    ("groups with spaces", " ".join(GITHUB[i : i + 4] for i in range(0, len(GITHUB), 4)), "w3X4", "GitHub token"),
    ("AWS access key id", "AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXA", "AWS access key id"),
    ("AWS key id lowercase", "akiaiosfodnn7example", "iosfodnn7exa", "AWS access key id"),
    ("AWS key id in groups", "AKIA IOSF ODNN 7EXA MPLE", "ODNN 7EXA", "AWS access key id"),
    ("AWS secret access key", AWS_SECRET, "bPxRfiCYEXAMPLEKEY", "AWS secret access key"),
    ("AWS secret, labelled", f"aws_secret_access_key = {AWS_SECRET}", "bPxRfiCYEXAMPLEKEY", "AWS secret access key"),
    ("PEM body without header", PEM_BODY, "4/M2bS1GB4t7NXp98C3S", "private key material"),
    ("private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
     "-----END RSA PRIVATE KEY-----", "Ppy1tPf9Cnzj4p4W", "private key block"),
    ("key block header with spaces", "----- BEGIN OPENSSH PRIVATE KEY -----", "BEGIN OPENSSH PRIVATE", "private key block"),
    ("JWT", JWT, "SflKxwRJSMeKKF2QT4fwpMeJf36", "JSON Web Token"),
    ("database URL with a password", "postgres://app:s3cr3t-pw@db.internal:5432/app", "s3cr3t-pw", "URL with a password"),
    ("base64 of a key", base64.b64encode(GITHUB.encode()).decode(), base64.b64encode(GITHUB.encode()).decode()[8:28],
     "GitHub token, base64-encoded"),
    ("password after a label", "password: Xk9#mQ2$vL7pR4tZ", "Xk9#mQ2$vL7pR4tZ", "credential after a label"),
    ("api_key after a label", "api_key=9f8e7d6c5b4a3f2e1d0c", "9f8e7d6c5b4a3f2e1d0c", "credential after a label"),
    ("Slack token", "xoxb-123456789012-abcdefghijkl", "123456789012-abcdefghijkl", "Slack token"),
    ("OpenAI key", "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2", "E5f6G7h8I9j0", "OpenAI API key"),
    # found by a review after the audit
    ("quoted value after a label", 'password = "Tr0ub4dor&3xQ"', "Tr0ub4dor&3xQ", "credential after a label"),
    ("JSON value after a label", '{"client_secret": "Xk9mP2vLq8Wz"}', "Xk9mP2vLq8Wz", "credential after a label"),
    ("URL with an empty user", "redis://:s3cretPass1@cache.internal:6379", "s3cretPass1", "URL with a password"),
    ("token glued to a word", "TOKEN_" + GITHUB, "s9T0u1V2w3X4", "GitHub token"),
    ("a whole OpenSSH key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n"
     "QyNTUxOQAAACBzU2hhcmVkLXNlY3JldC1rZXktZm9yLXRlc3Rz\n-----END OPENSSH PRIVATE KEY-----", "QyNTUxOQAAACBzU2hh",
     "private key block"),
]
FORMAT_IDS = [f[0] for f in FORMATS]

ORDINARY = [
    "commit 0171cc1a8b9e2f3d4c5b6a7980f1e2d3c4b5a697 fixed the ranking",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "The deploy uses token-based auth; the key rotation is weekly",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "primary key = (project, name)",
    "token: v2_release",
    "key: customer_id",
    "password: ${DB_PASSWORD}",
    "max_tokens: 4096",
    "token_count = 12345678",
    "sk-8 is our ticket prefix",
    "the AKIA prefix marks AWS keys",
    "ghp_ tokens are used by the CI to push images to the registry every night",
    "-----BEGIN CERTIFICATE-----",
    "postgres://localhost:5432/app",
    "https://user@github.com/org/repo",
    "eyJ is how base64-encoded JSON starts",
    "aGVsbG8gd29ybGQsIHRoaXMgaXMgZmluZQ==",
    "café ｆｕｌｌ-ｗｉｄｔｈ text and a zero\u200bwidth space are fine",
    # code and notes a review found refused by the first patterns
    "sk-learn-experiments-2024",
    "sk-2024-refactor-auth-module",
    "sorted(rows, key=operator.itemgetter(1))",
    "token=tokens[i+1]",
    "password=args.password2",
    "key=v1.2.3-beta4",
    "pwd: /home/user/project2",
    "key: 123e4567-e89b-12d3-a456-426614174000",
    "token: 0171cc1a8b9e2f3d4c5b6a7980f1e2d3c4b5a697",
    "key=user1@example.com",
    "cache key=users:42:profile",
    "MIIdleTimeoutMillisecondsForTheConnectionPoolOfTheServiceBackendXyz1",
]


@pytest.mark.parametrize("variation,text,fragment,kind", FORMATS, ids=FORMAT_IDS)
def test_every_format_and_variation_is_found_and_masked(variation, text, fragment, kind):
    assert secret_kind(text) == kind
    masked = mask_text(text)
    assert f"[secret removed: {kind}]" in masked
    assert fragment.lower() not in masked.lower()


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    assert find_secrets(text) == []
    assert mask_text(text) == text


def test_no_false_alarm_on_the_retrieval_corpora():
    "Every entity, observation, conversation turn and query the retrieval benchmarks hold is ordinary text."
    texts = []
    for folder in (BENCH, BENCH / "conversations"):
        for name in ("corpus.jsonl", "updates.jsonl", "queries.jsonl", "heldout.jsonl"):
            for line in (folder / name).read_text().splitlines():
                texts += [v for v in strings_in(json.loads(line))]
    assert len(texts) > 2000
    assert [t for t in texts if secret_kind(t)] == []


def strings_in(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)


def test_masking_reaches_inside_nested_values():
    value = {"query": f"SELECT '{GITHUB}'", "list": ["fine", JWT], "n": 3}
    masked = mask_secrets(value)
    assert masked["n"] == 3 and masked["list"][0] == "fine"
    assert GITHUB not in json.dumps(masked) and "[secret removed: JSON Web Token]" in masked["list"][1]


# The paths: (name, tool, arguments with {s} where the secret goes, the field the refusal names)
MCP_PATHS = [
    ("entity name", "create_entities", {"entities": [{"name": "{s}", "entityType": "t", "observations": []}]}, "entities[0].name"),
    ("entity type", "create_entities", {"entities": [{"name": "e", "entityType": "{s}", "observations": []}]}, "entities[0].entityType"),
    ("observation", "create_entities", {"entities": [{"name": "e", "entityType": "t", "observations": ["ok", "{s}"]}]},
     "entities[0].observations[1]"),
    ("added observation", "add_observations", {"observations": [{"entityName": "auth", "contents": ["{s}"]}]},
     "observations[0].contents[0]"),
    ("relation", "create_relations", {"relations": [{"from": "auth", "to": "{s}", "relationType": "uses"}]}, "relations[0].to"),
    ("relation type", "create_relations", {"relations": [{"from": "auth", "to": "db", "relationType": "{s}"}]},
     "relations[0].relationType"),
    ("event content", "append_event", {"content": "{s}"}, "content"),
    ("event kind", "append_event", {"content": "fine", "kind": "{s}"}, "kind"),
    ("checkpoint summary", "checkpoint", {"summary": "{s}"}, "summary"),
    ("project name", "create_entities", {"entities": [{"name": "e", "entityType": "t", "observations": []}], "project": "{s}"},
     "project"),
    ("claim object", "propose_claim", {"subject": "auth", "predicate": "password", "object": "{s}"}, "object"),
    ("claim evidence", "propose_claim", {"subject": "auth", "predicate": "port", "object": "8443", "evidence": ["{s}"]}, "evidence[0]"),
    ("read_query", "read_query", {"query": "SELECT '{s}' AS v"}, "query"),
    ("write_query", "write_query", {"query": "INSERT INTO notes (body) VALUES ('{s}')"}, "query"),
    ("destructive query", "destructive_query", {"query": "DELETE FROM notes WHERE body = '{s}'", "reason": "cleanup"}, "query"),
    ("destructive reason", "destructive_query", {"query": "DELETE FROM notes", "reason": "{s}"}, "reason"),
    ("view body", "create_view", {"name": "v", "select_sql": "SELECT '{s}' AS v", "description": "d"}, "select_sql"),
    ("view description", "create_view", {"name": "v", "select_sql": "SELECT 1", "description": "{s}"}, "description"),
    ("snapshot reason", "snapshot", {"reason": "{s}"}, "reason"),
    ("search_text pattern", "search_text", {"table": "notes", "pattern": "{s}"}, "pattern"),
    ("search_text where", "search_text", {"table": "notes", "pattern": "x", "where": "body != '{s}'"}, "where"),
    ("describe_table name", "describe_table", {"table": "{s}"}, "table"),
]
# fields with a short length cap: a secret longer than the cap is refused for its length, naming the cap
SHORT_FIELDS = {"kind": 64, "project": 128}
SQL_TOOLS = {"read_query", "write_query", "destructive_query", "create_view", "snapshot", "search_text", "describe_table"}


def filled(value, secret):
    "``value`` with every ``{s}`` replaced by the secret (SQL quotes doubled inside SQL text)."
    if isinstance(value, str):
        return value.replace("{s}", secret.replace("'", "''") if "'{s}'" in value else secret)
    if isinstance(value, list):
        return [filled(v, secret) for v in value]
    if isinstance(value, dict):
        return {k: filled(v, secret) for k, v in value.items()}
    return value


def file_text(path) -> str:
    "Every row of every table in the file, FTS shadow tables and the audit log included, as one lowercase text."
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump()).lower()
    finally:
        conn.close()


def newest_audit_row(path) -> dict:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return dict(conn.execute("SELECT * FROM sql_audit ORDER BY id DESC LIMIT 1").fetchone())
    finally:
        conn.close()


@pytest.fixture
def seeded(db_path, lexical):
    memory = Memory.open(db_path, project="p", actor="agent", config=lexical)
    memory.create_entities([{"name": "auth", "entityType": "service", "observations": ["port 8443"]},
                            {"name": "db", "entityType": "database", "observations": []}])
    memory.close()
    SqlTools(db_path, project="p", actor="agent").write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    return db_path


@pytest.mark.parametrize("path_name,tool,arguments,field", MCP_PATHS, ids=[p[0] for p in MCP_PATHS])
async def test_every_mcp_path_refuses_every_format(seeded, lexical, path_name, tool, arguments, field):
    backend = LocalBackend(seeded, actor="agent", config=lexical)
    try:
        async with Client(create_server(backend, project=None)) as client:
            for variation, secret, fragment, kind in FORMATS:
                call = filled(arguments, secret)
                if "project" not in call:
                    call["project"] = "p"
                with pytest.raises(ToolError) as refused:
                    await client.call_tool(tool, call)
                message = str(refused.value)
                if len(secret) > SHORT_FIELDS.get(field, len(secret)):
                    assert message.startswith(f"{field}: {len(secret)} characters is over the limit"), (variation, message)
                else:
                    assert f"looks like a credential ({kind})" in message and field in message, (variation, message)
                assert fragment.lower() not in message.lower(), variation
                assert fragment.lower() not in file_text(seeded), (variation, "stored")
                if tool in SQL_TOOLS:
                    row = newest_audit_row(seeded)
                    assert (row["tool"], row["ok"]) == (tool, 0)
                    assert f"[secret removed: {kind}]" in row["arguments"], (variation, row["arguments"])
                    assert "looks like a credential" in row["error"]
            # the same server still does its work with ordinary text
            await client.call_tool("append_event", {"content": "ordinary note", "project": "p"})
    finally:
        backend.close()


async def test_a_call_refused_for_its_arguments_is_audited_masked(seeded, lexical):
    "An MCP call refused before the SQL tools ran (an unknown argument) keeps its arguments masked in the audit log."
    backend = LocalBackend(seeded, actor="agent", config=lexical)
    try:
        async with Client(create_server(backend)) as client:
            with pytest.raises(ToolError, match="unknown argument"):
                await client.call_tool("read_query", {"query": "SELECT 1", "note": f"remember {GITHUB}", "project": "p"})
    finally:
        backend.close()
    row = newest_audit_row(seeded)
    assert row["tool"] == "read_query" and "[secret removed: GitHub token]" in row["arguments"]
    assert "s9t0u1v2w3x4" not in file_text(seeded)


def test_allow_secrets_turns_the_scanner_off(seeded, lexical):
    memory = Memory.open(seeded, project="p", actor="agent", allow_secrets=True, config=lexical)
    memory.append_event(f"rotated {GITHUB}", kind=GITHUB)
    memory.close()
    tools = SqlTools(seeded, project="p", actor="agent", allow_secrets=True)
    tools.write_query(f"INSERT INTO notes (body) VALUES ('{GITHUB}')")
    assert GITHUB.lower() in file_text(seeded)
    assert GITHUB in newest_audit_row(seeded)["arguments"]


def test_a_project_named_like_a_key_is_refused_by_every_opener(seeded, lexical):
    with pytest.raises(InvalidInput, match=r"project: looks like a credential \(GitHub token\)"):
        Memory.open(seeded, project=GITHUB, config=lexical)
    with pytest.raises(InvalidInput, match=r"project: looks like a credential \(GitHub token\)"):
        SqlTools(seeded, project=GITHUB)


@pytest.mark.parametrize("variation,secret,fragment,kind", FORMATS, ids=FORMAT_IDS)
def test_import_skips_lines_holding_a_secret(tmp_path, variation, secret, fragment, kind):
    source = tmp_path / "graph.jsonl"
    lines = [
        {"type": "entity", "name": "fine", "entityType": "t", "observations": ["ordinary"]},
        {"type": "entity", "name": "leaky", "entityType": "t", "observations": [secret]},
        {"type": "relation", "from": "fine", "to": secret, "relationType": "uses"},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "memory.db"
    result = CliRunner().invoke(cli, ["import", str(source), "--db", str(db), "--project", "p"],
                                env={"DATASETTE_MEMORY_NO_VECTORS": "1"})
    assert result.exit_code == 0, result.output
    assert f"looks like a credential ({kind})" in result.output
    assert fragment.lower() not in file_text(db)
    assert "ordinary" in file_text(db)


def entity_path(name, page, project="p"):
    return f"{page}?{urlencode({'project': project, 'name': name}, quote_via=quote)}"


@pytest.fixture
async def datasette(seeded):
    config = datasette_config("datasette.yaml", "memory")
    grants = {action: True for action in ("insert-row", "update-row", "create-table", "execute-sql", "execute-write-sql")}
    config = {**config, "permissions": {**config.get("permissions", {}), **grants,
                                        "memory-curate": {"id": "carol"}, "memory-approve": {"id": "alice"}}}
    datasette = Datasette([str(seeded)], config=config)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    return datasette


SAME_SITE = {"Sec-Fetch-Site": "same-origin"}


def page_paths(datasette):
    "The memory pages' forms that keep text: (name, path, fields with {s}), for the curator carol or the approver alice."
    return [
        ("edit observation", "carol", entity_path("auth", "/-/memory/entity/edit-observation"),
         {"old": "port 8443", "new": "{s}"}),
        ("rename", "carol", entity_path("auth", "/-/memory/entity/rename"), {"new_name": "{s}"}),
        ("record a fact", "alice", "/-/memory/facts/new",
         {"project": "p", "subject": "auth", "predicate": "password", "object": "{s}", "rationale": "seen"}),
        ("fact rationale", "alice", "/-/memory/facts/new",
         {"project": "p", "subject": "auth", "predicate": "port", "object": "8443", "rationale": "{s}"}),
    ]


@pytest.mark.parametrize("step", ["confirm", "apply"])
async def test_the_memory_pages_forms_refuse_every_format(datasette, seeded, step):
    for name, actor, path, fields in page_paths(datasette):
        for variation, secret, fragment, kind in FORMATS:
            response = await datasette.client.post(
                path, data={**filled(fields, secret), "step": step}, actor={"id": actor}, headers=SAME_SITE,
                follow_redirects=True,
            )
            assert response.status_code in (200, 400), (name, variation, response.status_code)
            assert f"looks like a credential ({kind})" in response.text.replace("&#39;", "'"), (name, variation)
            assert fragment.lower() not in file_text(seeded), (name, variation)


async def test_datasettes_own_write_api_refuses_every_format_on_the_agents_tables(datasette, seeded):
    attempts = [
        ("/memory/notes/-/insert", lambda s: {"row": {"body": s}}),
        ("/memory/notes/-/upsert", lambda s: {"rows": [{"id": 1, "body": s}]}),
        ("/memory/-/create", lambda s: {"table": "leaks", "row": {"body": s}}),
        ("/memory/-/execute-write", lambda s: {"sql": f"INSERT INTO notes (body) VALUES ('{s}')"}),
    ]
    for path, body in attempts:
        for variation, secret, fragment, kind in FORMATS:
            response = await datasette.client.post(path, json=body(secret), actor={"id": "root"})
            assert response.status_code == 400, (path, variation, response.text[:200])
            assert f"looks like a credential ({kind})" in response.json()["errors"][0]
            assert fragment.lower() not in file_text(seeded), (path, variation)
    ordinary = await datasette.client.post("/memory/notes/-/insert", json={"row": {"body": "ordinary"}}, actor={"id": "root"})
    assert ordinary.status_code == 201, ordinary.text


async def test_a_write_sent_under_another_content_type_is_read_as_datasette_reads_it(datasette, seeded):
    "Datasette reads a body that is not JSON as a form, whatever its content type says: so does the guard."
    sql = f"INSERT INTO notes (body) VALUES ('{GITHUB}')"
    encoded = "sql=" + "".join(f"%{b:02X}" for b in sql.encode())
    for content_type in ("text/plain", "application/octet-stream", "application/x-www-form-urlencoded"):
        response = await datasette.client.post(
            "/memory/-/execute-write", content=encoded, headers={"content-type": content_type}, actor={"id": "root"}
        )
        assert response.status_code == 400, (content_type, response.text[:200])
    as_json = json.dumps({"sql": sql.replace("ghp_", "\\u0067hp_")}).replace("\\\\u0067", "\\u0067")
    response = await datasette.client.post(
        "/memory/-/execute-write", content=as_json, headers={"content-type": "application/x-www-form-urlencoded"},
        actor={"id": "root"},
    )
    assert response.status_code == 400
    assert "s9t0u1v2w3x4" not in file_text(seeded)


async def test_a_body_over_datasettes_limit_is_refused_unread(seeded):
    datasette = Datasette([str(seeded)], settings={"max_post_body_bytes": 1000})
    datasette.root_enabled = True
    await datasette.invoke_startup()
    response = await datasette.client.post("/memory/notes/-/insert", json={"row": {"body": "x" * 5000}}, actor={"id": "root"})
    assert response.status_code == 413 and "max_post_body_bytes" in response.json()["error"]


# The prefilter: one pattern (SUSPECT) decides which text the full patterns scan at all, and
# must never skip a text holding a finding. Texts are generated near each pattern's edge (its
# prefixes in any case, labels and values, keys in groups, runs of key characters around the
# lengths the patterns need, base64 of any of them), between characters normalization changes
# (full-width, zero-width, ligatures); each family alone catches a prefilter missing its part.
PIECES = [
    *[text for _, text, _, _ in FORMATS], *ORDINARY,
    "AKIA", "ASIA", "ghp_", "gho_", "github_pat_", "glpat-", "xoxb-", "sk-", "sk-ant-", "sk-proj-", "rk_live_", "sk_live_",
    "AIza", "npm_", "pypi-AgEIcHlwaS5vcmc", "dstok_", "eyJ", ".eyJ", "MII", "BEGIN", "END", "PRIVATE", "KEY", "-----",
    "password", "passwd", "passphrase", "secret", "api_key", "apikey", "access-key", "client_secret", "auth_token",
    "token", "key", "pwd", "://", ":", "=", "=>", "@", "/", "+", ".", "-", "_", '"', "'", "`", " ", "\n", "\t",
]
NORMALIZED_AWAY = ["\u200b", "\u00ad", "\ufeff", "\u202e", "\uff41", "\uff21", "\uff13", "\uff1a", "\uff1d", "\ufb01", "\u212a", "\u017f"]
KEY_CHARACTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-="
PREFIXES = ["AKIA", "ASIA", "ghp_", "github_pat_", "glpat-", "xoxb-", "sk-", "sk-ant-", "sk-proj-", "rk_live_", "AIza", "npm_",
            "pypi-AgEIcHlwaS5vcmc", "dstok_", "eyJ", "MII"]
LABELS = ["password", "passwd", "passphrase", "secret", "api_key", "apikey", "access-key", "private_key", "client_secret",
          "auth_token", "access_token", "token", "key", "pwd"]


def text_families():
    "Strategies for texts near what each pattern finds, by family; ``mixed`` joins pieces of every family."

    def cased(texts):
        return st.sampled_from(texts).flatmap(lambda t: st.sampled_from([t, t.lower(), t.upper(), t.swapcase()]))

    def run(low, high, alphabet=KEY_CHARACTERS):
        return st.text(alphabet=alphabet, min_size=low, max_size=high)

    families = {
        "slices of secrets": st.sampled_from(PIECES).flatmap(
            lambda text: st.tuples(st.integers(0, len(text)), st.integers(0, len(text))).map(lambda ij: text[min(ij) : max(ij)])
        ),
        "prefixes and runs": st.tuples(cased(PREFIXES), run(0, 70)).map("".join),
        "keys in groups": st.tuples(cased(PREFIXES), st.integers(2, 8), st.lists(run(2, 8, "ABCDEFGH0123456789xyz"), min_size=2, max_size=20)).map(
            lambda t: " ".join([t[0]] + [(group * 8)[: t[1]] for group in t[2]])
        ),
        "labels and values": st.tuples(cased(LABELS), st.sampled_from(["", '"', "'"]), st.sampled_from([":", "=", "=>", " = ", ": "]),
                                       st.sampled_from(["", '"', "'"]), run(4, 30, KEY_CHARACTERS + "#$%&!*")).map("".join),
        "weak labels and long values": st.tuples(cased(["key", "token", "pwd"]), st.sampled_from(["=", ": "]),
                                                 run(14, 23, "ABCDEFGHIJKabcdefghijk0123456789")).map("".join),
        "PEM bodies in groups": st.tuples(st.integers(3, 6), st.lists(run(6, 6, "ABCDEFabcdef0123456789+/"), min_size=10, max_size=16)).map(
            lambda t: "MII " + " ".join(group[: t[0]] for group in t[1])
        ),
        "JWTs": st.tuples(run(5, 12), run(5, 12), run(10, 14)).map(lambda p: f"eyJ{p[0]}.eyJ{p[1]}.{p[2]}"),
        "key blocks": st.tuples(st.integers(3, 6), st.sampled_from(["", " "]), st.sampled_from(["", "RSA ", "OPENSSH "])).map(
            lambda p: f"{'-' * p[0]}{p[1]}BEGIN {p[2]}PRIVATE KEY{p[1]}{'-' * p[0]}"
        ),
        "URLs": st.tuples(run(0, 6, "abc"), run(4, 12, "abcXYZ123!"), run(1, 8, "abc.")).map(lambda p: f"postgres://{p[0]}:{p[1]}@{p[2]}"),
        "key characters": run(1, 48),
    }
    families["base64"] = st.one_of(*families.values()).map(lambda text: base64.b64encode(text.encode()).decode())
    around = st.one_of(st.sampled_from(["", " ", "see ", " in prod", "\n", "x", "_"] + NORMALIZED_AWAY), st.text(max_size=4))
    families = {name: st.tuples(around, family, around).map("".join) for name, family in families.items()}
    families["mixed"] = st.lists(st.one_of(around, cased(PIECES), *families.values()), min_size=1, max_size=6).map("".join)
    return families


@pytest.mark.parametrize("family", list(text_families()))
def test_the_prefilter_never_skips_a_text_the_full_scan_would_flag(family):
    @settings(max_examples=400, deadline=None)
    @given(text_families()[family])
    def check(text):
        normalized = normalize(text)
        if SUSPECT.search(normalized) is None:
            assert full_scan(normalized) == [], text
        assert suspect(normalized) == (SUSPECT.search(normalized) is not None)  # its lower-case twin, on ASCII text
        assert find_secrets(text) == full_scan(normalized)

    check()


def test_the_prefilter_passes_every_format_and_skips_plain_words():
    for variation, text, _, _ in FORMATS:
        assert SUSPECT.search(normalize(text)), variation
    plain = ["listens on port 8080", "owned by team 42", "deployed with blue-green rollout, region 3", "service", "name"]
    assert [text for text in plain if SUSPECT.search(text)] == []
