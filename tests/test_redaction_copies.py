"""
Redacted text in older copies: ``datasette-memory redactions`` lists the file's redactions and the copies made before
each that still hold a text it removed (the snapshots, the replica's history, checked by digest without the text),
and ``--delete-older`` deletes them, leaving a replica that restores, verifies and holds the text nowhere.

Real files, the real Litestream against a folder and against an S3-compatible server (moto); the secret is looked for
in the raw bytes of every file the replica and Litestream's local state keep, and of every restored copy.
"""

import json
import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest

from datasette_memory import Memory
from datasette_memory.core import redacted
from datasette_memory.history.file_check import verify_file
from datasette_memory.replication import Litestream, ReplicaTarget
from datasette_memory.replication.litestream import private_folder
from datasette_memory.replication.redacted_copies import check_file, redactions
from datasette_memory.replication.replica_copies import Replica
from datasette_memory.replication.replicator import Replication
from datasette_memory.sqltools.snapshots import MANUAL, snapshot_folder, take_snapshot
from datasette_memory.sync.bundle import make_bundle, sync_bundle

from .governance import issue_reviewer
from .installed import litestream
from .replicas import S3_ENV, bucket_replica, s3_server
from .test_redaction import LEXICAL, REASON, SECRET, holds_secret, leak

