"""Doors a request's spelling opened: the database named another way.

The secret guard decides which database a write reaches as Datasette's router
does (the raw path, ``base_url``, tilde decoding, the database's route), so
every spelling Datasette accepts is refused like the plain one: each route
Datasette has under a database, read from its own route table, and the main
write routes proven to reach the file with ordinary text first.
"""

import re

import pytest
from datasette.app import Datasette
from datasette.utils import tilde_encode

from datasette_memory import Memory
from datasette_memory.plugin.routing import routed_database
from datasette_memory.sqltools import SqlTools

from .governance import as_actor
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
