"""
Sync by ledger, case by case: the commands, what is refused (and that a refusal changes nothing), what a stale
peer cannot bring back, projects that are not shared, each origin's chain in verify, a hub's refusals, and a
laptop offline for 10,000 events catching up through a real hub.
"""

import hashlib
import json
import shutil
import sqlite3
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner

from datasette_memory import Memory
from datasette_memory.cli import cli
from datasette_memory.history.file_check import verify_file
from datasette_memory.sync import SyncRefused
from datasette_memory.sync.bundle import make_bundle, sync_bundle
from datasette_memory.sync.hub import sync_hub
from datasette_memory.sync.shared import share

from .tampering import rewind
from .test_sync import LEXICAL, Hub, chains, graph, open_peer


def run(*arguments):
    return CliRunner().invoke(cli, list(arguments), catch_exceptions=False)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ledger(memory):
    return memory.conn.execute("SELECT id, hash FROM events ORDER BY id").fetchall()


@pytest.fixture
def peers(laptops):
    return laptops


@pytest.fixture
def hub(tmp_path):
    (tmp_path / "hub").mkdir()
    running = Hub(tmp_path / "hub")
    yield running
    running.stop()


def test_the_commands_pass_a_bundle_back_and_forth(tmp_path):
    a, b, bundle = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "team.bundle"
    for path in (a, b):
        assert run("share", "team", "--db", str(path)).stdout.endswith("team shared\n")
    Memory.open(a, project="team", config=LEXICAL).create_entities([{"name": "api", "entityType": "svc", "observations": ["from a"]}])
    Memory.open(b, project="team", config=LEXICAL).create_entities([{"name": "db", "entityType": "svc", "observations": ["from b"]}])
    assert run("bundle", str(bundle), "--db", str(a)).stdout.strip() == f"{bundle}: 1 events"
    out = run("sync", str(bundle), "--db", str(b)).stdout
    assert "1 events received, 2 sent, 1 local changes applied (projects: team)" in out  # its own event and its echo of a's
    assert "2 events received, 1 sent, 1 local changes applied" in run("sync", str(bundle), "--db", str(a)).stdout
    assert "1 events received, 0 sent, 0 local changes applied" in run("sync", str(bundle), "--db", str(b)).stdout  # a's echo
    graphs = [graph(Memory.open(path, project="team", config=LEXICAL)) for path in (a, b)]
    assert graphs[0] == graphs[1] and {e[0] for e in graphs[0][0]} == {"api", "db"}
    # again: nothing moves, nothing changes
    before = [ledger(Memory.open(path)) for path in (a, b)], digest(bundle)
    for path in (a, b):
        assert "0 events received, 0 sent, 0 local changes applied" in run("sync", str(bundle), "--db", str(path)).stdout
    assert before == ([ledger(Memory.open(path)) for path in (a, b)], digest(bundle))
    report = json.loads(run("sync", str(bundle), "--db", str(a), "--json").stdout)
    assert report["received"] == report["sent"] == report["applied"] == 0


@pytest.mark.parametrize("arguments, said", [
    (["sync", "{tmp}/missing.bundle"], "no such bundle; make one with datasette-memory bundle"),
    (["sync", "{tmp}/b.db"], "is a memory file, not a bundle"),
    (["sync", "{tmp}/junk.bundle"], "is not a sync bundle"),
    (["sync", "{tmp}/team.bundle", "--project", "elsewhere"], "elsewhere is not shared on this machine: datasette-memory share elsewhere first"),
    (["sync", "http://127.0.0.1:9/"], "needs its API token"),
    (["sync", "http://127.0.0.1:9/", "--token", "x"], "cannot be reached"),
    (["bundle", "{tmp}/team.bundle"], "exists already"),
    (["share", ""], "project"),
])
def test_bad_peers_and_projects_are_refused_and_change_nothing(tmp_path, arguments, said):
    a = tmp_path / "a.db"
    run("share", "team", "--db", str(a))
    Memory.open(tmp_path / "b.db").close()
    (tmp_path / "junk.bundle").write_text("not sqlite at all " * 100)
    run("bundle", str(tmp_path / "team.bundle"), "--db", str(a))
    before = {path.name: digest(path) for path in tmp_path.iterdir() if path.suffix in (".bundle",)}, ledger(Memory.open(a))
    result = CliRunner().invoke(cli, [part.format(tmp=tmp_path) for part in arguments] + ["--db", str(a)])
    assert result.exit_code != 0 and said in result.output, result.output
    assert before == ({path.name: digest(path) for path in tmp_path.iterdir() if path.suffix in (".bundle",)}, ledger(Memory.open(a)))


