"""What the tests need from outside Python (Chromium, Node and the official server, Litestream, an S3 server): where it is, and what happens without it."""

import os
import shutil
import sys
from typing import NoReturn

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def missing(reason: str) -> NoReturn:
    """
    A test cannot run because something outside Python is not installed: it skips,
    saying why in one line, unless $DATASETTE_MEMORY_REQUIRE_ALL is set (CI sets it),
    where it fails, so that nothing goes untested there.
    """
    if os.environ.get("DATASETTE_MEMORY_REQUIRE_ALL"):
        pytest.fail(f"{reason} (and DATASETTE_MEMORY_REQUIRE_ALL is set)")
    pytest.skip(reason)


def chromium_path() -> str:
    "Debian's Chromium (which tests/run installs when it can), or the executable named by $DATASETTE_MEMORY_CHROMIUM."
    path = os.environ.get("DATASETTE_MEMORY_CHROMIUM") or shutil.which("chromium")
    if not path:
        missing("no Chromium for the page tests: apt-get install chromium, or set DATASETTE_MEMORY_CHROMIUM to its executable")
    return path


def litestream():
    "The Litestream binary the replicate extra installs (tests/run installs it), as the commands find it."
    from datasette_memory.replication import Litestream, ReplicationError

    try:
        return Litestream.find(os.environ)
    except ReplicationError as e:
        missing(str(e))


def moto_server() -> list[str]:
    "The command that starts moto's S3-compatible server (the test extra's moto[server]), arguments to follow."
    import importlib.util

    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        missing("no moto server for the S3 replication tests: pip install 'datasette-memory[test]' (moto[server])")
    return [sys.executable, "-m", "moto.server"]
