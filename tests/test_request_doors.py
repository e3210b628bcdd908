"""Doors a request's spelling opened: the database named another way, and a Host that is not this server's.

The secret guard decides which database a write reaches as Datasette's router
does (the raw path, ``base_url``, tilde decoding, the database's route), so
every spelling Datasette accepts is refused like the plain one: each route
Datasette has under a database, read from its own route table, and the main
write routes proven to reach the file with ordinary text first. The Host check
refuses a request whose ``Host`` names neither this machine nor a name the
server was given, on every path, through ``datasette.client`` and through a
real ``serve``.
"""

import http.client
import json
import re
import socket

import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from datasette.utils import tilde_encode

from datasette_memory import Config, InvalidInput, Memory, SearchSettings
from datasette_memory.cli import cli
from datasette_memory.plugin.routing import routed_database
from datasette_memory.sqltools import SqlTools

from .governance import as_actor
from .serving import serving
from .test_secrets import GITHUB, file_text

WRITE_ACTIONS = ["insert-row", "update-row", "delete-row", "alter-table", "create-table", "execute-sql",
                 "execute-write-sql", "store-query", "set-column-type", "drop-table"]
ADD_NOTE = {"sql": "INSERT INTO notes (body) VALUES (:body)", "write": True}


def memory_file(folder, stem: str):
    "A memory file named ``<stem>.db`` with a table of the agent's own, ``notes``, holding one row."
    path = folder / f"{stem}.db"
    Memory.open(path).close()
    tools = SqlTools(path, project="p", actor="agent")
    tools.write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    tools.write_query("INSERT INTO notes (body) VALUES ('first')")
    return path


async def serve_in_process(path, **settings) -> Datasette:
    "Datasette on the memory file, its plugin pointed at it, every write granted to everyone, root enabled."
    name = path.name.removesuffix(".db")
    config = {
        "permissions": {action: True for action in WRITE_ACTIONS},
        "plugins": {"datasette-memory": {"database": name}},
        "databases": {name: {"queries": {"add_note": ADD_NOTE}}},
    }
    datasette = Datasette([str(path)], config=config, settings=settings or None)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    return datasette


# ---------------------------------------------------------------- the database, however it is spelled

NAMES = ["x", "memory", "my.memory", "my memory", "mémoire"]


def spellings(name: str) -> dict[str, str]:
    "Every way of writing ``name`` in a path that Datasette routes to it."
    data = name.encode("utf-8")
    must = {i for i, b in enumerate(data) if tilde_encode(chr(b)) != chr(b) or b >= 0x80}
    forms = {
        "plain": tilde_encode(name),
        "every byte, upper hex": "".join(f"~{b:02X}" for b in data),
        "every byte, lower hex": "".join(f"~{b:02x}" for b in data),
        "mixed": "".join(
            (f"~{b:02x}" if i % 4 == 1 else f"~{b:02X}") if i % 2 or i in must else chr(b) for i, b in enumerate(data)
        ),
    }
    if " " in name:
        forms["space as ~20"] = tilde_encode(name).replace("+", "~20")
    return forms


def spelled(name: str) -> list[tuple[str, str]]:
    return [(f"{name}: {form}", spelling) for form, spelling in spellings(name).items()]


def write_routes(db: str, n: int) -> list[tuple[str, str, dict]]:
    "Datasette's writes that carry text into the file: (label, path, request arguments with ``{v}`` for the text)."
    return [
        ("insert", f"/{db}/notes/-/insert", {"json": {"row": {"body": "{v}"}}}),
        ("insert, ?_db", f"/{db}/notes/-/insert?_db=other", {"json": {"row": {"body": "{v}"}}}),
        ("upsert", f"/{db}/notes/-/upsert", {"json": {"rows": [{"id": 1, "body": "{v}"}]}}),
        ("update", f"/{db}/notes/1/-/update", {"json": {"update": {"body": "{v}"}}}),
        ("create", f"/{db}/-/create", {"json": {"table": f"made_{n}", "row": {"body": "{v}"}}}),
        ("alter", f"/{db}/notes/-/alter", {"json": {"operations": [{"op": "add_column", "args": {"name": "{v}"}}]}}),
        ("execute-write", f"/{db}/-/execute-write", {"json": {"sql": "INSERT INTO notes (body) VALUES ('{v}')"}}),
        ("stored write query, form", f"/{db}/add_note", {"data": {"body": "{v}"}}),
        ("stored write query, .json", f"/{db}/add_note.json", {"json": {"body": "{v}"}}),
        ("stored write query, ?_json", f"/{db}/add_note?_json=1", {"data": {"body": "{v}"}}),
    ]