def test_a_copied_file_is_a_fork_and_is_refused(tmp_path, peers):
    a = peers[0]
    a.create_entities([{"name": "x", "entityType": "t", "observations": []}])
    a.close()
    shutil.copy(tmp_path / "peer0.db", tmp_path / "copy.db")
    original, copy = open_peer(tmp_path / "peer0.db"), open_peer(tmp_path / "copy.db")
    original.create_entities([{"name": "only here", "entityType": "t", "observations": []}])
    copy.create_entities([{"name": "only in the copy", "entityType": "t", "observations": []}])
    bundle = tmp_path / "b.bundle"
    make_bundle(original, bundle)
    held = digest(bundle), ledger(copy)
    with pytest.raises(SyncRefused, match="differs from the one this file's own ledger holds: two files claim one machine id"):
        sync_bundle(copy, bundle)
    assert held == (digest(bundle), ledger(copy))
    # a third file sees both as one machine with two histories
    sync_bundle(peers[1], bundle)
    other = tmp_path / "other.bundle"
    make_bundle(copy, other)
    with pytest.raises(SyncRefused, match="differs from the one this file holds"):
        sync_bundle(peers[1], other)


def test_a_rewound_file_learns_it_from_a_peer(tmp_path, peers):
    "A peer holding events of this file's machine that the file lacks: the file was rewound (or restored from an old copy)."
    a = peers[0]
    a.create_entities([{"name": "x", "entityType": "t", "observations": []}])
    a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(tmp_path / "peer0.db", tmp_path / "old.db")
    a.create_entities([{"name": "y", "entityType": "t", "observations": []}])
    bundle = tmp_path / "b.bundle"
    make_bundle(a, bundle)
    old = open_peer(tmp_path / "old.db")
    with pytest.raises(SyncRefused, match="which this file lacks: this file was rewound"):
        sync_bundle(old, bundle)


def tampered_bundle(tmp_path, peers, change):
    peers[0].create_entities([{"name": "x", "entityType": "t", "observations": ["the truth"]}])
    bundle = tmp_path / "b.bundle"
    make_bundle(peers[0], bundle)
    conn = sqlite3.connect(bundle)
    conn.execute(change)
    conn.commit()
    conn.close()
    return bundle


@pytest.mark.parametrize("change, said", [
    ("UPDATE bundle_events SET new = replace(new, 'truth', 'lie!!')", "its new value does not match its digest"),
    ("UPDATE bundle_events SET actor = 'mallory'", "its hash does not match its contents"),
    ("UPDATE bundle_events SET prev_hash = hash", "does not follow the 0 this file holds"),
    ("UPDATE bundle_events SET clock = 2", "does not follow"),
    ("UPDATE bundle_events SET hash = 'nothex'", "hash must be 64 lowercase hex digits"),
    ("UPDATE bundle_events SET kind = NULL", "kind must be text"),
])
def test_a_tampered_event_is_refused_and_nothing_changes(tmp_path, peers, change, said):
    bundle = tampered_bundle(tmp_path, peers, change)
    before = ledger(peers[1]), digest(bundle)
    with pytest.raises(SyncRefused, match=said):
        sync_bundle(peers[1], bundle)
    assert before == (ledger(peers[1]), digest(bundle))
    assert peers[1].conn.execute("SELECT count(*) FROM memory_sync_events").fetchone() == (0,)


def test_a_stale_peer_cannot_bring_a_deleted_value_back(tmp_path, peers):
    a, b, c = peers
    bundle = tmp_path / "b.bundle"
    a.create_entities([{"name": "db", "entityType": "t", "observations": ["password rotated", "keep"]}])
    a.create_relations([{"from": "db", "to": "api", "relationType": "serves"}])
    make_bundle(a, bundle)
    sync_bundle(b, bundle)  # b holds the values now
    a.delete_observations([{"entityName": "db", "observations": ["password rotated"]}])
    a.delete_relations([{"from": "db", "to": "api", "relationType": "serves"}])
    a.create_entities([{"name": "gone", "entityType": "t", "observations": ["soon"]}])
    a.delete_entities(["gone"])
    sync_bundle(a, bundle)
    # b, still holding the old values, writes on and syncs, and so does c, which never saw them
    b.add_observations([{"entityName": "db", "contents": ["b was here"]}])
    for memory in (b, c, a, b, c):
        sync_bundle(memory, bundle)
    graphs = {graph(memory) for memory in peers}
    assert len(graphs) == 1
    entities, relations = graphs.pop()
    assert entities == {("db", "t", frozenset({"keep", "b was here"}))} and relations == frozenset()


