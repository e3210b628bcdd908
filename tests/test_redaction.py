"""
Redaction: a person removes a leaked secret from every copy memory keeps, on this machine and on every peer a
sync reaches (through a bundle and a real hub), while every file still verifies.

The secret is looked for in the raw bytes of every file: each peer's memory file and its write-ahead log, the
hub's, the bundle, a stale bundle made before the redaction, the vector side file, snapshots before and after.
"""

import hashlib
import json
import pathlib
import shutil
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_memory import Memory
from datasette_memory.core import redacted
from datasette_memory.core.errors import InvalidInput
from datasette_memory.governed.gate import ReviewRequired
from datasette_memory.history.file_check import verify_file
from datasette_memory.sqltools.snapshots import MANUAL, snapshot_folder, take_snapshot
from datasette_memory.sync.bundle import make_bundle, sync_bundle
from datasette_memory.sync.hub import sync_hub

from .governance import issue_reviewer
from .test_sync import LEXICAL, Hub, chains, graph

SECRET = "sk-live-PLAINLY-LEAKED-4f9a2c"
REASON = "a live API key pasted by an agent"


def holds_secret(path: pathlib.Path) -> list[str]:
    "The files of ``path`` (itself, its -wal and -journal) whose bytes hold the secret, in any case."
    found = []
    for file in (path, pathlib.Path(f"{path}-wal"), pathlib.Path(f"{path}-journal")):
        if file.exists():
            data = file.read_bytes()
            if SECRET.encode() in data or SECRET.lower().encode() in data:
                found.append(file.name)
    return found


def leak(memory: Memory) -> None:
    "Store the secret the ways an agent could: in an observation kept, one deleted, one edited away, an entity deleted."
    memory.create_entities([{"name": "payments", "entityType": "service",
                             "observations": [f"calls the processor with {SECRET} in the header", "owned by team billing"]}])
    memory.add_observations([{"entityName": "payments", "contents": [f"key {SECRET} rotates monthly"]}])
    memory.delete_observations([{"entityName": "payments", "observations": [f"key {SECRET} rotates monthly"]}])
    memory.create_entities([{"name": "scratch", "entityType": "note", "observations": [f"{SECRET}"]}])
    memory.delete_entities(["scratch"])


def leak_governed(memory: Memory) -> None:
    "Store the secret in the governed tier: a claim and its evidence, a fact's rationale."
    memory.governed.propose_claim("payments", "api key", SECRET, evidence=[f"seen in the {SECRET} log line"])
    memory.governed.record_fact(issue_reviewer("olive"), "payments", "auth", "bearer token", f"rotated after {SECRET} leaked")


def redacted_observation(memory: Memory) -> str:
    (entity,) = memory.open_nodes(["payments"])["entities"]
    return entity["observations"][0]