def filled(value, text: str):
    if isinstance(value, dict):
        return {k: filled(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [filled(v, text) for v in value]
    return value.replace("{v}", text) if isinstance(value, str) else value


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("actor", ["root", "root token"])
async def test_every_spelling_of_the_memory_database_is_guarded(tmp_path, name, actor):
    "The control first: ordinary text through the same spelling reaches the file, then the token is refused."
    path = memory_file(tmp_path, name)
    datasette = await serve_in_process(path)
    options = await as_actor(datasette, actor)
    n = 0
    for form, db in spelled(name):
        for label, route, arguments in write_routes(db, n):
            n += 1
            marker = f"ordinary_{n}"
            ordinary = await datasette.client.post(route, **filled(arguments, marker), **options)
            assert marker in file_text(path), (form, label, ordinary.status_code, ordinary.text[:300])
            refused = await datasette.client.post(route, **filled(arguments, GITHUB), **options)
            assert refused.status_code == 400, (form, label, refused.status_code, refused.text[:300])
            assert "looks like a credential (GitHub token)" in refused.json()["error"], (form, label)
            assert GITHUB.lower() not in file_text(path), (form, label)


def sample_path(pattern: str, database: str, format: str = "") -> str | None:
    "A path Datasette's ``pattern`` matches, naming ``database``, or None if the pattern takes no database."
    if "(?P<database>" not in pattern:
        return None
    path = re.sub(r"\(\\\.\(\?P<format>[^)]*\)\)\?", format, pattern)
    values = {"database": database, "table": "notes", "pks": "1", "query": "add_note", "format": format.lstrip(".")}
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: values[m.group(1)], path)
    return path.rstrip("$").replace("\\.", ".").replace("\\/", "/")


async def test_every_route_datasette_has_under_a_database_is_guarded_in_every_spelling(tmp_path):
    "Datasette's own route table, so a route a later Datasette adds is covered or fails here."
    path = memory_file(tmp_path, "my.memory")
    datasette = await serve_in_process(path)
    tried = 0
    for pattern, _ in datasette._routes():
        for form, db in spelled("my.memory"):
            for format in ("", ".json"):
                route = sample_path(pattern.pattern, db, format)
                if route is None or not pattern.match(route) or "(?P<format>" not in pattern.pattern and format:
                    continue
                response = await datasette.client.post(route, json={"row": {"body": GITHUB}, "sql": GITHUB},
                                                       actor={"id": "root"})
                tried += 1
                assert response.status_code == 400, (pattern.pattern, form, route, response.status_code)
                assert "looks like a credential" in response.json()["error"], (route, response.text[:200])
    assert tried > 100
    assert GITHUB.lower() not in file_text(path)


async def test_every_route_datasette_has_names_its_database_first(tmp_path):
    "What routing.py relies on: the database is the first segment of every route that has one."
    datasette = await serve_in_process(memory_file(tmp_path, "memory"))
    with_database = [pattern.pattern for pattern, _ in datasette._routes() if "(?P<database>" in pattern.pattern]
    assert len(with_database) > 20
    for pattern in with_database:
        assert re.match(r"\^?/\(\?P<database>\[\^\\/\\\.\]\+\)(/|\\\.|\(\\\.|\$)", pattern), pattern


async def test_a_database_under_a_prefix_or_a_route_of_its_own_is_guarded(tmp_path):
    path = memory_file(tmp_path, "x")
    prefixed = await serve_in_process(path, base_url="/prefix/")
    for db in ("x", "~78"):
        response = await prefixed.client.post(f"/{db}/notes/-/insert", json={"row": {"body": GITHUB}}, actor={"id": "root"})
        assert response.status_code == 400, (db, response.text[:200])
    ordinary = await prefixed.client.post("/~78/notes/-/insert", json={"row": {"body": "prefixed"}}, actor={"id": "root"})
    assert ordinary.status_code == 201, ordinary.text
    rerouted = await serve_in_process(path)
    rerouted.get_database("x").route = "elsewhere"
    response = await rerouted.client.post("/elsewhere/notes/-/insert", json={"row": {"body": GITHUB}}, actor={"id": "root"})
    assert response.status_code == 400, response.text[:200]
    ordinary = await rerouted.client.post("/elsewher~65/notes/-/insert", json={"row": {"body": "rerouted"}},
                                          actor={"id": "root"})
    assert ordinary.status_code == 201, ordinary.text
    assert GITHUB.lower() not in file_text(path)


async def test_a_spelling_datasette_does_not_route_stores_nothing(tmp_path):
    "Percent-encoding is not Datasette's spelling: it answers with a redirect to the tilde form, and writes nothing."
    path = memory_file(tmp_path, "x")
    datasette = await serve_in_process(path)
    for route in ("/%78/notes/-/insert", "/%7E78/notes/-/insert", "/x%2Fnotes/-/insert", "/X/notes/-/insert"):
        response = await datasette.client.post(route, json={"row": {"body": GITHUB}}, actor={"id": "root"})
        assert response.status_code >= 300, (route, response.status_code)
    assert GITHUB.lower() not in file_text(path)


async def test_routed_database_reads_the_path_as_datasette_does(tmp_path):
    datasette = await serve_in_process(memory_file(tmp_path, "my.memory"))
    cases = {
        "/my~2Ememory/notes/-/insert": "my.memory",
        "/my~2ememory.json": "my.memory",
        "/~6Dy~2Ememor~79": "my.memory",
        "/my.memory/notes/-/insert": None,  # Datasette reads the database "my" here
        "/my": None,
        "/-/memory/search.json": None,
        "/": None,
        "/my%2Ememory/notes/-/insert": None,
    }
    for raw, expected in cases.items():
        scope = {"type": "http", "path": raw, "raw_path": raw.encode("ascii")}
        assert routed_database(datasette, scope) == expected, raw


def test_a_write_sent_with_its_method_in_lower_case_is_guarded(served):
    "Datasette finds a view's handler by the method in lower case; h11 passes the method on as it was sent."
    path, base, _ = served
    token = CliRunner().invoke(cli, ["create-token", "root", "--db", str(path)]).output.strip()
    authorized = {"Authorization": f"Bearer {token}"}
    for method in ("post", "Post", "POST"):
        status, body = over_socket(base, "/~6Demory/notes/-/insert", method=method, body={"row": {"body": method}},
                                   headers=authorized)
        assert status == 201 and f"'{method.lower()}'" in file_text(path), (method, status, body[:200])
        status, body = over_socket(base, "/~6Demory/notes/-/insert", method=method, body={"row": {"body": GITHUB}},
                                   headers=authorized)
        assert status == 400 and "looks like a credential" in body, (method, status, body[:200])
    assert GITHUB.lower() not in file_text(path)


# ---------------------------------------------------------------- the Host a request names

OBSERVATION = "listens on port 8443"
FOREIGN_HOSTS = [
    "attacker.example:8001", "attacker.example", "ATTACKER.Example.:8001", "127.0.0.1.attacker.example",
    "localhost.attacker.example:8001", "evil.localhost", "10.0.0.5:8001", "[::2]:8001", "::1",
    "127.0.0.1:8001@attacker.example", "attacker.example:http", "",
]
LOOPBACK_HOSTS = [
    "localhost", "localhost:8001", "LOCALHOST", "localhost.", "LocalHost.:8001", "127.0.0.1", "127.0.0.1:8001",
    "127.0.0.2:8001", "127.255.255.254", "[::1]:8001", "[::1]", "[0:0::1]:8001", "[::ffff:127.0.0.1]:8001",
]
DATASETTE_ROUTES = [
    "/memory.json", "/memory/entities.json", "/memory/observations.json", "/memory/-/query.json?sql=select+1",
    "/", "/memory", "/-/versions.json", "/-/static/app.css", "/no/such/page",
]


def seeded_file(folder):
    path = folder / "memory.db"
    memory = Memory.open(path, project="default", actor="agent")
    memory.create_entities([{"name": "auth", "entityType": "service", "observations": [OBSERVATION]}])
    memory.close()
    return path


def memory_routes() -> list[str]:
    "A path for every route the plugin registers under /-/memory, with and without .json where it has both."
    from datasette.plugins import pm

    paths = []
    for routes in pm.hook.register_routes(datasette=Datasette([])):
        for pattern, _ in routes or []:
            if not pattern.startswith("^/-/memory"):
                continue
            for format in ("", ".json"):
                path = re.sub(r"\(\\\.\(\?P<format>json\)\)\?", format, pattern)
                path = re.sub(r"\(\?P<kind>[^)]*\)", "claims", path)
                path = re.sub(r"\(\?P<\w+>[^)]*\)", "1", path)
                path = path.strip("^$").replace("\\.", ".").replace("/?", "")
                if re.match(pattern, path):
                    paths.append(path + ("?q=port&project=default&name=auth" if "search" in path or "entity" in path else ""))
    return sorted(set(paths))


@pytest.fixture
async def by_hand(tmp_path):
    "``datasette memory.db`` without the plugin's host setting, as someone runs it by hand."
    datasette = Datasette([str(seeded_file(tmp_path))])
    await datasette.invoke_startup()
    return datasette


@pytest.fixture
async def by_serve(tmp_path):
    "Datasette configured as ``serve --allow-host memory.example.com`` configures it, on loopback."
    from datasette_memory.cli.serve import People, serve_config

    path = seeded_file(tmp_path)
    config = serve_config(path, Config(search=SearchSettings(semantic=False)), People("olive"), "0" * 64, True,
                          allowed_hosts=("127.0.0.1", "memory.example.com", "192.168.1.20"))
    datasette = Datasette([str(path)], config=config)
    await datasette.invoke_startup()
    return datasette


def is_refusal(response, host: str) -> bool:
    "A 421 that names the host and the way to allow it, and holds nothing of memory."
    text = response.text
    return (
        response.status_code == 421 and "--allow-host" in text and "DNS rebinding" in text
        and repr(host) in html_unescape(text) and "8443" not in text
    )


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)


