"""
Replication with the real Litestream, to a folder and to a real S3-compatible server (moto) on loopback.

Agents write through MCP while ``replicate`` (or ``serve --replicate-to``)
runs; ``restore`` brings back a file that verifies, holds the same rows and
the same ledger head; a writer killed mid-burst leaves a replica that is a
prefix of its chain, never a fork; a copy as of a moment reads as the primary
read then; and the replica, compared event by event by ``verify --against``,
catches a rewind or a rewrite nothing on the machine can see.
"""

import asyncio
import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from datasette.app import Datasette
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from datasette_memory import Memory
from datasette_memory.core import last_check, witness
from datasette_memory.core.clock import now

from .governance import issue_reviewer
from .installed import litestream
from .replicas import Running, bucket_replica, folder_replica, s3_server
from .tampering import LEXICAL, NEWEST, build, raw, rehash_from, rewind
from .test_cli import fetch, free_port

MCP_ENV = {"PYTHONPATH": os.pathsep.join(sys.path), "DATASETTE_MEMORY_NO_VECTORS": "1", "FASTMCP_LOG_LEVEL": "WARNING"}


@pytest.fixture(scope="module")
def s3_endpoint():
    litestream()
    with s3_server() as endpoint:
        yield endpoint


@pytest.fixture(params=["folder", "bucket"])
def place(request, tmp_path):
    "Where to replicate: a folder, or a new bucket on the S3 server."
    litestream()
    if request.param == "folder":
        return folder_replica(tmp_path / "replica")
    return bucket_replica(request.getfixturevalue("s3_endpoint"))