def test_concurrent_edits_end_the_same_whichever_order_they_arrive_in(tmp_path, peers):
    a, b, c = peers
    a.create_entities([{"name": "svc", "entityType": "service", "observations": ["from a"]}])
    b.create_entities([{"name": "svc", "entityType": "database", "observations": ["from b"]}])
    c.create_entities([{"name": "other", "entityType": "t", "observations": []}])
    first, second = tmp_path / "ab.bundle", tmp_path / "cb.bundle"
    make_bundle(a, first)
    make_bundle(c, second)
    sync_bundle(b, first)
    sync_bundle(b, second)  # b: a's events, then c's
    sync_bundle(c, first)   # c: b's and a's events together
    sync_bundle(a, second)  # a: c's and b's
    sync_bundle(a, first)
    sync_bundle(c, first)
    graphs = {graph(memory) for memory in peers}
    assert len(graphs) == 1, graphs
    for memory in (a, b, c, a, b):  # the echoes applying made reach everyone
        sync_bundle(memory, first)
    entities = dict((name, (kind, obs)) for name, kind, obs in graphs.pop()[0])
    # the first creation in the order (a's: earlier) decides the type; both observations are kept
    assert entities["svc"] == ("service", frozenset({"from a", "from b"}))
    assert len({chains(memory) for memory in peers}) == 1
    for i in range(3):
        assert verify_file(tmp_path / f"peer{i}.db")["ok"]


def test_a_foreign_creation_older_than_an_own_unsynced_one_sets_the_type(tmp_path, peers):
    "b has synced before (its tables hold a converged state), then creates a name a created earlier: a's comes first."
    a, b, c = peers
    c.create_entities([{"name": "other", "entityType": "t", "observations": []}])
    make_bundle(c, tmp_path / "c.bundle")
    sync_bundle(b, tmp_path / "c.bundle")
    a.create_entities([{"name": "svc", "entityType": "database", "observations": ["from a"]}])
    b.create_entities([{"name": "svc", "entityType": "service", "observations": ["from b"]}])  # later, not knowing a's
    make_bundle(a, tmp_path / "a.bundle")
    sync_bundle(b, tmp_path / "a.bundle")
    sync_bundle(a, tmp_path / "a.bundle")
    assert graph(a) == graph(b)
    assert ("svc", "database", frozenset({"from a", "from b"})) in graph(b)[0]


def test_a_project_not_shared_stays_and_is_held_opaque_until_shared(tmp_path, peers):
    a, b, _ = peers
    notes = Memory(a.conn, project="notes", config=LEXICAL)
    notes.create_entities([{"name": "plan", "entityType": "t", "observations": ["private plan zq9"]}])
    bundle = tmp_path / "b.bundle"
    make_bundle(a, bundle)
    assert b"zq9" not in bundle.read_bytes()
    sync_bundle(b, bundle)
    assert b.conn.execute("SELECT opaque, project, new FROM memory_sync_events").fetchall() == [(1, None, None)]
    # shared later, the same event goes out whole, and b holds it whole
    share(a.conn, "notes", "tester")
    sync_bundle(a, bundle)
    report = sync_bundle(b, bundle)
    assert b.conn.execute("SELECT opaque, project FROM memory_sync_events").fetchall() == [(0, "notes")]
    # b has not shared notes: held, not applied, and said so
    assert report.waiting == ["notes"] and "not shared here: notes" in report.summary()
    assert Memory(b.conn, project="notes", config=LEXICAL).read_graph()["entities"] == []
    assert "1 local changes applied" in run("share", "notes", "--db", str(tmp_path / "peer1.db")).stdout
    assert [e["name"] for e in Memory(b.conn, project="notes", config=LEXICAL).read_graph()["entities"]] == ["plan"]
    # unshared, new events leave as links only
    assert run("unshare", "notes", "--db", str(tmp_path / "peer0.db")).stdout.endswith("notes is private now\n")
    notes.add_observations([{"entityName": "plan", "contents": ["second private thought kk3"]}])
    sync_bundle(a, bundle)
    assert b"kk3" not in bundle.read_bytes()


