import pytest

from datasette_memory import Memory, vectors


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db_path):
    memory = Memory.open(db_path, actor="tester", session="s1")
    yield memory
    memory.close()


@pytest.fixture
def no_vectors(monkeypatch):
    "Switch the semantic arm off, as if the extra were not installed."
    monkeypatch.setenv(vectors.NO_VECTORS_ENV, "1")