@pytest.fixture
def built(tmp_path):
    """
    A memory file with a history (tampering.build), built by a process that has ended, as a hub's file
    is after a restart: no process here keeps a witness of it in memory, only the side files do.
    """
    path = tmp_path / "memory.db"
    subprocess.run([sys.executable, "-c", f"from tests.tampering import build; build({str(path)!r})"], check=True,
                   cwd=pathlib.Path(__file__).parent.parent, env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"})
    return path


@pytest.fixture
def folder(tmp_path):
    litestream()
    return folder_replica(tmp_path / "replica")


def cli(arguments, place, timeout=240):
    "A ``datasette-memory`` command in a subprocess, as a person runs it."
    return subprocess.run([sys.executable, "-m", "datasette_memory", *arguments], env=place.environment(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def events(path):
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, hash FROM events ORDER BY id").fetchall()
    finally:
        conn.close()


def tables(path):
    "Every table's rows, in rowid order (the word indexes' own tables included)."
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
        return {name: conn.execute(f"SELECT * FROM [{name}]").fetchall() for name in names}
    finally:
        conn.close()


def graph(path, as_of=None):
    memory = Memory.open(path, project="p", config=LEXICAL)
    try:
        return memory.read_graph(as_of=as_of)
    finally:
        memory.close()


def replicating(db, place, *more):
    "``replicate`` running on ``db``, its lag reported every second."
    running = Running(["replicate", "--db", str(db), "--to", place.url, *place.options, "--report-every", "1", *more],
                      place.environment())
    running.wait_for("Replicating until")
    return running


def restored(place, tmp_path, *more, name="restored.db"):
    "``restore`` into a new file; the completed process and the file."
    path = tmp_path / name
    return cli(["restore", "--from", place.url, *place.options, "--to", str(path), *more], place), path


def entity(name, *observations):
    return {"name": name, "entityType": "service", "observations": list(observations)}


async def write_a_history(client):
    "A little of everything an agent writes: entities, relations, observations, deletions, an event and a checkpoint."
    await client.call_tool("create_entities", {"entities": [entity("auth", "listens on 8443", "owned by café team"),
                                                            entity("db", "postgres 16"), entity("cache", "redis 7")]})
    await client.call_tool("create_relations", {"relations": [{"from": "auth", "to": "db", "relationType": "reads from"}]})
    for i in range(12):
        await client.call_tool("add_observations", {"observations": [{"entityName": "auth", "contents": [f"deploy {i} ✓"]}]})
    await client.call_tool("delete_observations", {"deletions": [{"entityName": "auth", "observations": ["deploy 3 ✓"]}]})
    await client.call_tool("delete_entities", {"entityNames": ["cache"]})
    await client.call_tool("append_event", {"content": "chose postgres over mysql", "kind": "decision"})
    await client.call_tool("checkpoint", {"summary": "auth and db are up"})


def stdio_client(db):
    return Client(StdioTransport(sys.executable, ["-m", "datasette_memory", "mcp", "--db", str(db), "--project", "p"],
                                 env=MCP_ENV, keep_alive=False))


# Writes through MCP while replicating come back whole


async def test_writes_through_mcp_while_replicating_come_back_whole(tmp_path, place):
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    running = replicating(db, place)
    try:
        async with stdio_client(db) as client:
            await write_a_history(client)
        head = events(db)[-1][0]
        running.wait_for(f"it holds every event ({head})")
    finally:
        code = running.stop()
    assert code == 0, running.output()
    assert f"Replication stopped: the replica holds event {head} of {head} (up to date)" in running.output()
    done, copy = restored(place, tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{copy}: intact (full check, {head} events)" in done.stdout
    assert f"Wrote {copy}" in done.stdout
    assert events(copy) == events(db)
    assert tables(copy) == tables(db)
    assert graph(copy) == graph(db)
    assert not [p for p in tmp_path.iterdir() if ".restoring-" in p.name], "the restore's private folder is gone"


def test_the_configuration_is_private_and_holds_no_secret(tmp_path, s3_endpoint):
    "Litestream's command line and configuration name no credential; its environment carries them, as AWS tools expect."
    place = bucket_replica(s3_endpoint)
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    running = replicating(db, place)
    try:
        [child] = children(running.process.pid)
        command = pathlib.Path(f"/proc/{child}/cmdline").read_bytes().decode().split("\0")
        config = pathlib.Path(command[command.index("-config") + 1])
        assert oct(config.stat().st_mode & 0o777) == "0o600" and oct(config.parent.stat().st_mode & 0o777) == "0o700"
        secret = place.env["AWS_SECRET_ACCESS_KEY"]
        assert secret not in " ".join(command) and secret not in config.read_text()
        assert f"AWS_SECRET_ACCESS_KEY={secret}".encode() in pathlib.Path(f"/proc/{child}/environ").read_bytes()
    finally:
        assert running.stop() == 0
    assert not config.parent.exists(), "the private folder is removed when replication stops"


# A writer killed mid-burst: the replica is a prefix of the chain, never a fork, and nothing acknowledged is lost


def private_folders(db):
    "The private folders holding a Litestream configuration for ``db``."
    import tempfile

    return [folder for folder in pathlib.Path(tempfile.gettempdir()).glob("datasette-memory-replicate-*")
            if str(db) in (folder / "litestream.yml").read_text()]


def children(pid):
    "The processes ``pid`` started (Litestream, for serve and replicate)."
    found = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def burst(url, token, acknowledged, stop):
    "Create one entity per call over HTTP until the server dies (or ``stop``); each acknowledged name is appended."

    async def write():
        transport = StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"})
        try:
            async with Client(transport) as client:
                for i in range(100_000):
                    if stop.is_set():
                        return
                    name = f"svc-{i:05d}"
                    await client.call_tool("create_entities", {"entities": [entity(name, f"built {i}")]})
                    acknowledged.append(name)
        except Exception:
            return  # the server was killed

    asyncio.run(write())


def test_kill_9_mid_burst_leaves_a_prefix_never_a_fork(tmp_path, place):
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    token = cli(["create-token", "agent", "--db", str(db)], place).stdout.strip()
    port = free_port()
    hub = Running(["serve", "--db", str(db), "--port", str(port), "--replicate-to", place.url, *place.options], place.environment())
    acknowledged, stop = [], threading.Event()
    try:
        assert hub.wait_for("Replica: ").startswith(f"Replica: {place.url} is empty")
        hub.wait_for("Uvicorn running")
        writer = threading.Thread(target=burst, args=(f"http://127.0.0.1:{port}/-/memory/mcp", token, acknowledged, stop))
        writer.start()
        deadline = time.monotonic() + 120
        while len(acknowledged) < 60 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(acknowledged) >= 60, hub.output()
        time.sleep(3)  # the burst goes on while Litestream uploads a few times
        assert writer.is_alive(), "killed mid-burst"
        for pid in [*children(hub.process.pid), hub.process.pid]:  # the hub and its Litestream at once, as a power cut would
            os.kill(pid, signal.SIGKILL)
        writer.join(timeout=60)
    finally:
        stop.set()
        hub.process.kill()
        hub.process.wait()
    primary = events(db)
    done, copy = restored(place, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    replica = events(copy)
    assert 1 <= len(replica) <= len(primary)
    assert replica == primary[: len(replica)], "the replica's ledger is a prefix of the primary's: never a fork"
    assert private_folders(db), "the killed hub's Litestream configuration was left behind"
    # replication resumes from the primary and catches up: nothing acknowledged is lost
    running = replicating(db, place)
    try:
        running.wait_for(f"it holds every event ({primary[-1][0]})")
        assert len(private_folders(db)) == 1, "the killed one's folder is removed, its own is there"
    finally:
        assert running.stop() == 0
    assert not private_folders(db)
    done, again = restored(place, tmp_path, name="again.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert events(again) == primary
    conn = sqlite3.connect(again)
    kept = {row[0] for row in conn.execute("SELECT name FROM entities")}
    conn.close()
    assert set(acknowledged) <= kept


def test_a_restored_follower_serves_the_pages_read_only(built, folder, tmp_path):
    "docs/replication.md's recipe for browsing off the hub: a restored copy, served immutable by plain Datasette with the plugin."
    replicated(built, folder)
    done, copy = restored(folder, tmp_path, name="browse.db")
    assert done.returncode == 0, done.stderr
    before = copy.read_bytes()
    port = free_port()
    follower = subprocess.Popen([sys.executable, "-m", "datasette", "serve", "--immutable", str(copy), "--port", str(port),
                                 "-s", "plugins.datasette-memory.database", "browse", "--secret", "follower"],
                                env=folder.environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        overview = json.loads(fetch(f"http://127.0.0.1:{port}/-/memory.json"))
        assert overview["ok"] and overview["chain"]["ok"] and overview["chain"]["events"] == events(built)[-1][0]
        for page in ("/-/memory", "/-/memory/ledger", "/-/memory/search?q=port", "/-/memory/integrity"):
            assert fetch(f"http://127.0.0.1:{port}{page}")
        token = asyncio.run(Datasette(secret="follower").create_token("agent"))
        asyncio.run(refused_write(f"http://127.0.0.1:{port}/-/memory/mcp", token))
    finally:
        follower.terminate()
        follower.wait(timeout=20)
    assert copy.read_bytes() == before


async def refused_write(url, token):
    async with Client(StreamableHttpTransport(url, headers={"Authorization": f"Bearer {token}"})) as client:
        result = await client.call_tool("create_entities", {"entities": [entity("intruder")]}, raise_on_error=False)
        assert result.is_error


# Point in time


def test_a_copy_as_of_a_moment_before_a_checkpoint_reads_as_the_primary_did(tmp_path, folder):
    db = tmp_path / "memory.db"
    memory = Memory.open(db, project="p", actor="agent", config=LEXICAL)
    running = replicating(db, folder)
    try:
        memory.create_entities([entity("auth", "listens on 8443"), entity("db", "postgres 16")])
        for i in range(5):
            memory.add_observations([{"entityName": "auth", "contents": [f"deploy {i}"]}])
        before = events(db)[-1][0]
        running.wait_for(f"it holds every event ({before})")
        time.sleep(1.2)
        moment = now()
        time.sleep(1.2)
        memory.checkpoint("auth is up")
        memory.delete_entities(["db"])
        for i in range(5):
            memory.add_observations([{"entityName": "auth", "contents": [f"rollback {i}"]}])
        conn = raw(db)  # a SQLite checkpoint too: the write-ahead log folded into the file
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        after = events(db)[-1][0]
        running.wait_for(f"it holds every event ({after})")
    finally:
        assert running.stop() == 0
        memory.close()
    done, copy = restored(folder, tmp_path, "--as-of", moment, name="as-of-time.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert events(copy) == events(db)[:before]
    assert graph(copy) == graph(db, as_of=moment)
    assert graph(copy) != graph(db)
    done, copy = restored(folder, tmp_path, "--as-of", str(before), name="as-of-event.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert events(copy) == events(db)[:before]
    assert graph(copy) == graph(db, as_of=before)
    middle = before + 3
    done, copy = restored(folder, tmp_path, "--as-of", str(middle), name="as-of-middle.db")
    assert done.returncode == 0, done.stdout + done.stderr
    held = events(copy)
    assert middle <= len(held) <= after and held == events(db)[: len(held)]
    if len(held) > middle:
        assert f"no copy ends at event {middle}" in done.stdout


# Bad input: a clear error, and nothing changed


def test_restore_never_replaces_a_file(tmp_path, folder):
    db = tmp_path / "memory.db"
    build(db)
    running = replicating(db, folder)
    running.wait_for("it holds every event")
    assert running.stop() == 0
    existing = tmp_path / "existing.db"
    existing.write_bytes(b"precious")
    done, _ = restored(folder, tmp_path, name="existing.db")
    assert done.returncode == 1
    assert f"{existing}: already exists, and restore never replaces a file" in done.stderr
    assert existing.read_bytes() == b"precious"
    (tmp_path / "orphan.db-wal").write_bytes(b"left over")
    done, _ = restored(folder, tmp_path, name="orphan.db")
    assert done.returncode == 1 and "orphan.db-wal: already exists" in done.stderr
    assert not (tmp_path / "orphan.db").exists()


def test_a_copy_that_does_not_verify_is_not_put_in_place(built, folder, tmp_path):
    "An edit that skipped the ledger streams to the replica like any write: restore finds it and writes nothing, unless told."
    running = replicating(built, folder)
    running.wait_for("it holds every event")
    conn = raw(built)
    conn.execute("UPDATE observations SET content = 'runs on port 9999' WHERE content = 'runs on port 80'")
    conn.close()
    assert running.stop() == 0  # the last upload holds the edit
    done, copy = restored(folder, tmp_path)
    assert done.returncode == 1
    assert "PROBLEMS FOUND" in done.stdout and "runs on port 9999" in done.stdout
    assert f"Nothing was written to {copy}: the copy does not verify" in done.stdout
    assert not copy.exists() and not [p for p in tmp_path.iterdir() if ".restoring-" in p.name]
    done, copy = restored(folder, tmp_path, "--keep-unverified")
    assert done.returncode == 1 and f"Wrote {copy} although it does not verify (--keep-unverified)" in done.stdout
    assert copy.exists()


@pytest.mark.parametrize("as_of, message", [
    ("last tuesday", "'last tuesday' is neither an event id (such as 1234) nor an ISO 8601 time"),
    ("0", "events are numbered from 1"),
    ("999999", "not event 999999: it is not in the replica (yet)"),
    ("2001-01-01T00:00:00Z", "holds no copy from before 2001-01-01T00:00:00.000000Z"),
])
def test_a_moment_the_replica_cannot_give_is_a_clear_error(tmp_path, folder, as_of, message):
    db = tmp_path / "memory.db"
    build(db)
    running = replicating(db, folder)
    running.wait_for("it holds every event")
    assert running.stop() == 0
    done, copy = restored(folder, tmp_path, "--as-of", as_of)
    assert done.returncode in (1, 2)
    assert message in done.stderr
    assert not copy.exists() and not [p for p in tmp_path.iterdir() if ".restoring-" in p.name]


def test_an_empty_replica_restores_nothing(tmp_path, folder):
    done, copy = restored(folder, tmp_path)
    assert done.returncode == 1
    assert "is empty; nothing was restored" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("url, message", [
    ("http://example.com/memory", "is not a replica URL; give file:///path/to/folder or s3://bucket/path"),
    ("s3://AKIAEXAMPLE:secret@bucket/memory", "put no credentials in the URL"),
    ("s3://bucket", "names no path inside the bucket"),
    ("s3://bucket/memory?region=eu-west-1", "give the endpoint and region with --endpoint and --region"),
    ("file://", "names no folder"),
])
@pytest.mark.parametrize("command", ["replicate", "restore", "verify", "serve"])
def test_a_url_that_names_no_replica_is_refused_before_anything_runs(tmp_path, url, message, command):
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    before = tables(db)
    option = {"replicate": ["--to"], "restore": ["--to", str(tmp_path / "new.db"), "--from"], "verify": ["--against"],
              "serve": ["--port", str(free_port()), "--replicate-to"]}[command]
    done = cli([command, "--db", str(db), *option, url] if command != "restore" else [command, *option, url],
               folder_replica(tmp_path / "unused"))
    assert done.returncode == 2
    assert message in done.stderr
    assert "AKIAEXAMPLE:secret" not in done.stderr
    assert tables(db) == before and not (tmp_path / "new.db").exists()


def test_an_endpoint_that_is_not_one_is_refused(tmp_path):
    done = cli(["replicate", "--db", str(tmp_path / "memory.db"), "--to", "s3://bucket/memory", "--endpoint", "localhost:9000"],
               folder_replica(tmp_path / "unused"))
    assert done.returncode == 2 and "is not an endpoint; give http(s)://host[:port]" in done.stderr


def test_a_bucket_that_cannot_be_read_is_said_so(tmp_path, s3_endpoint):
    "No such bucket: verify --against cannot check (exit 2) and replicate does not start, both saying what to check."
    place = bucket_replica(s3_endpoint)
    place.url = "s3://no-such-bucket/team/memory"
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    done = cli(["verify", "--db", str(db), "--against", place.url, *place.options], place)
    assert done.returncode == 2
    assert "could not list the replica at s3://no-such-bucket/team/memory (endpoint http://127.0.0.1:" in done.stderr
    assert "NoSuchBucket" in done.stderr and "check the bucket and path, the endpoint" in done.stderr
    done = cli(["replicate", "--db", str(db), "--to", place.url, *place.options], place)
    assert done.returncode == 1 and "could not list the replica at s3://no-such-bucket/team/memory" in done.stderr
    assert "Replicating " not in done.stderr


def test_replicate_refuses_a_missing_file_a_tampered_one_and_a_second_replication(tmp_path, folder):
    done = cli(["replicate", "--db", str(tmp_path / "missing.db"), "--to", folder.url], folder)
    assert done.returncode == 1 and "missing.db: no such file" in done.stderr
    db = tmp_path / "memory.db"
    build(db)
    rewind(db)
    done = cli(["replicate", "--db", str(db), "--to", folder.url], folder)
    assert done.returncode == 1
    assert "does not verify (head witness: " in done.stderr and "replication starts only from a file that verifies" in done.stderr
    assert not (tmp_path / "replica" / "ltx").exists(), "nothing was uploaded"
    clean = tmp_path / "clean.db"
    build(clean)
    running = replicating(clean, folder)
    try:
        second = cli(["replicate", "--db", str(clean), "--to", f"file://{tmp_path / 'other'}"], folder)
        assert second.returncode == 1 and "clean.db is being replicated already (process " in second.stderr
    finally:
        assert running.stop() == 0


def test_without_the_extra_the_error_names_it(tmp_path):
    "A Python without the replicate extra's Litestream (a venv of its own, the project on its path): the error says what to install."
    bare = tmp_path / "nothing on the path"
    bare.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    db = tmp_path / "memory.db"
    Memory.open(db).close()
    done = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-m", "datasette_memory", "replicate", "--db", str(db),
                           "--to", f"file://{tmp_path / 'replica'}"], capture_output=True, text=True,
                          env={"PATH": str(bare), "PYTHONPATH": os.pathsep.join(sys.path), "HOME": str(tmp_path)})
    assert done.returncode == 1
    assert "Litestream is not installed, and replication runs it: pip install 'datasette-memory[replicate]'" in done.stderr


# The replica as a witness off the machine


def replicated(db, place):
    "Replicate ``db`` until the replica holds all of it, then stop with Ctrl-C."
    running = replicating(db, place)
    running.wait_for(f"it holds every event ({events(db)[-1][0]})")
    running.process.send_signal(signal.SIGINT)
    assert running.process.wait(timeout=90) == 0, running.output()
    assert "Replication stopped: the replica holds event" in running.output()


def without_records(db):
    "What someone who can write as this user does after a rewind: the witness and the last check's record go too."
    witness.witness_path(db).unlink()
    last_check.record_path(db).unlink()


def test_a_rewind_nothing_on_the_machine_can_see_is_caught_by_the_replica(built, folder, tmp_path):
    head = events(built)[-1][0]
    replicated(built, folder)
    rewind(built)
    without_records(built)
    assert cli(["verify", "--db", str(built)], folder).returncode == 0, "nothing on this machine can tell"
    done = cli(["verify", "--db", str(built), "--against", folder.url], folder)
    assert done.returncode == 1
    first = head - NEWEST + 1
    assert f"FAILED  off-machine replica: TAMPERING SUSPECTED: the off-machine replica {folder.url} disagrees" in done.stdout
    assert f"events {first} to {head} are missing from this file" in done.stdout
    # recorded in the witness: every later check reports it, replica or not
    again = cli(["verify", "--db", str(built)], folder)
    assert again.returncode == 1 and f"events {first} to {head} are missing from this file" in again.stdout
    # and a hub will not replicate over the history the file lost
    port = free_port()
    refused = cli(["serve", "--db", str(built), "--port", str(port), "--replicate-to", folder.url], folder, timeout=120)
    assert refused.returncode == 1
    assert "Witness: TAMPERING SUSPECTED" in refused.stderr
    assert f"Replica: TAMPERING SUSPECTED: the off-machine replica {folder.url} disagrees" in refused.stderr
    assert "Replication did not start: it would replace that history in the replica" in refused.stderr
    assert "Sign in as" not in refused.stderr
    done, copy = restored(folder, tmp_path, name="from-replica.db")
    assert done.returncode == 0 and events(copy)[-1][0] == head, "the replica still holds what the file lost"


def test_a_rewrite_is_named_by_its_first_event(built, folder):
    replicated(built, folder)
    conn = raw(built)
    rehash_from(conn, 3, actor="mallory")
    conn.close()
    without_records(built)
    done = cli(["verify", "--db", str(built), "--against", folder.url], folder)
    assert done.returncode == 1
    assert "event 3 of the ledger here is not the replica's (checkpoint" in done.stdout
    assert "by mallory, hash" in done.stdout and "the ledger was rewritten from event 3, here or in the replica" in done.stdout


def test_a_replica_behind_the_file_is_normal_and_says_so(built, folder):
    replicated(built, folder)
    memory = Memory.open(built, project="p", actor="agent", config=LEXICAL)
    for i in range(3):
        memory.create_entities([entity(f"later-{i}")])
    memory.close()
    done = cli(["verify", "--db", str(built), "--against", folder.url], folder)
    assert done.returncode == 0, done.stdout
    head = events(built)[-1][0]
    assert f"is 3 events behind this file (it holds events up to {head - 3} of {head}), which is normal" in done.stdout


def test_after_a_person_acknowledges_replication_goes_over_the_lost_history_only_when_told(built, folder):
    replicated(built, folder)
    rewind(built)
    without_records(built)
    assert cli(["verify", "--db", str(built), "--against", folder.url], folder).returncode == 1
    refused = cli(["replicate", "--db", str(built), "--to", folder.url, "--replace-replica"], folder)
    assert refused.returncode == 1 and "a person acknowledges the divergence at /-/memory/integrity" in refused.stderr
    memory = Memory.open(built, project="p", config=LEXICAL)
    memory.acknowledge_divergences(issue_reviewer("alice"), "rolled back on purpose")
    memory.close()
    refused = cli(["replicate", "--db", str(built), "--to", folder.url], folder)
    assert refused.returncode == 1 and "pass --replace-replica to replicate this file over it" in refused.stderr
    replicated_over = replicating(built, folder, "--replace-replica")
    try:
        replicated_over.wait_for(f"it holds every event ({events(built)[-1][0]})")
    finally:
        assert replicated_over.stop() == 0
    assert "a person acknowledged it" in replicated_over.output()
    done = cli(["verify", "--db", str(built), "--against", folder.url], folder)
    assert done.returncode == 0, done.stdout


def test_another_files_replica_is_not_this_ones(built, folder, tmp_path):
    replicated(built, folder)
    other = tmp_path / "other.db"
    build(other)
    done = cli(["verify", "--db", str(other), "--against", folder.url], folder)
    assert done.returncode == 1 and "the replica holds another memory file (machine " in done.stdout
    refused = cli(["replicate", "--db", str(other), "--to", folder.url], folder)
    assert refused.returncode == 1 and "holds the replica of another memory file" in refused.stderr
