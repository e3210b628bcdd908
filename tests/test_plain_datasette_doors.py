"""The request doors again, on plain ``datasette``: the database found by its schema, the Host check set by hand.

Every test of :mod:`tests.test_request_doors` runs here as written, except
that nothing names the memory database: ``serve_in_process`` leaves out the
plugin's ``database`` setting (so each of the awkward names is found by its
schema), Datasette configured "by serve" is configured by hand with the
plugin's ``allowed_hosts`` setting, and the real server is ``datasette``
itself, started with ``--root``, ``--secret`` and a configuration file.
"""

import pytest
import yaml
from datasette.app import Datasette

from datasette_memory.cli.serve import token_secret
from datasette_memory.sqltools import SqlTools

from . import test_request_doors as doors
from .test_plain_datasette import plain_datasette
from .test_request_doors import *  # noqa: F401,F403 (every test and fixture of the doors, collected here again)


async def serve_in_process_by_hand(path, **settings) -> Datasette:
    "As ``test_request_doors.serve_in_process``, without the plugin's ``database`` setting."
    name = path.name.removesuffix(".db")
    config = {
        "permissions": {action: True for action in doors.WRITE_ACTIONS},
        "databases": {name: {"queries": {"add_note": doors.ADD_NOTE}}},
    }
    datasette = Datasette([str(path)], config=config, settings=settings or None)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    assert datasette.get_database().name == name and datasette.plugin_config("datasette-memory") is None
    return datasette


@pytest.fixture(autouse=True)
def by_hand_everywhere(monkeypatch):
    monkeypatch.setattr(doors, "serve_in_process", serve_in_process_by_hand)


@pytest.fixture
async def by_serve(tmp_path):
    "What ``serve --allow-host memory.example.com`` configures, written by hand: the plugin's allowed_hosts."
    path = doors.seeded_file(tmp_path)
    plugin = {"allowed_hosts": ["127.0.0.1", "memory.example.com", "192.168.1.20"], "search": {"semantic": False}}
    datasette = Datasette([str(path)], config={"plugins": {"datasette-memory": plugin}})
    await datasette.invoke_startup()
    return datasette


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    "``datasette memory.db --root`` with allowed_hosts in its configuration file: the file, the base URL, the port."
    folder = tmp_path_factory.mktemp("served")
    path = doors.seeded_file(folder)
    SqlTools(path, project="p", actor="agent").write_query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    config = folder / "datasette.yaml"
    config.write_text(yaml.safe_dump({"plugins": {"datasette-memory": {"allowed_hosts": ["127.0.0.1", "Memory.Test."],
                                                                       "search": {"semantic": False}}}}))
    with plain_datasette(path, "--root", "--secret", token_secret(path), "-c", config) as base:
        yield path, base, int(base.rsplit(":", 1)[1])
