"""What the tests need from outside Python (Chromium, Node and the official server): where it is, and what happens without it."""

import os
import shutil
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
