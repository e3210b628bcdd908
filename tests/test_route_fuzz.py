"""
Every memory route, fuzzed: arbitrary path segments and query strings, GET and
POST, from anyone. Whatever is asked, the answer is never a 5xx, and an error
is JSON where a script asked (a ``.json`` path, a JSON body, the MCP endpoint)
and a page with the memory navigation where a person did.
"""

import asyncio
import hashlib
import json
from urllib.parse import quote

import pytest
from datasette.app import Datasette
from datasette.plugins import pm
from hypothesis import HealthCheck, given, settings, strategies as st

from datasette_memory import Config, SearchSettings
from datasette_memory.cli.serve import People, serve_config

from .governance import store_governed

PEOPLE = People("olive", approvers=("olive",), curators=("olive",))
ACTORS = ("anonymous", "person", "token")
# every name a memory route reads from the query string or a form, and a few it does not
PARAMETERS = (
    "project", "q", "limit", "budget", "expand", "as_of", "check", "name", "index", "before", "entity", "kind", "actor",
    "from", "to", "text", "status", "subject", "predicate", "object", "as_of_valid", "as_of_recorded", "include_proposed",
    "token", "tools", "step", "rationale", "valid_from", "valid_to", "effective", "old", "new", "observation", "new_name",
    "into", "relation", "csrftoken", "_db", "format", "id",
)
# values that have broken servers before: numbers past SQLite's range, a NUL, bidi and zero-width characters, a long run
AWKWARD = st.sampled_from([
    "", " ", "0", "-1", "-9223372036854775809", "9223372036854775807", "9223372036854775808", "1" * 400, "1e309", "nan",
    "\x00", "%00", "%", "%zz", "..", "/", "?", "#", "&", "=", "~", "p", "auth", "approve", "claims", "facts", "1", "2",
    "2025-01-01", "9999-12-31T23:59:59Z", "0000-00-00", "\u202eevil", "a\u200bb", "\U000e0041", "\ud7ff", "x" * 5000,
    "[\"auth\", \"uses\", \"db\"]", "null", "{}", "\u0660\u0661", "１２",
])
values = AWKWARD | st.text(max_size=30) | st.integers().map(str) | st.integers(min_value=10**18).map(str)
segments = AWKWARD | st.text(st.characters(blacklist_characters="/"), min_size=1, max_size=30)


def memory_routes(datasette):
    "The pattern of every route the plugin registers: a route added later is fuzzed too."
    patterns = []
    for hook in pm.hook.register_routes.get_hookimpls():
        if hook.function.__module__.startswith("datasette_memory."):
            patterns.extend(pattern for pattern, _ in hook.function(datasette=datasette))
    return patterns


def encode(path: str) -> str:
    "A generated path as a client sends it: every character but the slashes percent-encoded (a NUL as %00)."
    return quote(path, safe="/")


def paths(patterns):
    """
    Paths that match each route (its parameters arbitrary), paths with one
    segment of a known path replaced, and percent escapes sent as they are.
    """
    matching = st.one_of(*(st.from_regex(pattern, fullmatch=True).filter(lambda p: "\n" not in p) for pattern in patterns)).map(encode)
    known = st.sampled_from([
        "/-/memory", "/-/memory/review", "/-/memory/claims/1", "/-/memory/facts/1", "/-/memory/claims/1/approve",
        "/-/memory/facts/1/supersede", "/-/memory/entity/rename", "/-/memory/facts/new", "/-/memory/ledger",
    ])

    def replace_one(path, index, segment):
        "The path with one segment after /-/memory replaced by ``segment``, or, if it has none, one added."
        parts = path.split("/")
        if len(parts) == 3:
            return f"{path}/{segment}"
        parts[3 + index % (len(parts) - 3)] = segment
        return "/".join(parts)

    changed = st.builds(replace_one, known, st.integers(1, 5), segments.map(lambda s: quote(s, safe=""))) | st.builds(
        replace_one, known, st.integers(1, 5), st.sampled_from(["%00", "%", "%zz", "%2F", "%2e%2e", "~78", "abc"])
    )
    json_twin = st.booleans()
    return st.tuples(matching | changed, json_twin).map(lambda t: t[0] + ".json" if t[1] and not t[0].endswith(".json") else t[0])


