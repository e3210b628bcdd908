import pathlib
import subprocess
import sys

import pytest
from datasette.app import Datasette

from datasette_memory import Config, Memory, SearchSettings, hookimpl, vectors
from datasette_memory.core import plugins
from datasette_memory.vectors.side_file import close_side_files

from .installed import CHROMIUM_FLAGS, chromium_path
from .tampering import build, rewind


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture
def memory(db_path):
    memory = Memory.open(db_path, actor="tester", session="s1")
    yield memory
    memory.close()


@pytest.fixture
async def datasette(db_path):
    "Datasette serving a new memory file, started and shut down as a server does; a module may define its own."
    Memory.open(db_path).close()
    datasette = Datasette([str(db_path)])
    await datasette.invoke_startup()
    yield datasette
    await datasette.invoke_shutdown()


@pytest.fixture
def built(tmp_path):
    "A memory file with a history, audit rows and a clean verify recorded (tampering.build)."
    path = tmp_path / "memory.db"
    build(path)
    return path


@pytest.fixture
def tampered(built):
    "The same, with its newest events deleted behind the core's back (tampering.rewind)."
    rewind(built)
    return built


@pytest.fixture
def lexical():
    "A configuration with the semantic arm off, as if the extra were not installed."
    return Config(search=SearchSettings(semantic=False))


@pytest.fixture
def semantic():
    "The semantic arm on: skips, by name, where the vectors extra is not installed."
    for module in vectors.REQUIRED_MODULES:
        pytest.importorskip(module, reason="needs pip install 'datasette-memory[vectors]'")
    yield
    close_side_files()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    "The package built as a wheel from this checkout, once per test process (tests/test_wheel.py, tests/test_packaging.py)."
    folder = tmp_path_factory.mktemp("dist")
    root = pathlib.Path(__file__).parent.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(root)], check=True)
    (built,) = folder.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def browser():
    "A real Chromium, driven by Playwright, for one module's page tests (Playwright's loop must not outlive them: async tests follow)."
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    "A fresh browser page (no cookies); the test fails if the page raised a JavaScript error."
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"the page raised JavaScript errors: {errors}"


@pytest.fixture
def laptops(tmp_path):
    "Three laptops' memory files, each sharing the project team (tests/test_sync.py's open_peer); closed after the test."
    from .test_sync import open_peer

    made = [open_peer(tmp_path / f"peer{i}.db") for i in range(3)]
    yield made
    for memory in made:
        memory.close()


class Recorder:
    "A memory_event implementation that keeps what it is given."

    def __init__(self):
        self.events = []

    @hookimpl
    def memory_event(self, event):
        self.events.append(event)


@pytest.fixture
def recorder():
    "A Recorder registered as a plugin for the test (tests/test_extending.py, tests/test_ledger_batch.py)."
    recorder = Recorder()
    plugins.plugin_manager().register(recorder, "recorder")
    yield recorder
    plugins.plugin_manager().unregister(name="recorder")
