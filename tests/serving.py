"""A memory file served by ``datasette-memory serve`` in a subprocess, for tests over HTTP and in a browser."""

import contextlib
import os
import pathlib
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from .test_cli import fetch, free_port

SCREENSHOTS = pathlib.Path(__file__).parent / "screenshots"


@contextlib.contextmanager
def serving(db_path: pathlib.Path, *options: str, semantic: bool = False) -> Iterator[tuple[str, list[str]]]:
    """
    Serve ``db_path`` on a free port.

    :param options: more ``serve`` options, such as ``--owner olive``
    :param semantic: leave the semantic arm on (off by default: the pages are under test)
    :return: the base URL, and the lines serve printed (its sign-in link among them)
    """
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette_memory", "serve", "--db", str(db_path), "--port", str(port), *options],
        env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "0" if semantic else "1"},
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        while not any("Sign in as" in line for line in lines):
            line = process.stderr.readline()
            if not line:
                pytest.fail("datasette-memory serve ended before printing its sign-in link:\n" + "".join(lines))
            lines.append(line)
        threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True).start()  # keep the pipe from filling
        base = f"http://127.0.0.1:{port}"
        try:
            fetch(f"{base}/-/memory.json")
        except OSError:
            pytest.fail("datasette-memory serve did not start:\n" + "".join(lines))
        yield base, lines
    finally:
        process.terminate()
        process.wait(timeout=10)


def screenshot(page, name: str) -> None:
    "Save the whole page as tests/screenshots/<name>.png, for a person to look at."
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