@pytest.mark.parametrize("configured", ["by hand", "by serve"])
async def test_a_foreign_host_is_refused_on_every_route(by_hand, by_serve, configured):
    datasette = by_hand if configured == "by hand" else by_serve
    routes = memory_routes() + DATASETTE_ROUTES
    assert len(routes) > 25
    for host in FOREIGN_HOSTS:
        for route in routes:
            response = await datasette.client.get(route, headers={"host": host})
            assert is_refusal(response, host), (host, route, response.status_code, response.text[:200])
        posted = await datasette.client.post("/-/memory/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                             headers={"host": host, "authorization": "Bearer whatever"})
        assert is_refusal(posted, host), (host, posted.status_code)


async def test_the_refusal_is_json_for_scripts_and_a_page_for_people(by_serve):
    as_json = await by_serve.client.get("/-/memory/search.json?q=port", headers={"host": "attacker.example:8001"})
    assert as_json.status_code == 421 and as_json.headers["content-type"] == "application/json"
    error = as_json.json()
    assert error["ok"] is False and error["status"] == 421
    assert "'attacker.example:8001'" in error["error"]
    assert "datasette-memory serve --allow-host attacker.example" in error["error"]
    asked = await by_serve.client.get("/-/memory/mcp", headers={"host": "a.example", "accept": "application/json"})
    assert asked.status_code == 421 and asked.json()["ok"] is False
    page = await by_serve.client.get("/-/memory", headers={"host": "<script>alert(1)</script>"})
    assert page.status_code == 421 and page.headers["content-type"].startswith("text/html")
    assert "<script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "--allow-host NAME" in page.text
    twice = await by_serve.client.get("/-/memory/search.json?q=port", headers=[("host", "localhost"), ("host", "a.example")])
    assert twice.status_code == 421 and "'localhost, a.example'" in twice.json()["error"]
    # the check wraps the plugin's other wrappers: the secret guard never reads a foreign host's body
    write = await by_serve.client.post("/memory/-/execute-write", json={"sql": f"SELECT '{GITHUB}'"},
                                       headers={"host": "attacker.example"}, actor={"id": "root"})
    assert write.status_code == 421, write.text[:200]


@pytest.mark.parametrize("configured", ["by hand", "by serve"])
async def test_localhost_and_every_loopback_address_are_answered(by_hand, by_serve, configured):
    datasette = by_hand if configured == "by hand" else by_serve
    for host in LOOPBACK_HOSTS:
        response = await datasette.client.get("/-/memory/search.json?q=port", headers={"host": host})
        assert response.status_code == 200 and OBSERVATION in response.text, (host, response.status_code, response.text[:200])
        assert (await datasette.client.get("/memory/entities.json", headers={"host": host})).status_code == 200


async def test_the_names_serve_was_given_are_answered_and_no_others(by_serve):
    for host in ("memory.example.com", "Memory.Example.COM.:443", "memory.example.com:8001", "192.168.1.20:8001"):
        response = await by_serve.client.get("/-/memory/search.json?q=port", headers={"host": host})
        assert response.status_code == 200 and OBSERVATION in response.text, host
    for host in ("other.example.com", "sub.memory.example.com", "memory.example.com.attacker.example", "192.168.1.21"):
        assert is_refusal(await by_serve.client.get("/memory.json", headers={"host": host}), host), host


async def asgi_get(datasette, server: str, host: str, path: str = "/-/memory/search.json?q=port"):
    "A request through Datasette's app that arrived at ``server`` (an address of this machine), naming ``host``."
    import httpx2

    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=datasette.app()), base_url=server) as client:
        return await client.get(path, headers={"host": host})


