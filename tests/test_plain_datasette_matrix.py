"""The access matrix again, on plain ``datasette team.db``: no wrapper, no ``serve`` configuration.

Every test of :mod:`tests.test_access_matrix` runs here as written, with two
differences: the memory file is ``team.db`` (so the plugin knows it only by
its schema), and the Datasette is configured as someone running it by hand
would configure it: the same ``permissions:`` block (who holds memory-approve
and memory-curate, and who may read off loopback), and nothing else of
``serve``'s: no ``database`` setting, no stored queries, no sign-in.
"""

import hashlib

import pytest
from datasette.app import Datasette

from datasette_memory import Config
from datasette_memory.cli.serve import serve_config

from . import test_access_matrix as matrix
from .test_access_matrix import *  # noqa: F401,F403 (every test and fixture of the matrix, collected here again)


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "team.db"


async def served_by_plain_datasette(db_path, anonymous_reads):
    "``datasette team.db --root -c datasette.yaml`` with the permissions a person would write."
    config = serve_config(db_path, Config(), matrix.PEOPLE, hashlib.sha256(b"unused").hexdigest(), anonymous_reads)
    plain = {"permissions": config["permissions"], "plugins": {"datasette-memory": {"search": {"semantic": False}}}}
    datasette = Datasette([str(db_path)], config=plain)
    datasette.root_enabled = True
    await datasette.invoke_startup()
    assert datasette.plugin_config("datasette-memory").get("database") is None
    return datasette


@pytest.fixture(autouse=True)
def plain_datasette(monkeypatch):
    monkeypatch.setattr(matrix, "served", served_by_plain_datasette)


async def test_plain_datasette_found_the_file_by_its_schema(stored, db_path):
    datasette = await served_by_plain_datasette(db_path, anonymous_reads=True)
    assert (await datasette.client.get("/-/memory.json")).json()["database"] == "team"
