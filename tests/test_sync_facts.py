"""
Facts across machines: a fact a person recorded on one laptop, and each change to its validity made on any
laptop, reach every peer with the person who made it; every peer ends with the same facts and the same history
in any order of syncs; the files verify; a private project's facts stay home.
"""

import pytest

from datasette_memory import Memory
from datasette_memory.history.file_check import verify_file
from datasette_memory.sync.bundle import make_bundle, sync_bundle

from .governance import issue_reviewer
from .test_sync import LEXICAL


def facts_seen(memory):
    "Each fact by what it says and who recorded it when, with its validity and history (ids are each file's own)."
    conn = memory.conn
    ids = {}
    for id, subject, predicate, object, valid_from, recorded_at, recorded_by in conn.execute(
            "SELECT id, subject, predicate, object, valid_from, recorded_at, recorded_by FROM facts ORDER BY id"):
        ids[id] = (subject, predicate, object, valid_from, recorded_at, recorded_by)
    seen = set()
    for id, key in ids.items():
        valid_to, retracted_at, supersedes, superseded_by = conn.execute(
            "SELECT valid_to, retracted_at, supersedes, superseded_by FROM facts WHERE id = ?", [id]).fetchone()
        history = tuple(conn.execute("SELECT act, valid_to, recorded_at, actor, rationale FROM fact_history WHERE fact_id = ? "
                                     "ORDER BY recorded_at, id", [id]).fetchall())
        seen.add((key, valid_to, retracted_at, ids.get(supersedes), ids.get(superseded_by), history))
    return frozenset(seen)


def everyone(laptops, bundle):
    for memory in [*laptops, *laptops]:
        sync_bundle(memory, bundle)


def test_facts_and_their_validity_reach_every_laptop_with_their_person(tmp_path, laptops):
    a, b, c = laptops
    alice, bob = issue_reviewer("alice"), issue_reviewer("bob")
    bundle = tmp_path / "team.bundle"
    recorded = a.governed.record_fact(alice, "auth-service", "uses database", "postgres 15", "from the runbook")["fact"]
    doomed = a.governed.record_fact(alice, "cache", "is", "memcached", "as deployed")["fact"]
    make_bundle(a, bundle)
    everyone(laptops, bundle)
    assert len({facts_seen(memory) for memory in laptops}) == 1
    on_b = {f["object"]: f for f in b.governed.facts_now()}
    assert on_b["postgres 15"]["recorded_by"] == "alice" and on_b["postgres 15"]["rationale"] == "from the runbook"
    # bob, on b, supersedes one fact and invalidates the other; alice revalidates it on a afterwards
    b.governed.supersede_fact(bob, on_b["postgres 15"]["id"], "postgres 16", "upgraded in March")
    b.governed.invalidate_fact(bob, on_b["memcached"]["id"], "replaced by redis")
    everyone(laptops, bundle)
    a.governed.revalidate_fact(alice, doomed["id"], "rolled back")
    everyone(laptops, bundle)
    seen = {facts_seen(memory) for memory in laptops}
    assert len(seen) == 1, seen
    now = {f["object"]: f for f in c.governed.facts_now()}
    assert set(now) == {"postgres 16", "memcached"} and now["postgres 16"]["recorded_by"] == "bob"
    history = c.conn.execute("SELECT act, actor, rationale FROM fact_history ORDER BY recorded_at, id").fetchall()
    assert ("invalidate", "bob", "replaced by redis") in history and ("revalidate", "alice", "rolled back") in history
    assert ("supersede", "bob", "upgraded in March") in history
    assert recorded["id"] in {f["supersedes"] for f in a.governed.facts_now() if f["object"] == "postgres 16"}
    # the same syncs again change nothing
    before = [m.conn.execute("SELECT count(*) FROM events").fetchone() for m in laptops]
    everyone(laptops, bundle)
    assert before == [m.conn.execute("SELECT count(*) FROM events").fetchone() for m in laptops]
    for i, memory in enumerate(laptops):
        memory.conn.execute("PRAGMA wal_checkpoint")
        assert verify_file(tmp_path / f"peer{i}.db")["ok"]


def test_a_private_projects_facts_stay_home(tmp_path, laptops):
    a, b, _ = laptops
    Memory(a.conn, project="private", config=LEXICAL).governed.record_fact(issue_reviewer("alice"), "vault", "holds", "key-qq4", "x")
    bundle = tmp_path / "team.bundle"
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    assert b"qq4" not in bundle.read_bytes() and b"qq4" not in (tmp_path / "peer1.db").read_bytes()
    assert b.conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)