# what a page is usually given, so a fuzzed parameter beside them reaches past the first check
USUAL = st.sampled_from([
    [], [("project", "p")], [("project", "p"), ("name", "auth")], [("project", "p"), ("name", "a/b \u202e?&")],
    [("project", "p"), ("q", "auth")], [("as_of", "3")], [("step", "apply"), ("rationale", "because")],
    [("project", "p"), ("name", "auth"), ("step", "confirm"), ("index", "0"), ("new_name", "gateway"), ("into", "a/b \u202e?&")],
])
fuzzed = st.lists(st.tuples(st.sampled_from(PARAMETERS) | st.text(max_size=8), values), max_size=5)
# the fuzzed parameters before or after the usual ones: Datasette reads a repeated parameter's first value
queries = st.builds(lambda usual, more, first: more + usual if first else usual + more, USUAL, fuzzed, st.booleans())
bodies = st.one_of(
    st.none(),
    st.builds(lambda fields: ("form", fields), queries),
    st.builds(lambda data: ("json", data), st.dictionaries(st.sampled_from(PARAMETERS), values | st.integers() | st.none(), max_size=4)),
    st.tuples(st.sampled_from(["form", "json"]), st.binary(max_size=40) | st.sampled_from([b"[1]", b"\"x\"", b"{", b"%ff=1", b"1" * 5000])),
)
CONTENT_TYPES = {"form": "application/x-www-form-urlencoded", "json": "application/json"}
requests = st.fixed_dictionaries({
    "method": st.sampled_from(["GET", "POST"]),
    "actor": st.sampled_from(ACTORS),
    "query": queries,
    "body": bodies,
    "same_site": st.booleans(),
    "csrftoken": st.booleans(),
})


def query_string(pairs) -> str:
    return "&".join(f"{quote(name, safe='')}={quote(value, safe='')}" for name, value in pairs)


async def send(datasette, token, path, request):
    "One fuzzed request through Datasette's in-process client."
    url = path + ("?" + query_string(request["query"]) if request["query"] else "")
    headers = {"Sec-Fetch-Site": "same-origin" if request["same_site"] else "cross-site"}
    arguments = {"actor": {"id": "olive"}} if request["actor"] == "person" else {}
    if request["actor"] == "token":
        headers["Authorization"] = f"Bearer {token}"
    if request["method"] == "GET":
        return await datasette.client.get(url, headers=headers, **arguments)
    kind, body = request["body"] or ("form", [])
    headers["Content-Type"] = CONTENT_TYPES[kind]
    if isinstance(body, bytes):
        content = body  # not what its content type says: a form that is not one, JSON that is not JSON
    elif kind == "form":
        content = query_string(body + ([("csrftoken", "x")] if request["csrftoken"] else [])).encode()
    else:
        content = json.dumps(body).encode()
    return await datasette.client.post(url, content=content, headers=headers, **arguments)


def script_asked(path: str, request) -> bool:
    "Whether the request came from a script, which gets errors as JSON: a .json path, a JSON body, or MCP."
    if path.endswith(".json") or path.rstrip("/").endswith("/-/memory/mcp"):
        return True
    return request["method"] == "POST" and (request["body"] or ("form",))[0] == "json"


def check(path, request, response):
    assert response.status_code < 500, (path, request, response.status_code, response.text[:500])
    if response.status_code < 400:
        return
    content_type = response.headers.get("content-type", "")
    if request["method"] == "POST" and not request["same_site"] and response.status_code == 403 and "text/html" in content_type:
        return  # Datasette's own refusal of a cross-site POST, before any route: a page, whatever was asked
    if script_asked(path, request):
        assert content_type.startswith("application/json"), (path, request, response.status_code, response.text[:300])
        json.loads(response.text)  # an error a script can read
    else:
        assert content_type.startswith("text/html"), (path, request, response.status_code, response.text[:300])
        assert 'href="/-/memory/review"' in response.text, "an error page keeps the memory navigation"


def store(db_path):
    "Two entities, one with an awkward name (a slash, a bidi control, query characters), and the governed tier of :func:`store_governed`."
    store_governed(db_path, target="a/b \u202e?&", observation="x\u200by").close()


@pytest.fixture
def stored(db_path):
    store(db_path)


