"""Copies of the memory file restored from its replica: the newest, as of a time, as of a transaction, as of an event.

Litestream uploads what the file's write-ahead log gained as one transaction
file (LTX) per sync, about one a second while writes arrive, and compacts them
into coarser files over time (30 s, 5 min, 1 h) and a daily snapshot. Every
file's last transaction id is a moment a copy can be restored at
(``restore -txid``); a time is the newest upload made before it
(``restore -timestamp``).

A ledger event is found by search. The ledger only grows, so the ledger's head
in a copy grows with the transaction id it is restored at: the copy as of
event E is the one restored at the earliest restore point whose ledger holds
E, found by a binary search of the restore points (one restore per step).
That copy ends at E exactly when E was the last event the sync uploading it
saw; otherwise it also holds the events that reached the replica in the same
upload, and its head says so. Once Litestream has compacted the finest files
away (after five minutes, by default) the restore points are coarser, and so
is the copy.
"""

import json
import pathlib
import sqlite3
from dataclasses import dataclass
from typing import Any

from ..core.log_heads import GENESIS_HASH
from .litestream import Litestream, write_config
from .replica_target import ReplicaTarget, ReplicationError

KEY_NAME = ".litestream-key.db"  # the name the database has in the configuration of a restore; nothing is written there
SNAPSHOT_LEVEL = 9


@dataclass(frozen=True)
class Copy:
    """
    A copy restored from the replica.

    :param path: where it was restored
    :param txid: the Litestream transaction it was restored at (hex, as Litestream writes it)
    :param event_id: the newest event of its ledger (0 for none)
    :param event_hash: that event's hash
    :param event_ts: that event's time
    """

    path: pathlib.Path
    txid: str
    event_id: int
    event_hash: str
    event_ts: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"txid": self.txid, "event_id": self.event_id, "hash": self.event_hash, "ts": self.event_ts}


class Replica:
    """
    A replica read through Litestream, from a private folder that holds its configuration.

    :param litestream: the binary and its environment
    :param target: the replica
    :param folder: a private folder (see :func:`.litestream.private_folder`)
    """

    def __init__(self, litestream: Litestream, target: ReplicaTarget, folder: pathlib.Path):
        self.litestream, self.target, self.folder = litestream, target, folder
        self.key = str(folder / KEY_NAME)
        self.config = write_config(folder, self.key, target)
        self.restored = 0

    def files(self) -> list[dict[str, Any]]:
        "Its LTX files at every level (empty for an empty replica)."
        return self.litestream.files(self.config, self.key, self.target)

    def restore_points(self) -> list[str]:
        "Every transaction id a copy can be restored at, oldest first."
        return sorted({str(f["max_txid"]) for f in self.files() if f.get("max_txid")})

    def snapshots(self) -> list[dict[str, Any]]:
        "Its snapshots (one a day by default, kept as long as Litestream's retention), oldest first."
        return sorted((f for f in self.files() if f.get("level") == SNAPSHOT_LEVEL), key=lambda f: str(f["max_txid"]))

    def restore(self, output: pathlib.Path | None = None, txid: str | None = None, timestamp: str | None = None) -> Copy:
        """
        Restore a copy: the newest, or as of transaction ``txid``, or as of ``timestamp`` (RFC 3339, UTC).

        :param output: where to write it (a new path); default a fresh name in the private folder
        :raises ReplicationError: if the replica holds no such copy, or cannot be read
        """
        self.restored += 1
        output = output or self.folder / f"copy-{self.restored}.db"
        arguments = ["restore", "-config", str(self.config), "-no-expand-env", "-o", str(output), "-json"]
        arguments += ["-txid", txid] if txid else ["-timestamp", timestamp] if timestamp else []
        result = self.litestream.run([*arguments, self.key], "restore a copy from the replica", self.target)
        return read_copy(output, txid or parse_txid(result))

    def newest(self) -> Copy | None:
        "The newest copy, restored into the private folder; None if the replica is empty."
        return self.restore() if self.files() else None

    def as_of_event(self, event_id: int) -> Copy:
        """
        The copy at the earliest restore point whose ledger holds event ``event_id``
        (see the module), restored into the private folder; the copies probed on
        the way are removed.

        :raises ReplicationError: if no copy holds it (the replica is behind, or empty)
        """
        points = self.restore_points()
        if not points:
            raise ReplicationError(f"{self.target.describe()} holds no copy yet: it is empty")
        found: Copy | None = None
        newest_seen = 0
        low, high = 0, len(points) - 1
        while low <= high:
            middle = (low + high) // 2
            copy = self.probe(points, middle)
            if copy is None:  # not restorable on its own (compacted away): drop it and look again
                del points[middle]
                high -= 1
                continue
            newest_seen = max(newest_seen, copy.event_id)
            if copy.event_id >= event_id:
                if found is not None:
                    found.path.unlink()
                found, high = copy, middle - 1
            else:
                copy.path.unlink()
                low = middle + 1
        if found is None:
            raise ReplicationError(f"{self.target.describe()} holds events up to {newest_seen}, not event {event_id}: "
                                   "it is not in the replica (yet); if replication is running, try again in a moment")
        return found

    def probe(self, points: list[str], index: int) -> Copy | None:
        "The copy at restore point ``points[index]``, or None if Litestream cannot restore that point."
        try:
            return self.restore(txid=points[index])
        except ReplicationError as e:
            if "no matching backup files" in str(e):
                return None
            raise


def parse_txid(output: str) -> str:
    "The transaction id ``litestream restore -json`` reports."
    try:
        return str(json.loads(output).get("txid") or "")
    except (ValueError, AttributeError):
        return ""


def read_copy(path: pathlib.Path, txid: str) -> Copy:
    """
    What a restored copy holds: its ledger's head.

    :raises ReplicationError: if it is not a memory file
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT id, hash, ts FROM events ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.DatabaseError as e:
        raise ReplicationError(f"the replica's copy is not a datasette-memory file ({e}): the replica holds another database")
    finally:
        conn.close()
    event_id, event_hash, event_ts = row or (0, GENESIS_HASH, None)
    return Copy(path, txid, event_id, event_hash, event_ts)