def test_verify_reports_each_origin_and_a_rewritten_foreign_event(tmp_path, peers):
    a, b, _ = peers
    a.create_entities([{"name": "x", "entityType": "t", "observations": ["one"]}])
    Memory(a.conn, project="private", config=LEXICAL).create_entities([{"name": "p", "entityType": "t", "observations": []}])
    bundle = tmp_path / "b.bundle"
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    machine_a = a.conn.execute("SELECT value FROM memory_meta WHERE key = 'machine_id'").fetchone()[0]
    b.close()
    report = verify_file(tmp_path / "peer1.db")
    origins = next(check for check in report["checks"] if check["check"] == "origins")
    assert report["ok"] and origins["ok"]
    assert f"machine {machine_a}: 2 events (1 opaque), head 2" in origins["detail"] and "this machine: 1 events" in origins["detail"]
    out = run("verify", "--db", str(tmp_path / "peer1.db")).stdout
    assert f"machine {machine_a}: 2 events (1 opaque)" in out
    conn = sqlite3.connect(tmp_path / "peer1.db")
    conn.execute("DROP TRIGGER memory_sync_events_refuse_update")
    conn.execute("UPDATE memory_sync_events SET new = replace(new, 'one', 'two') WHERE clock = 1")
    conn.commit()
    conn.close()
    report = verify_file(tmp_path / "peer1.db")
    origins = next(check for check in report["checks"] if check["check"] == "origins")
    assert not report["ok"] and origins["problems"] == [
        f"machine {machine_a}: broken after 0 events at event 1: its new value does not match its digest (the value was edited)"]


def post(url, body, token=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_hub_refuses_without_a_token_and_bad_bodies(hub):
    assert post(f"{hub.url}/-/memory/sync/push.json", {"events": []})[0] == 401
    assert "create-token" in post(f"{hub.url}/-/memory/sync/pull.json", {"holdings": {}}, "not-a-token")[1]["error"]
    status, said = post(f"{hub.url}/-/memory/sync/push.json", {"events": [{"machine": "m", "clock": 1}]}, hub.token)
    assert status == 409 and "event 1 of what the peer sent lacks ts, actor" in said["error"]
    opaque = {"machine": "m", "clock": 0, "prev_hash": "0" * 64, "hash": "1" * 64, "opaque": True}
    status, said = post(f"{hub.url}/-/memory/sync/push.json", {"events": [opaque]}, hub.token)
    assert status == 409 and "clock must be a positive integer" in said["error"]
    status, said = post(f"{hub.url}/-/memory/sync/pull.json", {"holdings": {"m": {"clock": "x"}}}, hub.token)
    assert status == 409 and "holdings of machine 'm'" in said["error"]
    assert post(f"{hub.url}/-/memory/sync/push.json", ["x"], hub.token)[0] == 409


def test_the_hub_applies_what_it_shares_and_a_laptop_offline_for_10000_events_catches_up(tmp_path, peers, hub):
    a, b, _ = peers
    hub_memory = open_peer(hub.db)  # the hub shares the project too: it converges like any peer
    hub_memory.close()
    sync_hub(b, hub.url, hub.token)
    for batch in range(10):
        a.create_entities([{"name": f"e{batch}-{i}", "entityType": "t", "observations": []} for i in range(1000)])
    assert a.conn.execute("SELECT count(*) FROM events").fetchone() == (10_000,)
    sync_hub(a, hub.url, hub.token)
    report = sync_hub(b, hub.url, hub.token)
    # a's 10,000 whole, and the hub's 10,000 echoes of them as links of its chain
    assert report.received == 20_000 and report.applied == 10_000
    assert graph(a) == graph(b) == graph(Memory.open(hub.db, project="team", config=LEXICAL))
    assert sync_hub(b, hub.url, hub.token).received == 0
    b.close()
    assert verify_file(tmp_path / "peer1.db")["ok"]


def test_a_file_whose_witness_saw_more_is_not_synced(tmp_path, built):
    "A rewound file's history would spread: sync and bundle refuse it until a person has acknowledged the divergence."
    rewind(built)
    bundle = tmp_path / "other.bundle"
    other = open_peer(tmp_path / "other.db")
    make_bundle(other, bundle)
    other.close()
    before = ledger(Memory.open(built)), digest(bundle)
    for arguments in (["sync", str(bundle)], ["bundle", str(tmp_path / "new.bundle")]):
        result = CliRunner().invoke(cli, [*arguments, "--db", str(built)])
        assert result.exit_code == 1 and "differs from what its witness saw; run datasette-memory verify" in result.output
    assert before == (ledger(Memory.open(built)), digest(bundle)) and not (tmp_path / "new.bundle").exists()