async def served(db_path):
    config = serve_config(db_path, Config(search=SearchSettings(semantic=False)), PEOPLE, hashlib.sha256(b"x").hexdigest(), True)
    datasette = Datasette([str(db_path)], config=config)
    await datasette.invoke_startup()
    return datasette, await datasette.create_token("claude")


def test_no_memory_route_answers_5xx(stored, db_path):
    with asyncio.Runner() as runner:
        datasette, token = runner.run(served(db_path))
        patterns = memory_routes(datasette)
        assert patterns

        @settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
        @given(paths(patterns), requests)
        def fuzz(path, request):
            check(path, request, runner.run(send(datasette, token, path, request)))

        try:
            fuzz()
        finally:
            runner.run(datasette.invoke_shutdown())


def test_the_fuzz_reaches_every_route(datasette):
    "Every route the plugin registers is under /-/memory, where the fuzz and the memory error pages both look."
    patterns = memory_routes(datasette)
    assert len(patterns) >= 15 and all(p.startswith("^/-/memory") for p in patterns), patterns


@pytest.mark.parametrize("path", ["/-/memory/claims/abc", "/-/memory/facts/abc", "/-/memory/claims/%00", "/-/memory/facts/-1"])
async def test_a_malformed_id_is_a_page_saying_so(datasette, path):
    response = await datasette.client.get(path)
    assert response.status_code in (400, 404), response.text[:300]
    assert response.headers["content-type"].startswith("text/html")
    assert "/-/memory/claims/12" in response.text or "number" in response.text
    assert 'href="/-/memory/review"' in response.text


@pytest.mark.parametrize("path", ["/-/memory/claims/abc.json", "/-/memory/facts/abc.json", "/-/memory/claims/%E2%80%AE.json"])
async def test_a_malformed_id_is_a_json_error_for_scripts(datasette, path):
    response = await datasette.client.get(path)
    assert response.status_code in (400, 404)
    body = response.json()
    assert body["ok"] is False and body["field"] == "id"


@pytest.mark.parametrize("path", ["/-/memory/nothing-here", "/-/memory/claims/1/2/3", "/-/memory/entity/rename/more"])
async def test_a_path_no_memory_route_has_is_a_memory_404(datasette, path):
    page = await datasette.client.get(path)
    assert page.status_code == 404 and 'href="/-/memory/review"' in page.text
    script = await datasette.client.get(path + ".json")
    assert script.status_code == 404 and script.json()["ok"] is False


@pytest.mark.parametrize("method,path,arguments,status,kind", [
    # what the fuzz found, each once
    ("GET", "/-/memory/ledger.json?before=9223372036854775808", {}, 400, "json"),  # past SQLite's integers
    ("POST", "/-/memory/facts/new", {"content": b"\xd6=1", "headers": {"Content-Type": "application/x-www-form-urlencoded"}}, 400, "html"),
    ("POST", "/-/memory/facts/new", {"json": {"subject": "a"}}, 400, "json"),  # the form's page, given a script's JSON
    ("POST", "/-/memory/entity.json", {"data": {"name": "x"}}, 400, "json"),  # a form posted to a JSON path
    ("GET", "/-/memory/facts", {}, 405, "html"),  # the JSON API's address, opened in a browser
    ("POST", "/-/memory/nothing-here", {"data": {"a": "b"}}, 404, "html"),  # not Datasette's row page for a database '-'
])
async def test_what_the_fuzz_found(stored, db_path, method, path, arguments, status, kind):
    datasette, _ = await served(db_path)
    response = await datasette.client.request(method, path, actor={"id": "olive"}, **arguments)
    await datasette.invoke_shutdown()
    assert response.status_code == status, response.text[:300]
    if kind == "json":
        assert response.json()["ok"] is False
    else:
        assert response.headers["content-type"].startswith("text/html") and 'href="/-/memory/review"' in response.text


async def test_the_mcp_endpoint_answers_in_json_whatever_the_method(stored, db_path):
    datasette, token = await served(db_path)
    for method in ("GET", "PUT", "OPTIONS"):
        response = await datasette.client.request(method, "/-/memory/mcp", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 405 and "POST" in response.json()["error"], response.text
    await datasette.invoke_shutdown()