async def test_a_request_naming_the_address_it_arrived_at_is_answered(by_serve):
    "Listening on every interface (0.0.0.0), a visitor on the network names this machine's address."
    for server, host in (("http://192.168.1.30:8001", "192.168.1.30:8001"), ("http://[fe80::1]:8001", "[FE80::1]:8001"),
                         ("http://[::1]:8001", "[::1]:8001"), ("http://[::ffff:192.168.1.30]:8001", "192.168.1.30")):
        response = await asgi_get(by_serve, server, host)
        assert response.status_code == 200 and OBSERVATION in response.text, (server, host)
        refused = await asgi_get(by_serve, server, "attacker.example")
        assert is_refusal(refused, "attacker.example"), server
        assert f"otherwise open it at {server}." in refused.json()["error"]


async def test_by_hand_off_loopback_the_host_is_left_to_the_configuration(by_hand, tmp_path):
    "Without the setting, a request that arrived at another address than loopback is answered whatever its Host."
    response = await asgi_get(by_hand, "http://192.168.1.30:8001", "memory.example.com")
    assert response.status_code == 200 and OBSERVATION in response.text
    assert is_refusal(await asgi_get(by_hand, "http://127.0.0.5:8001", "memory.example.com"), "memory.example.com")
    configured = Datasette([str(seeded_file(tmp_path / "again"))],
                           config={"plugins": {"datasette-memory": {"allowed_hosts": ["memory.example.com"]}}})
    await configured.invoke_startup()
    assert (await asgi_get(configured, "http://192.168.1.30:8001", "memory.example.com")).status_code == 200
    assert is_refusal(await asgi_get(configured, "http://192.168.1.30:8001", "other.example"), "other.example")


