"""The hub under concurrent load, small: bench/hub_load.py's own run, and its correctness part asserted.

Clients at once over MCP on HTTP against a real ``serve --replicate-to`` on
loopback, with tokens from ``create-token``: no call fails, every acknowledged
write is in the file, the chain verifies, and the replica restores to the
file's ledger head (checked again here with ``restore``). Timings are the
benchmark's to print, never asserted.
"""

import pathlib
import sqlite3
import subprocess
import sys

import pytest

from .installed import litestream

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "bench"))
import hub_load  # noqa: E402


@pytest.mark.large  # the benchmark's own run: CI runs it, tests/run on request
def test_concurrent_clients_lose_nothing_and_the_replica_restores_to_the_same_head(tmp_path):
    litestream()
    found = hub_load.run(clients=6, calls=40, processes=2, seeded=60, folder=tmp_path, single=False, sample_every=2)
    assert found["together"]["calls"] == 6 * 40
    assert found["together"]["error_count"] == 0, found["together"]["errors"]
    assert found["acknowledged_writes"] > 30
    assert found["lost_writes"] == []
    assert found["verify_ok"]
    assert found["lag_at_end"]["lag_s"] is not None, found["lag_at_end"]
    events = found["events"]
    assert found["replication_stopped"] == f"Replication stopped: the replica holds event {events} of {events} (up to date)"
    copy = tmp_path / "restored.db"
    done = subprocess.run([sys.executable, "-m", "datasette_memory", "restore", "--from", f"file://{tmp_path / 'replica'}",
                           "--to", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    conn = sqlite3.connect(copy)
    assert list(conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone()) == found["primary_head"]
    conn.close()
