"""
Claims across machines: a rejection made on one laptop travels with sync and blocks the same value on every
other, in any spelling its keys match, until a person reopens it where it was rejected; approval does not
travel; a project that is not shared sends none of its claims.
"""

import pytest

from datasette_memory import Memory
from datasette_memory.governed.claims import ClaimRejected
from datasette_memory.sync.bundle import make_bundle, sync_bundle

from .governance import issue_reviewer
from .test_sync import LEXICAL


def test_a_rejection_on_one_laptop_blocks_the_value_on_every_other(tmp_path, laptops):
    a, b, c = laptops
    bundle = tmp_path / "team.bundle"
    proposed = a.governed.propose_claim("auth-service", "uses database", "MySQL 5", evidence=["a guess"])
    reviewer = issue_reviewer("alice")
    a.governed.reject_claim(reviewer, proposed["claim"]["id"], "we moved to postgres in 2023")
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    sync_bundle(c, bundle)
    for memory in (b, c):
        with pytest.raises(ClaimRejected) as refused:
            memory.governed.propose_claim("Auth-Service", "uses  database", "mysql 5")
        message = str(refused.value)
        assert "a person on machine" in message and "'alice'" in message and "we moved to postgres in 2023" in message
        assert refused.value.rejection["rejected_by"] == "alice"
        assert memory.governed.list_claims() == []  # nothing was written
    # another value is not blocked
    assert b.governed.propose_claim("auth-service", "uses database", "postgres 16")["created"]
    # reopened where it was rejected, the value may be proposed again everywhere
    a.governed.reopen_claim(reviewer, proposed["claim"]["id"], "worth asking again")
    sync_bundle(a, bundle)
    sync_bundle(c, bundle)
    assert c.governed.propose_claim("auth-service", "uses database", "MySQL 5")["created"]


def test_approval_stays_on_the_machine_where_a_person_made_it(tmp_path, laptops):
    a, b, _ = laptops
    bundle = tmp_path / "team.bundle"
    proposed = a.governed.propose_claim("api", "written in", "go")
    a.governed.approve_claim(issue_reviewer("alice"), proposed["claim"]["id"], "checked the repo")
    make_bundle(a, bundle)
    sync_bundle(b, bundle)
    kinds = dict(b.conn.execute("SELECT kind, opaque FROM memory_sync_events WHERE kind IS NOT NULL").fetchall())
    assert kinds == {"propose_claim": 0, "record_fact": 0}  # the approval itself went as an opaque link
    assert b.conn.execute("SELECT count(*) FROM memory_sync_events WHERE opaque = 1").fetchone()[0] >= 1
    assert b.governed.list_claims() == [] and b.conn.execute("SELECT count(*) FROM claim_reviews").fetchone() == (0,)
    # the fact the approval made travels, recorded with the person who approved, tied to no claim here
    [fact] = b.governed.facts_now()
    assert (fact["object"], fact["recorded_by"], fact["claim_id"]) == ("go", "alice", None)


def test_a_private_projects_rejections_stay_home(tmp_path, laptops):
    a, b, _ = laptops
    private = Memory(a.conn, project="private", config=LEXICAL)
    claim = private.governed.propose_claim("vault", "password", "hunter2-zz8")
    private.governed.reject_claim(issue_reviewer("alice"), claim["claim"]["id"], "never store this")
    bundle = tmp_path / "team.bundle"
    make_bundle(a, bundle)
    assert b"zz8" not in bundle.read_bytes() and b"never store this" not in bundle.read_bytes()
    sync_bundle(b, bundle)
    assert Memory(b.conn, project="private", config=LEXICAL).governed.propose_claim("vault", "password", "hunter2-zz8")["created"]
