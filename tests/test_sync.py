"""
Sync by ledger between real memory files: bundles passed between laptops and a real ``datasette-memory serve`` hub.

Three peers in temporary folders apply random operations (a Hypothesis state
machine) and sync in random pairs through bundles and through the hub: once
everyone has synced, all hold the same graph and the same events of every
origin, each file verifies, nothing deleted comes back, no private project's
text is in another peer's file, the hub's or a bundle's bytes, and a key a
person redacted on any laptop is in no file's bytes at all.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.core.errors import InvalidInput
from datasette_memory.governed.claims import ClaimRejected
from datasette_memory.history.file_check import verify_file
from datasette_memory.sync.bundle import make_bundle, sync_bundle
from datasette_memory.sync.hub import sync_hub
from datasette_memory.sync.shared import share

from .governance import issue_reviewer
from .test_cli import fetch, free_port

LEXICAL = Config(search=SearchSettings(semantic=False))
ENV = {**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


def open_peer(path: pathlib.Path, project: str = "team", shared: bool = True) -> Memory:
    memory = Memory.open(path, project=project, actor="tester", config=LEXICAL)
    if shared:
        share(memory.conn, project, "tester")
    return memory


def graph(memory: Memory) -> tuple[frozenset, frozenset]:
    "The graph as sets: observation order within an entity is each peer's own (see docs/sync.md)."
    read = memory.read_graph()
    entities = frozenset((e["name"], e["entityType"], frozenset(e["observations"])) for e in read["entities"])
    return entities, frozenset((r["from"], r["to"], r["relationType"]) for r in read["relations"])


def chains(memory: Memory) -> frozenset:
    "Every event this file holds, of every origin, as (machine, clock, hash)."
    own = memory.conn.execute("SELECT machine, clock, hash FROM events").fetchall()
    foreign = memory.conn.execute("SELECT machine, clock, hash FROM memory_sync_events").fetchall()
    return frozenset(own + foreign)


class Hub:
    """A real ``datasette-memory serve`` on loopback, with a token from ``create-token``."""

    def __init__(self, folder: pathlib.Path):
        self.db = folder / "hub.db"
        Memory.open(self.db, config=LEXICAL).close()
        self.token = subprocess.run([sys.executable, "-m", "datasette_memory", "create-token", "laptop", "--db", str(self.db)],
                                    env=ENV, capture_output=True, text=True, check=True).stdout.strip()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen([sys.executable, "-m", "datasette_memory", "serve", "--db", str(self.db), "--port", str(port)],
                                        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                fetch(f"{self.url}/-/plugins.json", timeout=2)
                break
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise AssertionError("the hub did not start")
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# The state machine: three laptops, one hub, bundles between pairs

NAMES = st.sampled_from(["postgres", "checkout-api", "redis", "café ☕", "a/b"])
WORDS = st.sampled_from(["uses port 5432", "owned by team x", "deprecated", "naïve ünïcode", "'quoted' \"text\""])
TYPES = st.sampled_from(["service", "database"])
PEERS = st.integers(0, 2)
VALUES = st.sampled_from(["postgres 15", "postgres 16", "MySQL 5"])
_reviewers: dict[int, object] = {}


def reviewer(peer: int):
    "The person at laptop ``peer`` (issued once by the real gate, reused)."
    if peer not in _reviewers:
        _reviewers[peer] = issue_reviewer(f"person{peer}")
    return _reviewers[peer]


def facts_seen(memory: Memory) -> frozenset:
    "Each fact by what it says and who recorded it when, with its validity and history (row ids are each file's own)."
    rows = memory.conn.execute(
        "SELECT f.id, f.subject, f.object, f.valid_from, f.recorded_at, f.recorded_by, f.valid_to, f.retracted_at FROM facts f"
    ).fetchall()
    return frozenset((*row[1:], tuple(memory.conn.execute(
        "SELECT act, valid_to, recorded_at, actor, rationale FROM fact_history WHERE fact_id = ? ORDER BY recorded_at, id",
        [row[0]]).fetchall())) for row in rows)


class Laptops(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.folder = pathlib.Path(tempfile.mkdtemp(prefix="sync-"))
        (self.folder / "hub").mkdir()
        self.hub = Hub(self.folder / "hub")
        self.project = "team"
        self.peers = [open_peer(self.folder / f"peer{i}.db", self.project) for i in range(3)]
        self.deleted: set[tuple] = set()  # (entity, content or None) deleted and not added again since
        self.private: list[str] = []
        self.rejected: set[tuple[str, str]] = set()
        self.leaks: list[tuple[str, int]] = []  # keys an agent leaked (each stored once), and the laptop it was on
        self.redacted: set[str] = set()  # leaks a person redacted

    def remember_added(self, name: str, contents: list[str]) -> None:
        self.deleted -= {(name, None)} | {(name, content) for content in contents}

    @rule(peer=PEERS, name=NAMES, entity_type=TYPES, contents=st.lists(WORDS, max_size=2, unique=True))
    def create(self, peer, name, entity_type, contents):
        created = self.peers[peer].create_entities([{"name": name, "entityType": entity_type, "observations": contents}])
        if created:
            self.remember_added(name, contents)

    @rule(peer=PEERS, data=st.data(), content=WORDS)
    def add(self, peer, data, content):
        names = [e["name"] for e in self.peers[peer].read_graph()["entities"]]
        if names:
            name = data.draw(st.sampled_from(sorted(names)))
            self.peers[peer].add_observations([{"entityName": name, "contents": [content]}])
            self.remember_added(name, [content])

    @rule(peer=PEERS, data=st.data())
    def delete_observation(self, peer, data):
        entities = [(e["name"], o) for e in self.peers[peer].read_graph()["entities"] for o in e["observations"]]
        if entities:
            name, content = data.draw(st.sampled_from(sorted(entities)))
            self.peers[peer].delete_observations([{"entityName": name, "observations": [content]}])
            self.deleted.add((name, content))

    @rule(peer=PEERS, name=NAMES)
    def delete_entity(self, peer, name):
        if any(e["name"] == name for e in self.peers[peer].read_graph()["entities"]):
            self.peers[peer].delete_entities([name])
            self.deleted.add((name, None))

    @rule(peer=PEERS, source=NAMES, to_name=NAMES, kind=st.sampled_from(["uses", "calls"]))
    def relate(self, peer, source, to_name, kind):
        self.peers[peer].create_relations([{"from": source, "to": to_name, "relationType": kind}])

    @rule(peer=PEERS, data=st.data())
    def unrelate(self, peer, data):
        relations = self.peers[peer].read_graph()["relations"]
        if relations:
            self.peers[peer].delete_relations([data.draw(st.sampled_from(relations))])

    @rule(peer=PEERS)
    def write_privately(self, peer):
        secret = f"PRIVATE-{len(self.private)}-xq7"
        Memory(self.peers[peer].conn, project="private-notes", config=LEXICAL).create_entities(
            [{"name": f"note {secret}", "entityType": "secret", "observations": [secret]}])
        self.private.append(secret)

    @rule(peer=PEERS, name=NAMES)
    def leak(self, peer, name):
        "An agent stores a key in an observation of the shared project."
        key = f"LEAKED-{len(self.leaks)}-k3y"
        text = f"token {key} in the config"
        if not self.peers[peer].create_entities([{"name": name, "entityType": "service", "observations": [text]}]):
            self.peers[peer].add_observations([{"entityName": name, "contents": [text]}])
        self.remember_added(name, [text])
        self.leaks.append((key, peer))

    @rule(peer=PEERS, data=st.data())
    def redact(self, peer, data):
        "A person redacts a leaked key where it arrived, else where it was stored; the others apply it when they sync."
        if self.leaks:
            key, writer = data.draw(st.sampled_from(self.leaks))
            for who in (peer, writer):
                try:
                    self.peers[who].redact(reviewer(who), key, "a leaked key", "team")
                except InvalidInput:
                    continue  # not stored on this laptop (yet), or redacted already: the laptop that stored it holds it
                self.redacted.add(key)
                return

    @rule(peer=PEERS, subject=NAMES, value=VALUES)
    def record_fact(self, peer, subject, value):
        try:
            self.peers[peer].governed.record_fact(reviewer(peer), subject, "uses", value, "seen in the config")
        except InvalidInput:
            pass  # the value holds already

    @rule(peer=PEERS, data=st.data())
    def invalidate_own_fact(self, peer, data):
        "A person invalidates a fact they recorded (changes to one fact come from one machine: see docs/sync.md)."
        mine = [f for f in self.peers[peer].governed.facts_now() if f["recorded_by"] == f"person{peer}"]
        if mine:
            fact = data.draw(st.sampled_from(mine))
            self.peers[peer].governed.invalidate_fact(reviewer(peer), fact["id"], "no longer true")

    @rule(peer=PEERS, subject=NAMES, value=VALUES)
    def reject_a_claim(self, peer, subject, value):
        try:
            proposed = self.peers[peer].governed.propose_claim(subject, "runs", value)
        except ClaimRejected:
            return
        if proposed["claim"] is not None:
            self.peers[peer].governed.reject_claim(reviewer(peer), proposed["claim"]["id"], "not so")
            self.rejected.add((subject, value))

    @rule(first=PEERS, second=PEERS)
    def pass_a_bundle(self, first, second):
        "One laptop writes a bundle, the other syncs with it and passes it back."
        path = self.folder / f"bundle-{first}-{second}.bundle"
        if not path.exists():
            make_bundle(self.peers[first], path)
        for peer in (first, second, first):
            sync_bundle(self.peers[peer], path)

    @rule(peer=PEERS)
    def sync_with_hub(self, peer):
        sync_hub(self.peers[peer], self.hub.url, self.hub.token)

    @invariant()
    def each_file_verifies(self):
        for memory in self.peers:
            assert memory.verify_chain().ok

    def teardown(self):
        try:
            self.everyone_syncs_then_agrees()
        finally:
            for memory in self.peers:
                memory.close()
            self.hub.stop()
            shutil.rmtree(self.folder, ignore_errors=True)

    def everyone_syncs_then_agrees(self):
        for _ in range(4):  # until a round moves nothing: applying makes local events the others then hold
            moved = [sync_hub(memory, self.hub.url, self.hub.token) for memory in self.peers]
            if not any(report.received or report.sent or report.applied for report in moved):
                break
        graphs = {graph(memory) for memory in self.peers}
        assert len(graphs) == 1, graphs
        assert len({chains(memory) for memory in self.peers}) == 1
        assert len({facts_seen(memory) for memory in self.peers}) == 1
        for memory in self.peers:  # a value a person rejected anywhere is refused everywhere
            for subject, value in self.rejected:
                try:
                    memory.governed.propose_claim(subject, "runs", value)
                except ClaimRejected:
                    continue
                raise AssertionError(f"{subject} runs {value} was rejected, yet proposed again")
        # a second round changes nothing
        before = [memory.conn.execute("SELECT count(*) FROM events").fetchone() for memory in self.peers]
        for peer in range(3):
            assert sync_hub(self.peers[peer], self.hub.url, self.hub.token).applied == 0
        assert before == [memory.conn.execute("SELECT count(*) FROM events").fetchone() for memory in self.peers]
        for bundle in self.folder.glob("*.bundle"):  # a bundle synced after a redaction holds it redacted
            sync_bundle(self.peers[0], bundle)
        entities, _ = graphs.pop()
        held = {(name, None) for name, _, _ in entities} | {(name, o) for name, _, obs in entities for o in obs}
        assert not (self.deleted & held), f"deleted values came back: {self.deleted & held}"
        for i, memory in enumerate(self.peers):
            memory.close()
            report = verify_file(self.folder / f"peer{i}.db")
            assert report["ok"], [c for c in report["checks"] if not c["ok"]]
        self.peers = [Memory.open(self.folder / f"peer{i}.db", project=self.project, config=LEXICAL) for i in range(3)]
        self.no_private_text_elsewhere()
        self.no_redacted_text_anywhere()

    def no_redacted_text_anywhere(self):
        "A redacted key is in no file: no laptop's, no bundle's, not the hub's (its log included)."
        for key in self.redacted:
            holders = {path.name for path in self.folder.rglob("*") if path.is_file() and key.encode() in path.read_bytes()}
            assert not holders, (key, holders)

    def no_private_text_elsewhere(self):
        "A private project's text is in its own laptop's file and nowhere else: other laptops, bundles, the hub."
        for secret in self.private:
            word = secret.encode()
            holders = {path.name.partition(".")[0] for path in self.folder.rglob("*") if path.is_file() and word in path.read_bytes()}
            assert len(holders) == 1 and holders.pop().startswith("peer"), (secret, holders)


def run_laptops(examples: int) -> None:
    run = settings(max_examples=int(os.environ.get("SYNC_EXAMPLES", examples)), stateful_step_count=25, deadline=None,
                   suppress_health_check=list(HealthCheck))(type(f"Laptops{examples}", (Laptops,), {}))
    run.TestCase().runTest()


def test_three_laptops_converge_through_bundles_and_a_hub():
    run_laptops(12)


@pytest.mark.large
def test_three_laptops_converge_at_length():
    run_laptops(50)
