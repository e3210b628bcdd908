import pytest

from datasette_memory import Config, Memory, SearchSettings


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db_path):
    memory = Memory.open(db_path, actor="tester", session="s1")
    yield memory
    memory.close()


@pytest.fixture
def lexical():
    "A configuration with the semantic arm off, as if the extra were not installed."
    return Config(search=SearchSettings(semantic=False))