ENV = {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"}


def cli(*arguments, env=None):
    return subprocess.run([sys.executable, "-m", "datasette_memory", *arguments], env=env or ENV, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def listing(path, *more, env=None):
    "``redactions --json`` on the file at ``path``."
    done = cli("redactions", "--db", str(path), "--json", *more, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def files_holding_secret(folder: pathlib.Path) -> list[str]:
    "The files under ``folder`` whose raw bytes hold the secret."
    return sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file() and SECRET.encode() in f.read_bytes())


def strings_holding_secret(path) -> int:
    "How many of project team's strings in the file at ``path`` hold the secret, found by the secret itself."
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = [c for (c,) in conn.execute("SELECT o.content FROM observations o JOIN entities e ON e.id = o.entity_id "
                                            "WHERE e.project = 'team'") if SECRET in c]
        for table in ("events", "memory_sync_events"):
            for values in conn.execute(f"SELECT old, new FROM {table} WHERE project = 'team'"):
                found += [s for v in values if v for s in redacted.strings(json.loads(v)) if SECRET in s]
        return len(found)
    finally:
        conn.close()


def replicating(path, target):
    replication = Replication(Litestream.find(os.environ), target, path, lambda line: None, report_every=3600)
    replication.start()
    return replication


def newest_copy(target, into: pathlib.Path):
    "The replica's newest copy, restored with Litestream into ``into``, and the copy."
    with private_folder() as folder:
        copy = Replica(Litestream.find(os.environ), target, folder).newest()
        assert copy is not None
        copy.path.rename(into)
    return into


@pytest.fixture
def leaked(tmp_path):
    """
    A file whose secret reached its folder replica and a snapshot, then was redacted with replication stopped
    (as the hub is redacted between two runs of ``replicate``), replication started again and one more write uploaded.
    """
    litestream()
    path = tmp_path / "memory.db"
    target = ReplicaTarget.parse(f"file://{tmp_path / 'replica'}")
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    replication = replicating(path, target)
    leak(memory)
    replication.sync()
    before = take_snapshot(path, snapshot_folder(path), MANUAL)
    memory.add_observations([{"entityName": "payments", "contents": ["retries twice"]}])
    replication.stop()
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    replication = replicating(path, target)
    memory.add_observations([{"entityName": "payments", "contents": ["pages on-call"]}])
    replication.stop()
    after = take_snapshot(path, snapshot_folder(path), MANUAL)
    memory.close()
    return {"path": path, "target": target, "before": before, "after": after, "event": done["event"]}


def test_the_older_copies_are_listed_and_deleted_and_the_replica_restores_without_the_text(leaked, tmp_path):
    path, target, replica_folder = leaked["path"], leaked["target"], pathlib.Path(leaked["target"].path)
    state = tmp_path / ".memory.db-litestream"
    assert files_holding_secret(replica_folder) and files_holding_secret(state)  # the history the test starts from

    found = listing(path, "--replica", target.url)

    (redaction,) = found["redactions"]
    assert {k: redaction[k] for k in ("redaction", "own", "event", "actor", "project", "target", "reason", "texts")} == {
        "redaction": f"event {leaked['event']}", "own": True, "event": leaked["event"], "actor": "alice",
        "project": "team", "target": "payments", "reason": REASON, "texts": 3}
    assert redaction["snapshots"] == [str(leaked["before"])]  # the snapshot taken after it is clean
    replica = redaction["replica"]
    assert replica["reached"] and replica["holds"] and replica["held"] >= 3 and replica["checked_at"] < replica["reached"]
    listed = {f"ltx/{f['level']}/{f['min_txid']}-{f['max_txid']}.ltx" for f in replica["files"]}
    assert all(f["max_txid"] < replica["reached"] and f["size"] > 0 and f["timestamp"] for f in replica["files"])
    # exact: every file of the replica whose bytes hold the secret is listed (LTX compresses, so some listed ones
    # may hide it from a byte search; the copy restored from them holds it, as held says)
    assert set(files_holding_secret(replica_folder)) <= listed
    assert found["local_state"]["files"] >= len(listed)
    # the listing changed nothing
    assert leaked["before"].exists() and files_holding_secret(replica_folder)

    cleared = listing(path, "--replica", target.url, "--delete-older")

    assert not leaked["before"].exists() and leaked["after"].exists()
    assert [s["path"] for s in cleared["snapshots"] if s["deleted"]] == [str(leaked["before"])]
    anew = cleared["replica"]
    assert anew["started_anew"]["removed"] >= len(listed) and anew["newest"]["held"] == {redaction["redaction"]: 0}
    assert files_holding_secret(replica_folder) == [] and files_holding_secret(state) == []
    # the replica restores, through the command and through Replica.newest(); both copies verify and hold it nowhere
    restored = tmp_path / "restored.db"
    done = cli("restore", "--from", target.url, "--to", str(restored))
    assert done.returncode == 0, done.stdout + done.stderr
    copy = newest_copy(target, tmp_path / "newest.db")
    for file in (restored, copy):
        assert verify_file(file)["ok"] and holds_secret(file) == []
        memory = Memory.open(file, project="team", config=LEXICAL)
        (entity,) = memory.open_nodes(["payments"])["entities"]
        memory.close()
        assert "pages on-call" in entity["observations"] and any("[redacted " in o for o in entity["observations"])
    # listed again: nothing from before it is left, and replication goes on from the new start
    again = listing(path, "--replica", target.url)
    assert again["redactions"][0]["snapshots"] == [] and again["redactions"][0]["replica"]["files"] == []
    memory = Memory.open(path, project="team", config=LEXICAL)
    replication = replicating(path, target)
    memory.add_observations([{"entityName": "payments", "contents": ["moved to eu-west"]}])
    replication.stop()
    memory.close()
    later = newest_copy(target, tmp_path / "later.db")
    assert verify_file(later)["ok"] and "moved to eu-west" in later.read_bytes().decode("utf-8", "replace")


def test_the_replica_is_not_touched_while_a_replication_runs(leaked):
    path, target = leaked["path"], leaked["target"]
    files = sorted(pathlib.Path(target.path).rglob("*.ltx"))
    replication = replicating(path, target)
    try:
        done = cli("redactions", "--db", str(path), "--replica", target.url, "--delete-older")
    finally:
        replication.stop()
    assert done.returncode == 1
    assert "is being replicated already" in done.stderr and "stop that replication first" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    # every old file is still there (the replication running meanwhile added its own)
    assert set(files) <= set(pathlib.Path(target.path).rglob("*.ltx")) and files_holding_secret(pathlib.Path(target.path))
    assert leaked["before"].exists()


def test_a_redaction_made_while_replicating_leaves_a_replica_that_restores_clean_once_started_anew(tmp_path):
    litestream()
    path = tmp_path / "memory.db"
    target = ReplicaTarget.parse(f"file://{tmp_path / 'replica'}")
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    # enough pages that the VACUUM's commit would checkpoint the log itself (SQLite's default: at 1,000 pages)
    for start in range(0, 2500, 500):
        memory.create_entities([{"name": f"svc-{i}", "entityType": "service", "observations": [f"handles request type {i} " * 8]}
                                for i in range(start, start + 500)])
    assert memory.conn.execute("PRAGMA page_count").fetchone()[0] > 1000
    replication = replicating(path, target)
    leak(memory)
    replication.sync()
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    assert done["file"] == {"vacuumed": True, "log_truncated": False, "replicating": True}  # the log is Litestream's to restart
    memory.add_observations([{"entityName": "payments", "contents": ["pages on-call"]}])
    replication.sync()
    replication.stop()
    memory.close()
    during = newest_copy(target, tmp_path / "during.db")  # the replica still restores, redaction and all
    assert verify_file(during)["ok"] and b"pages on-call" in during.read_bytes()

    found = listing(path, "--replica", target.url)
    assert found["redactions"][0]["replica"]["files"] and found["replica"]["holds"]
    cleared = listing(path, "--replica", target.url, "--delete-older")

    assert cleared["replica"]["started_anew"] and files_holding_secret(pathlib.Path(target.path)) == []
    copy = newest_copy(target, tmp_path / "newest.db")
    assert verify_file(copy)["ok"] and holds_secret(copy) == [] and b"pages on-call" in copy.read_bytes()


def test_a_peers_redaction_is_listed_with_the_snapshots_that_hold_its_text(tmp_path, laptops):
    a, b, _ = laptops
    a.scope.allow_secrets = True
    bundle = tmp_path / "a-b.bundle"
    leak(a)
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    b_path = pathlib.Path(tmp_path / "peer1.db")
    before = take_snapshot(b_path, snapshot_folder(b_path), MANUAL)
    done = a.redact(issue_reviewer(), SECRET, REASON, "payments")
    sync_bundle(a, bundle)
    sync_bundle(b, bundle)
    assert holds_secret(before) and not holds_secret(b_path)

    (redaction,) = listing(b_path)["redactions"]

    assert redaction["redaction"] == f"{done['machine'][:12]}#{done['clock']}" and redaction["own"] is False
    assert redaction["event"] is None and redaction["received_at"] and redaction["texts"] == 3
    assert redaction["snapshots"] == [str(before)]
    # checked by digest alone: the copy's strings, not its bytes
    held = check_file(before, redactions(b.conn), redactions(b.conn))
    assert held == {"held": {redaction["redaction"]: strings_holding_secret(before)}}
    text = cli("redactions", "--db", str(b_path)).stdout
    assert f"{redaction['redaction']}: " in text and "from a peer" in text and str(before) in text


def test_a_file_without_redactions_says_so(tmp_path):
    path = tmp_path / "memory.db"
    Memory.open(path, project="team", config=LEXICAL).close()
    done = cli("redactions", "--db", str(path))
    assert done.returncode == 0 and done.stdout.strip() == f"No redactions in {path.resolve()}."
    missing = cli("redactions", "--db", str(tmp_path / "nothing.db"))
    assert missing.returncode == 1 and "no such file" in missing.stderr and not (tmp_path / "nothing.db").exists()


def test_a_bucket_is_emptied_by_the_person_and_then_started_anew(tmp_path):
    import boto3

    litestream()
    with s3_server() as endpoint:
        place = bucket_replica(endpoint)
        env = place.environment()
        path = tmp_path / "memory.db"
        target = ReplicaTarget.parse(place.url, endpoint=endpoint)
        os.environ.update(S3_ENV)  # Litestream, run from this process, reads the credentials from its environment
        try:
            memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
            replication = replicating(path, target)
            leak(memory)
            replication.stop()
            memory.redact(issue_reviewer(), SECRET, REASON, "payments")
            memory.close()
        finally:
            for key in S3_ENV:
                os.environ.pop(key, None)

        refused = cli("redactions", "--db", str(path), "--replica", place.url, *place.options, "--delete-older", env=env)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
        assert f"aws s3 rm --recursive {place.url}/ --endpoint-url {endpoint}" in refused.stderr
        assert "nothing was deleted" in refused.stderr
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=S3_ENV["AWS_ACCESS_KEY_ID"], aws_secret_access_key=S3_ENV["AWS_SECRET_ACCESS_KEY"])
        bucket = target.bucket
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert keys and any(SECRET.encode() in client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys)
        client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys]})  # as the person does

        cleared = listing(path, "--replica", place.url, *place.options, "--delete-older", env=env)

        assert cleared["replica"]["started_anew"]["removed"] == 0 and files_holding_secret(tmp_path / ".memory.db-litestream") == []
        keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
        assert keys and not any(SECRET.encode() in client.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys)
        restored = tmp_path / "restored.db"
        done = cli("restore", "--from", place.url, *place.options, "--to", str(restored), env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert verify_file(restored)["ok"] and holds_secret(restored) == []


def test_a_snapshot_holding_the_text_only_in_a_claim_or_a_fact_is_listed(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    memory.create_entities([{"name": "payments", "entityType": "service", "observations": []}])
    memory.governed.propose_claim("payments", "api key", SECRET)
    memory.governed.record_fact(issue_reviewer("olive"), "payments", "auth", "bearer token", f"rotated after {SECRET} leaked")
    before = take_snapshot(path, snapshot_folder(path), MANUAL)
    memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    memory.close()
    (found,) = listing(path)["redactions"]
    assert found["snapshots"] == [str(before)]
    held = check_file(before, redactions(sqlite3.connect(path)), redactions(sqlite3.connect(path)))
    # the claim's object, the fact's rationale and its history's, in their records; and the two events' values
    assert held == {"held": {found["redaction"]: 5}}
