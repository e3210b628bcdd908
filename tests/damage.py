"""Damaging a memory file on purpose, for the tests of how every door refuses one."""

import pathlib
import sqlite3


def damage(path: pathlib.Path) -> None:
    "Overwrite the observations table's root page with garbage."
    conn = sqlite3.connect(path)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'observations'").fetchone()[0]
    conn.close()
    with open(path, "r+b") as f:
        f.seek(page_size * (root - 1))
        f.write(b"\xff" * page_size)