async def test_star_answers_any_host(tmp_path):
    datasette = Datasette([str(seeded_file(tmp_path))], config={"plugins": {"datasette-memory": {"allowed_hosts": ["*"]}}})
    await datasette.invoke_startup()
    response = await datasette.client.get("/-/memory/search.json?q=port", headers={"host": "anything.example:9"})
    assert response.status_code == 200 and OBSERVATION in response.text


@pytest.mark.parametrize("setting,named", [
    ("memory.example.com", "must be a list of host names"),
    (["http://memory.example.com/"], "'http://memory.example.com/' is not a host name or address"),
    (["memory.example.com:8001"], "without a scheme, port or path"),
    ([""], "'' is not a host name"),
    ([7], "7 is not a host name"),
])
async def test_a_mistaken_host_setting_stops_datasette_at_startup(tmp_path, setting, named):
    datasette = Datasette([str(seeded_file(tmp_path))], config={"plugins": {"datasette-memory": {"allowed_hosts": setting}}})
    with pytest.raises(InvalidInput) as raised:
        await datasette.invoke_startup()
    assert "plugins.datasette-memory.allowed_hosts" in str(raised.value) and named in str(raised.value)


@pytest.mark.parametrize("value", ["http://memory.example.com", "memory.example.com:8001", "a/b", "", "two words"])
def test_serve_refuses_an_allow_host_that_is_not_a_host(tmp_path, value):
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "memory.db"), "--allow-host", value])
    assert result.exit_code == 2
    assert "--allow-host" in result.output and "is not a host name or address" in result.output
    assert not (tmp_path / "memory.db").exists()