def test_a_redaction_removes_the_text_from_the_file_and_the_file_still_verifies(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    before = take_snapshot(path, snapshot_folder(path), MANUAL)
    assert memory.search_nodes("processor")["entities"]

    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")

    assert done["strings"] == 3 and done["replaced"]["observations"] == 1
    assert done["file"] == {"vacuumed": True, "log_truncated": True, "replicating": False}
    assert done["remaining"] == []
    assert done["older_copies"] == [{"path": str(before), "bytes": before.stat().st_size, "deleted": False}]
    mark = done["mark"]
    assert mark == f"[redacted {hashlib.sha256(SECRET.encode()).hexdigest()[:12]}]"
    assert redacted_observation(memory) == f"calls the processor with {mark} in the header"
    # no search finds it: the word index, the trigram index, the deleted-words index
    for query in (SECRET, "sk-live", "PLAINLY", "4f9a2c"):
        assert memory.search_nodes(query)["entities"] == [], query
    assert memory.search_nodes("processor")["entities"][0]["name"] == "payments"
    # every event keeps its digests and hash; the redaction is an event of the person's
    event = memory.conn.execute("SELECT actor, kind, target, new FROM events WHERE id = ?", [done["event"]]).fetchone()
    assert event[:3] == ("alice", "redact", "payments") and json.loads(event[3])["reason"] == REASON
    assert SECRET not in event[3]
    # ordinary writes after it; then the file verifies, and holds the secret nowhere
    memory.add_observations([{"entityName": "payments", "contents": ["retries twice"]}])
    after = take_snapshot(path, snapshot_folder(path), MANUAL)
    memory.close()
    assert verify_file(path)["ok"]
    assert holds_secret(path) == [] and holds_secret(after) == []
    assert holds_secret(before) == [before.name]  # listed above, kept as the person did not ask


def test_claims_facts_and_their_records_are_redacted_with_their_events(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    leak_governed(memory)
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    mark = done["mark"]
    assert done["replaced"]["records"] == 4 and done["remaining"] == []
    (claim,) = memory.governed.list_claims()
    assert claim["object"] == mark and claim["evidence"][0]["text"] == f"seen in the {mark} log line"
    key = memory.conn.execute("SELECT object_key FROM claims WHERE id = ?", [claim["id"]]).fetchone()[0]
    assert key == mark.casefold()
    (fact,) = memory.governed.facts_now()
    assert fact["rationale"] == f"rotated after {mark} leaked"
    # the claim can still be reviewed, and a new claim of the same redacted value is the same value
    memory.governed.reject_claim(issue_reviewer(), claim["id"], "not a setting to keep")
    memory.close()
    assert holds_secret(path) == []
    found = verify_file(path)
    assert found["ok"], [check for check in found["checks"] if not check["ok"]]


def test_older_snapshots_that_hold_it_are_deleted_when_the_person_asks(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    before = take_snapshot(path, snapshot_folder(path), MANUAL)
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments", delete_older_copies=True)
    assert done["older_copies"] == [{"path": str(before), "bytes": done["older_copies"][0]["bytes"], "deleted": True}]
    assert not before.exists()
    memory.close()


def test_a_tampered_redacted_value_is_still_an_edit(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    memory.close()
    conn = sqlite3.connect(path)
    # the trigger refuses an edit that is not a redaction's
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET new = '\"something else\"' WHERE id = 1")
    # a direct writer that drops it: the value no longer holds the redaction's string, and verify says so
    conn.execute("DROP TRIGGER events_refuse_update")
    conn.execute("UPDATE events SET new = replace(new, 'in the header', 'in the body [redacted ') WHERE id = 1")
    conn.commit()
    conn.close()
    found = verify_file(path)
    assert not found["ok"]
    chain = next(check for check in found["checks"] if check["check"] == "ledger chain")
    assert chain["problems"][0]["row"] == 1 and "new value does not match its digest" in chain["problems"][0]["found"]
    assert done["event"] > 1


@pytest.mark.parametrize("text, reason, said", [
    ("sk-", REASON, "would match too much"),
    ("never stored anywhere", REASON, "stored nowhere in project team"),
    ("payments", REASON, "part of a name"),
    ("entityType", REASON, "only in their structure"),
    (SECRET, f"it was {SECRET}", "holds the text being redacted"),
    (SECRET, "", "reason"),
    (None, REASON, "give the text to redact"),
])
def test_a_redaction_that_cannot_be_done_says_why_and_changes_nothing(tmp_path, text, reason, said):
    memory = Memory.open(tmp_path / "memory.db", project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    before = memory.conn.execute("SELECT count(*), max(hash) FROM events").fetchone()
    with pytest.raises(InvalidInput, match=said):
        memory.redact(issue_reviewer(), text, reason, "payments")
    assert memory.conn.execute("SELECT count(*), max(hash) FROM events").fetchone() == before
    assert SECRET in redacted_observation(memory)
    memory.close()


def test_a_text_that_is_also_a_field_name_is_redacted_from_values_only(tmp_path):
    "An observation that is exactly a field name of the ledger's values: the observation is redacted, the field names stay."
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL)
    memory.create_entities([{"name": "form", "entityType": "page", "observations": ["entityType"]}])
    memory.create_relations([{"from": "form", "to": "form", "relationType": "links"}])
    done = memory.redact(issue_reviewer(), "entityType", REASON, "form")
    assert done["strings"] == 1 and done["replaced"]["observations"] == 1
    (entity,) = memory.open_nodes(["form"])["entities"]
    assert entity == {"name": "form", "entityType": "page", "observations": [done["mark"]]}
    created = json.loads(memory.conn.execute("SELECT new FROM events WHERE kind = 'create_entity'").fetchone()[0])
    assert created == {"name": "form", "entityType": "page", "observations": [done["mark"]]}
    memory.close()
    assert verify_file(path)["ok"]


def test_only_a_person_redacts(tmp_path):
    memory = Memory.open(tmp_path / "memory.db", project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    with pytest.raises(ReviewRequired):
        memory.redact("alice", SECRET, REASON, "payments")
    assert SECRET in redacted_observation(memory)
    memory.close()


def test_a_redaction_reaches_every_peer_and_a_stale_copy_cannot_bring_it_back(tmp_path, laptops):
    a, b, c = laptops
    a.scope.allow_secrets = True
    (tmp_path / "hub").mkdir()
    hub = Hub(tmp_path / "hub")
    try:
        bundle = tmp_path / "a-b.bundle"
        leak(a)
        a.governed.propose_claim("payments", "api key", SECRET)  # a claim travels too
        make_bundle(a, bundle)
        sync_bundle(b, bundle)
        sync_hub(b, hub.url, hub.token)
        sync_hub(c, hub.url, hub.token)
        assert SECRET in redacted_observation(c)
        stale = tmp_path / "stale.bundle"
        shutil.copy(bundle, stale)  # a copy made before the redaction, passed around later

        done = a.redact(issue_reviewer(), SECRET, REASON, "payments")
        sync_bundle(a, bundle)
        sync_bundle(b, bundle)
        sync_hub(b, hub.url, hub.token)
        sync_hub(c, hub.url, hub.token)
        sync_bundle(c, stale)  # c takes the old copies: they are held redacted, and the stale bundle is rewritten
        sync_hub(a, hub.url, hub.token)

        mark = done["mark"]
        for memory in (a, b, c):
            assert redacted_observation(memory) == f"calls the processor with {mark} in the header"
            assert memory.search_nodes(SECRET)["entities"] == []
        assert [claim["object"] for claim in a.governed.list_claims()] == [mark]
        for memory in (b, c):  # a proposal travels as an event (a rejection elsewhere checks it), held redacted
            (proposal,) = memory.conn.execute("SELECT new FROM memory_sync_events WHERE kind = 'propose_claim'").fetchone()
            assert json.loads(proposal)["object"] == mark
        assert graph(a) == graph(b) == graph(c)
        assert chains(a) == chains(b) == chains(c)
        files = [pathlib.Path(memory.conn.execute("PRAGMA database_list").fetchone()[2]) for memory in (a, b, c)]
        for memory in (a, b, c):
            memory.close()
        for path in files:
            assert holds_secret(path) == [], path
            found = verify_file(path)
            assert found["ok"], [check for check in found["checks"] if not check["ok"]]
            origins = next(check for check in found["checks"] if check["check"] == "origins")
            assert "broken" not in origins["detail"]
        assert holds_secret(bundle) == [] and holds_secret(stale) == []
    finally:
        hub.stop()
    assert holds_secret(hub.db) == []
    assert verify_file(hub.db)["ok"]


def test_the_vector_side_file_embeds_the_redacted_text_afterwards(tmp_path, semantic):
    from datasette_memory.vectors.entity_texts import entity_texts
    from datasette_memory.vectors.side_file import side_file, side_file_path_for

    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", allow_secrets=True)
    leak(memory)
    assert memory.wait_for_semantic_index(timeout=120)

    def stored_digest():
        with side_file(memory.conn) as side:
            return side.execute("SELECT digest FROM entity_digests WHERE name = 'payments'").fetchone()[0]

    before = stored_digest()
    done = memory.redact(issue_reviewer(), SECRET, REASON, "payments")
    assert done["embedded"] == 1
    (now,) = entity_texts(memory.conn, "project = ? AND name = ?", ["team", "payments"])
    assert stored_digest() == now.digest != before  # the vector is the redacted text's
    assert memory.wait_for_semantic_index(timeout=120)
    memory.close()
    assert holds_secret(path) == [] and holds_secret(side_file_path_for(path)) == []
    assert verify_file(path)["ok"]


def test_a_redaction_kept_private_does_not_break_a_relay(tmp_path, laptops):
    "b holds a's events but does not share the project: its redaction stays home, and it relays what it redacted opaque."
    from datasette_memory.sync.shared import unshare

    a, b, c = laptops
    a.scope.allow_secrets = True
    unshare(b.conn, "team")
    ab, bc = tmp_path / "a-b.bundle", tmp_path / "b-c.bundle"
    leak(a)
    make_bundle(a, ab)
    sync_bundle(b, ab)  # b holds a's events, whole, and does not apply them
    b.redact(issue_reviewer("bob"), SECRET, REASON, "payments")
    sync_bundle(b, ab)  # nor does it rewrite a's bundle, whose copies only a's own redaction could vouch for
    assert holds_secret(ab) == [ab.name]
    make_bundle(b, bc)
    sync_bundle(c, bc)  # taken: what b redacted came opaque, not as an edit
    assert holds_secret(bc) == []
    sync_bundle(c, ab)  # c gets a's events whole from a's bundle: b's redaction never left b
    assert SECRET in redacted_observation(c)
    for memory in (a, b, c):
        assert memory.verify_chain().ok
    b_path = pathlib.Path(b.conn.execute("PRAGMA database_list").fetchone()[2])
    b.close()
    assert holds_secret(b_path) == []
    laptops.remove(b)


def test_a_peer_embeds_the_redacted_text_when_the_redaction_arrives(tmp_path, semantic):
    from datasette_memory.sync.shared import share
    from datasette_memory.vectors.entity_texts import entity_texts
    from datasette_memory.vectors.side_file import side_file, side_file_path_for

    a = Memory.open(tmp_path / "a.db", project="team", allow_secrets=True)
    b = Memory.open(tmp_path / "b.db", project="team")
    for memory in (a, b):
        share(memory.conn, "team", "tester")
    bundle = tmp_path / "team.bundle"
    leak(a)
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    assert b.wait_for_semantic_index(timeout=120)

    def stored_digest():
        with side_file(b.conn) as side:
            return side.execute("SELECT digest FROM entity_digests WHERE name = 'payments'").fetchone()[0]

    before = stored_digest()
    a.redact(issue_reviewer(), SECRET, REASON, "payments")
    sync_bundle(a, bundle)
    sync_bundle(b, bundle)
    (now,) = entity_texts(b.conn, "project = ? AND name = ?", ["team", "payments"])
    assert SECRET not in now.text
    assert stored_digest() == now.digest != before
    for memory in (a, b):
        assert memory.wait_for_semantic_index(timeout=120)
        memory.close()
    for name in ("a.db", "b.db"):
        assert holds_secret(tmp_path / name) == [] and holds_secret(side_file_path_for(tmp_path / name)) == []
        assert verify_file(tmp_path / name)["ok"]


def test_two_texts_redacted_from_one_string_on_two_laptops_end_the_same_everywhere(tmp_path, laptops):
    a, b, c = laptops
    other = "ghp_SECONDLEAKEDTOKEN77"
    for memory in (a, b, c):
        memory.scope.allow_secrets = True
    a.create_entities([{"name": "deploy", "entityType": "job", "observations": [f"uses {SECRET} and {other} to publish"]}])
    bundle = tmp_path / "team.bundle"
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    sync_bundle(c, bundle)
    # before either hears of the other's: a removes one key, b the other
    a.redact(issue_reviewer("alice"), SECRET, REASON, "deploy")
    b.redact(issue_reviewer("bob"), other, "a second key", "deploy")
    for memory in (c, a, b, c, a, b):
        sync_bundle(memory, bundle)
    both = f"uses {redacted.mark(SECRET)} and {redacted.mark(other)} to publish"
    for memory in (a, b, c):
        assert memory.open_nodes(["deploy"])["entities"][0]["observations"] == [both]
    assert graph(a) == graph(b) == graph(c)
    paths = [pathlib.Path(memory.conn.execute("PRAGMA database_list").fetchone()[2]) for memory in (a, b, c)]
    for memory in (a, b, c):
        memory.close()
    laptops.clear()
    for path in [*paths, bundle]:
        data = path.read_bytes()
        assert SECRET.encode() not in data and other.encode() not in data, path
    for path in paths:
        assert verify_file(path)["ok"], path


def resolution(*redactions):
    return redacted.Resolver([redacted.Redaction(order, replacements, (redacted.text_digest(text), len(text)))
                              for order, replacements, text in redactions])


def test_every_copy_of_a_string_comes_to_the_same_end_whatever_it_went_through():
    original = "k1 and k2 and k3 here"
    d = redacted.text_digest
    m1, m2, m3 = (redacted.mark(k) for k in ("k1", "k2", "k3"))
    r1 = original.replace("k1", m1)
    r2 = original.replace("k2", m2)
    r13 = r1.replace("k3", m3)  # made on a laptop that held r1 already
    everything = [
        (("2026-01-01", "a", 1), {d(original): r1}, "k1"),
        (("2026-01-02", "b", 1), {d(original): r2}, "k2"),
        (("2026-01-03", "c", 1), {d(r1): r13}, "k3"),
    ]
    final = f"{m1} and {m2} and {m3} here"
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        resolver = resolution(*[everything[i] for i in order])
        for copy in (original, r1, r2, r13):
            assert (resolver.follow(copy) or copy) == final, (order, copy)
        assert final in resolver.produced()
    # only the chained one known: a copy that never had k1 removed keeps it until that redaction arrives
    assert resolution(everything[2]).follow(original) is None
    # one text redacted on two machines writes the same string: nothing to resolve
    assert resolution((("2026-01-01", "a", 1), {d(original): r1}, "k1"),
                      (("2026-01-02", "b", 1), {d(original): r1}, "k1")).follow(original) == r1


@given(data=st.data(), count=st.integers(1, 4))
@settings(max_examples=200, deadline=None)
def test_any_history_of_redactions_of_one_string_resolves_to_every_text_removed(data, count):
    "Each redaction removes its text from a copy some earlier one made (or the original), stamped at any time."
    keys = [f"key{i}-{'x' * i}" for i in range(count)]
    original = " | ".join(keys) + " | rest"
    versions, made = [original], []
    for i, key in enumerate(keys):
        base = data.draw(st.sampled_from(versions))
        replaced = base.replace(key, redacted.mark(key))
        made.append(((data.draw(st.sampled_from(["2026-01-01", "2026-01-02", "2026-01-03"])), f"m{i}", i),
                     {redacted.text_digest(base): replaced}, key))
        versions.append(replaced)
    resolver = resolution(*made)
    final = original
    for key in keys:
        final = final.replace(key, redacted.mark(key))
    for copy in versions:
        assert (resolver.follow(copy) or copy) == final
    assert final in resolver.produced()


def test_tamper_evidence_outlasts_a_redaction_and_the_writes_after_it(tmp_path):
    "A rewind, then a person's redaction (a write that rewrites the file), then ordinary writes: verify still fails."
    from .tampering import build, rewind

    path = tmp_path / "memory.db"
    build(path)
    rewind(path)
    memory = Memory.open(path, project="p", actor="claude", config=LEXICAL)
    memory.redact(issue_reviewer(), "port 80", "not a secret, but redacted all the same", "svc-a")
    memory.add_observations([{"entityName": "svc-a", "contents": ["an ordinary write after it"]}])
    memory.close()
    assert not verify_file(path)["ok"]


def test_a_forged_redaction_mark_is_an_edit_even_after_a_real_redaction(tmp_path):
    "A value edited to look redacted, with no redaction behind it, is reported; a later real redaction of another text does not vouch for it."
    from .tampering import build, raw, triggers_dropped

    path = tmp_path / "memory.db"
    build(path)
    conn = raw(path)
    with triggers_dropped(conn, "events_refuse_update"):
        conn.execute("UPDATE events SET new = ? WHERE id = 2", [json.dumps(f"runs on {redacted.mark('port 80')}")])
    conn.commit()
    conn.close()
    memory = Memory.open(path, project="p", actor="claude", config=LEXICAL)
    memory.redact(issue_reviewer(), "obs 3", "another text", "svc-3")
    memory.add_observations([{"entityName": "svc-3", "contents": ["an ordinary write after it"]}])
    memory.close()
    chain = next(check for check in verify_file(path)["checks"] if check["check"] == "ledger chain")
    assert chain["problems"][0]["row"] == 2 and "value does not match its digest" in chain["problems"][0]["found"]
