import pytest

from datasette_memory import Memory


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db_path):
    memory = Memory.open(db_path, actor="tester", session="s1")
    yield memory
    memory.close()