# ---------------------------------------------------------------- both, through a real serve

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    "``serve --allow-host Memory.Test.`` on a free loopback port: the file, the base URL, the port."
    path = seeded_file(tmp_path_factory.mktemp("served"))
    SqlTools(path, project="p", actor="agent").write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with serving(path, "--allow-host", "Memory.Test.", "--root") as (base, _):
        yield path, base, int(base.rsplit(":", 1)[1])


def over_socket(base: str, path: str, host: str | None = "127.0.0.1", method: str = "GET", body=None,
                headers=None, version: str = "1.1") -> tuple[int, str]:
    "One request over a real socket, its Host (or none) and method exactly as given: the status and the body."
    address, port = base.removeprefix("http://").split(":")
    raw = json.dumps(body).encode() if body is not None else b""
    lines = [f"{method} {path} HTTP/{version}"] + ([f"Host: {host}"] if host is not None else [])
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines += ["Content-Type: application/json", f"Content-Length: {len(raw)}", "Connection: close", "", ""]
    with socket.create_connection((address, int(port)), timeout=30) as connection:
        connection.sendall("\r\n".join(lines).encode() + raw)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, response.read().decode("utf-8", "replace")


def test_serve_refuses_a_foreign_host_and_answers_its_own(served):
    _, base, port = served
    for path in ("/-/memory/search.json?q=port", "/memory.json", "/memory/entities.json", "/-/memory"):
        status, text = over_socket(base, path, host=f"attacker.example:{port}")
        assert status == 421 and "--allow-host attacker.example" in text and "8443" not in text, (path, status)
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"127.0.0.2:{port}", "memory.test",
                 f"MEMORY.test.:{port}", "localhost."):
        status, text = over_socket(base, "/-/memory/search.json?q=port", host=host)
        assert status == 200 and OBSERVATION in text, (host, status, text[:200])
    status, text = over_socket(base, "/-/memory/search.json?q=port", host=None, version="1.0")
    assert status == 200 and OBSERVATION in text, "HTTP/1.0 without a Host"
    status, text = over_socket(base, "/-/memory/search.json?q=port", host=f"127.0.0.1:{port}",
                               headers={"Host": "attacker.example"})
    assert status in (400, 421) and "8443" not in text, "two Host headers"
