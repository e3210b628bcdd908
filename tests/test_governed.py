"""The governed tier's semantics: claims, facts, as-of reads, contradictions, the ledger."""

import ast
import pathlib
import sqlite3

import pytest

from datasette_memory import InvalidInput, Memory, NotFound
from datasette_memory.governed.claims import ClaimRejected
from datasette_memory.governed.gate import Reviewer, ReviewRequired

from .governance import issue_reviewer

ROOT = pathlib.Path(__file__).parent.parent
PAST = "2020-01-01T00:00:00.000000+00:00"
LATER = "2021-01-01T00:00:00.000000+00:00"
FUTURE = "2999-01-01T00:00:00.000000+00:00"


@pytest.fixture(scope="module")
def reviewer():
    return issue_reviewer("alice")


@pytest.fixture
def agent(db_path):
    memory = Memory.open(db_path, project="p", actor="claude", session="s1")
    yield memory
    memory.close()


@pytest.fixture
def person(db_path):
    memory = Memory.open(db_path, project="p", actor="ignored")
    yield memory
    memory.close()


def events(memory):
    return memory.conn.execute("SELECT actor, kind, target FROM events ORDER BY id").fetchall()


def count(memory, table):
    return memory.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def objects(result):
    return [f["object"] for f in result["facts"]]


# Claims


def test_propose_claim_creates_a_candidate_with_evidence(agent):
    agent.create_entities([{"name": "auth", "entityType": "service", "observations": ["DATABASE_URL=postgres://"]}])
    result = agent.governed.propose_claim(
        "auth", "uses database", "postgres",
        evidence=["seen in docker-compose.yml", {"entityName": "auth", "observation": "DATABASE_URL=postgres://"}],
        confidence=0.8,
    )
    claim = result["claim"]
    assert (result["created"], result["evidence_added"], result["contradictions"]) == (True, 2, [])
    assert {k: claim[k] for k in ("subject", "predicate", "object", "status", "proposed_by", "confidence", "fact_id")} == {
        "subject": "auth", "predicate": "uses database", "object": "postgres",
        "status": "candidate", "proposed_by": "claude", "confidence": 0.8, "fact_id": None,
    }
    assert [{k: v for k, v in e.items() if k in ("text", "entityName", "observation")} for e in claim["evidence"]] == [
        {"text": "seen in docker-compose.yml"},
        {"entityName": "auth", "observation": "DATABASE_URL=postgres://"},
    ]
    assert events(agent)[-1] == ("claude", "propose_claim", f"claim:{claim['id']}")


@pytest.mark.parametrize("subject,predicate,object", [
    ("auth", "uses database", "postgres"),
    ("AUTH", "Uses Database", "Postgres"),
    ("  auth ", "uses   database", "postgres\n"),
    ("ａｕｔｈ", "uses\tdatabase", "POSTGRES"),  # full-width letters fold under NFKC
])
def test_identical_pending_claim_gains_evidence_instead_of_duplicating(agent, subject, predicate, object):
    first = agent.governed.propose_claim("auth", "uses database", "postgres", evidence=["one"])["claim"]
    before = len(events(agent))
    again = agent.governed.propose_claim(subject, predicate, object, evidence=["one", "two"])
    assert (again["created"], again["evidence_added"], again["claim"]["id"]) == (False, 1, first["id"])
    assert [e["text"] for e in again["claim"]["evidence"]] == ["one", "two"]
    assert count(agent, "claims") == 1
    assert events(agent)[before:] == [("claude", "add_claim_evidence", f"claim:{first['id']}")]
    unchanged = agent.governed.propose_claim(subject, predicate, object, evidence=["two"])
    assert unchanged["evidence_added"] == 0 and len(events(agent)) == before + 1


def test_evidence_must_quote_a_stored_observation(agent):
    with pytest.raises(NotFound, match="entity 'auth' has no observation 'made up' in project 'p'"):
        agent.governed.propose_claim("auth", "uses", "x", evidence=[{"entityName": "auth", "observation": "made up"}])
    assert (count(agent, "claims"), events(agent)) == (0, [])


@pytest.mark.parametrize("kwargs,message", [
    ({"subject": ""}, "subject: must not be empty"),
    ({"object": "   "}, "object: must not be empty or only whitespace"),
    ({"predicate": 5}, "predicate: must be a string, got number"),
    ({"confidence": 1.5}, "confidence: must be a number from 0 to 1"),
    ({"confidence": True}, "confidence: must be a number from 0 to 1"),
    ({"evidence": "text"}, "evidence: must be a list"),
    ({"evidence": [{"entityName": "a"}]}, r"evidence\[0\]: missing required field observation"),
    ({"valid_from": "last tuesday"}, "valid_from: 'last tuesday' is not an ISO 8601 date or time"),
    ({"object": "x" * 20_000}, "object: 20000 bytes is over the limit"),
    ({"object": "key AKIAIOSFODNN7EXAMPLE"}, "object: looks like a credential"),
])
def test_propose_claim_bad_input_changes_nothing(agent, kwargs, message):
    arguments = {"subject": "auth", "predicate": "uses", "object": "postgres", **kwargs}
    with pytest.raises(InvalidInput, match=message):
        agent.governed.propose_claim(**arguments)
    assert (count(agent, "claims"), events(agent)) == (0, [])


@pytest.mark.parametrize("variant", [
    ("auth", "uses", "mysql"),
    ("Auth", "USES", "MySQL"),
    (" auth", "uses ", "  mysql  "),
    ("ａｕｔｈ", "uses", "ＭｙＳＱＬ"),
])
def test_a_rejected_value_is_refused_with_when_who_and_why(agent, person, reviewer, variant):
    claim = agent.governed.propose_claim("auth", "uses", "mysql")["claim"]
    person.governed.reject_claim(reviewer, claim["id"], "we moved to postgres in 2023")
    before = (count(agent, "claims"), count(agent, "claim_evidence"), len(events(agent)))
    with pytest.raises(ClaimRejected) as raised:
        agent.governed.propose_claim(*variant, evidence=["I really think so"], confidence=1.0)
    message = str(raised.value)
    assert f"claim {claim['id']}" in message and "by 'alice'" in message
    assert "because: 'we moved to postgres in 2023'" in message and "Only a person can reopen" in message
    rejection = raised.value.rejection
    assert (rejection["claim_id"], rejection["rejected_by"], rejection["rationale"]) == (
        claim["id"], "alice", "we moved to postgres in 2023"
    )
    assert rejection["rejected_at"] in message
    assert (count(agent, "claims"), count(agent, "claim_evidence"), len(events(agent))) == before


def test_reopened_claim_can_gain_evidence_again(agent, person, reviewer):
    claim = agent.governed.propose_claim("auth", "uses", "mysql")["claim"]
    person.governed.reject_claim(reviewer, claim["id"], "wrong")
    reopened = person.governed.reopen_claim(reviewer, claim["id"], "the legacy service does use mysql")["claim"]
    assert reopened["status"] == "candidate"
    assert [r["act"] for r in reopened["reviews"]] == ["reject", "reopen"]
    again = agent.governed.propose_claim("AUTH", "uses", "MySQL", evidence=["legacy/db.py"])
    assert (again["created"], again["claim"]["id"]) == (False, claim["id"])


def test_approve_makes_a_fact_from_a_claim(agent, person, reviewer):
    claim = agent.governed.propose_claim("auth", "uses", "postgres", valid_from="2024-03-01")["claim"]
    result = person.governed.approve_claim(reviewer, claim["id"], "checked the config")
    fact = result["fact"]
    assert result["claim"]["status"] == "approved" and result["claim"]["fact_id"] == fact["id"]
    assert {k: fact[k] for k in ("subject", "predicate", "object", "valid_from", "valid_to", "recorded_by", "rationale", "claim_id")} == {
        "subject": "auth", "predicate": "uses", "object": "postgres",
        "valid_from": "2024-03-01T00:00:00.000000+00:00", "valid_to": None,
        "recorded_by": "alice", "rationale": "checked the config", "claim_id": claim["id"],
    }
    assert events(person)[-2:] == [("alice", "record_fact", f"fact:{fact['id']}"), ("alice", "approve_claim", f"claim:{claim['id']}")]
    assert objects(agent.governed.get_facts()) == ["postgres"]
    with pytest.raises(InvalidInput, match="is approved, and only a candidate claim can be approved"):
        person.governed.approve_claim(reviewer, claim["id"], "again")


def test_proposing_a_value_that_is_already_a_fact_makes_no_claim(agent, person, reviewer):
    fact = person.governed.record_fact(reviewer, "auth", "uses", "postgres", "known", valid_from=PAST)["fact"]
    before = len(events(agent))
    result = agent.governed.propose_claim("Auth", "uses", "Postgres", evidence=["again"])
    assert (result["claim"], result["created"], result["already_fact"]["id"]) == (None, False, fact["id"])
    assert (count(agent, "claims"), len(events(agent))) == (0, before)
    person.governed.invalidate_fact(reviewer, fact["id"], "moved off it")
    assert agent.governed.propose_claim("auth", "uses", "postgres")["created"] is True, "a retired fact's value can be proposed again"


def test_approving_a_rejected_claim_says_reopen_first(agent, person, reviewer):
    claim = agent.governed.propose_claim("auth", "uses", "x")["claim"]
    person.governed.reject_claim(reviewer, claim["id"], "no")
    with pytest.raises(InvalidInput, match="is rejected, and only a candidate claim can be approved; reopen it first"):
        person.governed.approve_claim(reviewer, claim["id"], "yes")
    with pytest.raises(InvalidInput, match="is candidate, and only a rejected claim can be reopened"):
        person.governed.reopen_claim(reviewer, agent.governed.propose_claim("auth", "uses", "y")["claim"]["id"], "why")


def test_list_claims_by_status(agent, person, reviewer):
    ids = [agent.governed.propose_claim("auth", "port", str(port))["claim"]["id"] for port in (1, 2, 3)]
    person.governed.approve_claim(reviewer, ids[0], "ok")
    person.governed.reject_claim(reviewer, ids[1], "no")
    assert [c["id"] for c in agent.governed.list_claims()] == ids
    assert [c["id"] for c in agent.governed.list_claims("candidate")] == [ids[2]]
    assert [c["id"] for c in agent.governed.list_claims("rejected")] == [ids[1]]
    assert [c["id"] for c in agent.governed.list_claims(limit=1)] == [ids[0]]
    assert agent.governed.list_claims("pending") == agent.governed.list_claims("candidate")
    with pytest.raises(InvalidInput, match=r"status: must be one of pending \(also called candidate\), approved or rejected"):
        agent.governed.list_claims("waiting")


def test_no_automatic_promotion(agent):
    "No count of proposals, evidence or confidence makes a fact: only a person does."
    agent.create_entities([{"name": "auth", "entityType": "service", "observations": ["uses postgres"] }])
    for i in range(50):
        Memory(agent.conn, project="p", actor=f"agent-{i}").governed.propose_claim(
            "auth", "uses", "postgres", evidence=[f"evidence {i}", {"entityName": "auth", "observation": "uses postgres"}],
            confidence=1.0,
        )
    agent.add_observations([{"entityName": "auth", "contents": [f"auth uses postgres ({i})" for i in range(20)]}])
    assert count(agent, "facts") == 0
    assert [c["status"] for c in agent.governed.list_claims()] == ["candidate"]
    assert agent.governed.get_facts()["facts"] == []


# Facts: person-only acts


def test_direct_entry_and_bad_validity(person, reviewer):
    fact = person.governed.record_fact(reviewer, "billing", "owner", "team payments", "org chart", valid_from="2024-01-01")["fact"]
    assert (fact["claim_id"], fact["valid_from"], fact["recorded_by"]) == (None, "2024-01-01T00:00:00.000000+00:00", "alice")
    with pytest.raises(InvalidInput, match="valid_to: .* is before valid_from"):
        person.governed.record_fact(reviewer, "a", "b", "c", "why", valid_from="2024-02-01", valid_to="2024-01-01")
    assert count(person, "facts") == 1


def test_supersede_links_both_ways_from_the_effective_time(person, reviewer):
    old = person.governed.record_fact(reviewer, "auth", "uses", "mysql", "initial", valid_from=PAST)["fact"]
    result = person.governed.supersede_fact(reviewer, old["id"], "postgres", "migrated", effective=LATER)
    new, retired = result["fact"], result["superseded"]
    assert (retired["valid_to"], retired["superseded_by"], new["supersedes"]) == (LATER, new["id"], old["id"])
    assert (new["subject"], new["predicate"], new["object"], new["valid_from"], new["valid_to"]) == (
        "auth", "uses", "postgres", LATER, None
    )
    assert retired["retracted_at"] == new["recorded_at"]
    assert objects(person.governed.get_facts(as_of_valid="2020-06-01")) == ["mysql"]
    assert objects(person.governed.get_facts(as_of_valid=LATER)) == ["postgres"]
    assert objects(person.governed.get_facts()) == ["postgres"]
    assert objects(person.governed.get_facts(as_of_valid="2020-06-01", as_of_recorded=old["recorded_at"])) == ["mysql"]
    assert objects(person.governed.get_facts(as_of_recorded=old["recorded_at"])) == ["mysql"]
    assert result["contradictions"] == []


def test_a_future_effective_time_keeps_the_fact_valid_until_then(person, reviewer):
    fact = person.governed.record_fact(reviewer, "api", "version", "v1", "release", valid_from=PAST)["fact"]
    person.governed.invalidate_fact(reviewer, fact["id"], "v1 is switched off next millennium", effective=FUTURE)
    assert objects(person.governed.get_facts()) == ["v1"]
    assert objects(person.governed.get_facts(as_of_valid="2998-12-31")) == ["v1"]
    assert objects(person.governed.get_facts(as_of_valid=FUTURE)) == []
    person.governed.supersede_fact(reviewer, fact["id"], "v2", "v2 ships first", effective="2500-01-01")
    assert objects(person.governed.get_facts()) == ["v1"]
    assert objects(person.governed.get_facts(as_of_valid="2600-01-01")) == ["v2"]
    assert objects(person.governed.get_facts(as_of_valid=FUTURE)) == [], "v2 takes over only the rest of v1's validity"


def test_invalidate_and_revalidate_on_both_axes(person, reviewer):
    fact = person.governed.record_fact(reviewer, "cache", "backend", "redis", "set up", valid_from=PAST)["fact"]
    invalidated = person.governed.invalidate_fact(reviewer, fact["id"], "removed the cache")["fact"]
    assert invalidated["valid_to"] == invalidated["retracted_at"]
    assert objects(person.governed.get_facts()) == []
    revalidated = person.governed.revalidate_fact(reviewer, fact["id"], "it came back")["fact"]
    assert (revalidated["valid_to"], revalidated["retracted_at"]) == (None, None)
    assert objects(person.governed.get_facts()) == ["redis"]
    known_while_retired = person.governed.get_facts(as_of_recorded=invalidated["retracted_at"])
    assert known_while_retired["facts"] == []
    assert objects(person.governed.get_facts(as_of_recorded=fact["recorded_at"])) == ["redis"]
    assert objects(person.governed.get_facts(as_of_recorded="2000-01-01")) == []
    history = person.conn.execute("SELECT act, actor FROM fact_history WHERE fact_id = ? ORDER BY id", [fact["id"]]).fetchall()
    assert history == [("record", "alice"), ("invalidate", "alice"), ("revalidate", "alice")]


@pytest.mark.parametrize("act,message", [
    (lambda m, r, f: m.governed.invalidate_fact(r, f, "x", effective="2019-01-01"), "effective: .* is before fact 1 starts to hold"),
    (lambda m, r, f: m.governed.supersede_fact(r, f, "y", "x", effective="2019-01-01"), "effective: .* is before fact 1 starts to hold"),
    (lambda m, r, f: m.governed.supersede_fact(r, f, "  REDIS ", "x"), "object: is the value fact 1 already holds"),
    (lambda m, r, f: m.governed.revalidate_fact(r, f, "x"), "fact 1 already holds with no end"),
    (lambda m, r, f: m.governed.invalidate_fact(r, 99, "x"), "fact 99 not found in project 'p'"),
    (lambda m, r, f: m.governed.invalidate_fact(r, "1", "x"), "fact_id: must be an integer"),
    (lambda m, r, f: m.governed.invalidate_fact(r, f, "x", effective="soon"), "effective: 'soon' is not an ISO 8601"),
    (lambda m, r, f: m.governed.supersede_fact(r, f, "y", None), "rationale: must be a string"),
])
def test_bad_fact_acts_change_nothing(person, reviewer, act, message):
    fact = person.governed.record_fact(reviewer, "cache", "backend", "redis", "set up", valid_from=PAST)["fact"]
    before = (count(person, "facts"), count(person, "fact_history"), len(events(person)))
    with pytest.raises((InvalidInput, NotFound), match=message):
        act(person, reviewer, fact["id"])
    assert (count(person, "facts"), count(person, "fact_history"), len(events(person))) == before


def test_a_retired_fact_cannot_be_ended_again(person, reviewer):
    fact = person.governed.record_fact(reviewer, "a", "b", "c", "why", valid_from=PAST)["fact"]
    person.governed.invalidate_fact(reviewer, fact["id"], "ended", effective=LATER)
    with pytest.raises(InvalidInput, match="already stops holding at 2021-01-01.*revalidate it first"):
        person.governed.supersede_fact(reviewer, fact["id"], "d", "why", effective="2022-01-01")
    person.governed.invalidate_fact(reviewer, fact["id"], "it ended earlier than we thought", effective="2020-06-01")
    assert person.governed.get_facts(as_of_valid="2020-07-01")["facts"] == []


@pytest.mark.parametrize("act", ["approve", "reject", "reopen", "record", "supersede", "invalidate", "revalidate"])
@pytest.mark.parametrize("rationale", ["", "   \n", None])
def test_every_person_act_requires_a_rationale(agent, person, reviewer, act, rationale):
    claim = agent.governed.propose_claim("a", "b", "c")["claim"]
    fact = person.governed.record_fact(reviewer, "x", "y", "z", "setup", valid_from=PAST)["fact"]
    before = len(events(person))
    calls = {
        "approve": lambda: person.governed.approve_claim(reviewer, claim["id"], rationale),
        "reject": lambda: person.governed.reject_claim(reviewer, claim["id"], rationale),
        "reopen": lambda: person.governed.reopen_claim(reviewer, claim["id"], rationale),
        "record": lambda: person.governed.record_fact(reviewer, "s", "p", "o", rationale),
        "supersede": lambda: person.governed.supersede_fact(reviewer, fact["id"], "w", rationale),
        "invalidate": lambda: person.governed.invalidate_fact(reviewer, fact["id"], rationale),
        "revalidate": lambda: person.governed.revalidate_fact(reviewer, fact["id"], rationale),
    }
    with pytest.raises(InvalidInput, match="rationale: must"):
        calls[act]()
    assert len(events(person)) == before


# The gate, in the core


PERSON_ACTS = {
    "approve_claim": lambda m, r: m.governed.approve_claim(r, 1, "why"),
    "reject_claim": lambda m, r: m.governed.reject_claim(r, 1, "why"),
    "reopen_claim": lambda m, r: m.governed.reopen_claim(r, 1, "why"),
    "record_fact": lambda m, r: m.governed.record_fact(r, "s", "p", "o", "why"),
    "supersede_fact": lambda m, r: m.governed.supersede_fact(r, 1, "o2", "why"),
    "invalidate_fact": lambda m, r: m.governed.invalidate_fact(r, 1, "why"),
    "revalidate_fact": lambda m, r: m.governed.revalidate_fact(r, 1, "why"),
}


@pytest.mark.parametrize("act", PERSON_ACTS)
@pytest.mark.parametrize("proof", [None, "alice", {"id": "alice"}, True, Reviewer("alice")], ids=["none", "str", "actor", "true", "handmade"])
def test_person_acts_refuse_anything_but_an_issued_reviewer(agent, act, proof):
    agent.governed.propose_claim("s", "p", "o")
    before = events(agent)
    with pytest.raises(ReviewRequired, match="needs a Reviewer issued by datasette_memory.governed.gate.reviewer_for_request"):
        PERSON_ACTS[act](agent, proof)
    assert events(agent) == before and count(agent, "facts") == 0


def test_ledger_records_the_person_not_the_connection(agent, reviewer):
    claim = agent.governed.propose_claim("s", "p", "o")["claim"]
    agent.governed.approve_claim(reviewer, claim["id"], "verified")
    assert [actor for actor, _, _ in events(agent)] == ["claude", "alice", "alice"]
    assert agent.verify_chain().ok


def test_only_the_gate_issues_reviewers_and_no_agent_door_reaches_it():
    "The gate's issuing function is called from Datasette's routes only; MCP and the CLI never import the gate."
    callers = set()
    for path in list((ROOT / "datasette_memory").rglob("*.py")) + list((ROOT / "mcp_bridge").rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        if "reviewer_for_request" in names | imported or "_ISSUED" in names:
            callers.add(path.relative_to(ROOT).as_posix())
        if "mcp_bridge" in path.parts or "cli" in path.parts:
            assert not any(node.module and node.module.endswith("gate") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)), path
    assert callers == {
        "datasette_memory/governed/gate.py",
        "datasette_memory/plugin/governance_routes.py",  # the JSON acts
        "datasette_memory/plugin/review_forms.py",  # the same acts as forms
        "datasette_memory/plugin/integrity_routes.py",  # acknowledging a divergence from the witness
        "datasette_memory/plugin/redaction_routes.py",  # redacting a leaked text
    }


def test_no_cli_command_governs():
    from datasette_memory.cli import cli

    acts = {"approve", "reject", "reopen", "supersede", "invalidate", "revalidate", "promote"}
    assert not [name for name in cli.commands if any(act in name for act in acts)]


# What the tables refuse, whoever asks


@pytest.mark.parametrize("statement", [
    "DELETE FROM facts",
    "UPDATE facts SET object = 'forged'",
    "UPDATE facts SET subject = 'forged'",
    "UPDATE facts SET predicate = 'forged'",
    "UPDATE facts SET recorded_at = '2000-01-01'",
    "UPDATE facts SET valid_from = '2000-01-01'",
    "DELETE FROM claims",
    "UPDATE claims SET object = 'forged'",
    "UPDATE claims SET status = 'approved'",
    "UPDATE claim_reviews SET rationale = 'forged'",
    "DELETE FROM claim_reviews",
    "UPDATE claim_evidence SET content = 'forged'",
    "DELETE FROM fact_history",
    "UPDATE fact_history SET valid_to = NULL",
])
def test_tables_refuse_changing_what_was_said(agent, person, reviewer, statement):
    agent.governed.propose_claim("a", "b", "c", evidence=["e"])
    person.governed.reject_claim(reviewer, 1, "no")
    person.governed.record_fact(reviewer, "x", "y", "z", "why")
    with pytest.raises(sqlite3.IntegrityError, match="never|append-only|moves only"):
        agent.conn.execute(statement)


# Contradictions


def test_contradicting_facts_are_flagged_not_resolved(person, reviewer):
    a = person.governed.record_fact(reviewer, "auth", "port", "8080", "from the docs", valid_from=PAST)["fact"]
    result = person.governed.record_fact(reviewer, "Auth", "PORT", "9090", "from the deploy", valid_from=LATER)
    b = result["fact"]
    assert [(c["fact"]["id"], c["other"]["kind"], c["other"]["id"]) for c in result["contradictions"]] == [(a["id"], "fact", b["id"])]
    assert result["contradictions"][0]["overlap"] == {"from": LATER, "to": None}
    assert person.governed.contradictions() == result["contradictions"]
    assert sorted(objects(person.governed.get_facts())) == ["8080", "9090"], "both still hold: nothing is resolved automatically"
    person.governed.invalidate_fact(reviewer, a["id"], "the docs were stale", effective=LATER)
    assert person.governed.contradictions() == []


@pytest.mark.parametrize("second,expected", [
    (("auth", "port", "8080 "), 0),  # same value, different spacing
    (("auth", "host", "9090"), 0),  # different predicate
    (("web", "port", "9090"), 0),  # different subject
    (("auth", "port", "9090"), 1),
])
def test_what_counts_as_a_contradiction(person, reviewer, second, expected):
    person.governed.record_fact(reviewer, "auth", "port", "8080", "x", valid_from=PAST)
    assert len(person.governed.record_fact(reviewer, *second, "y", valid_from=PAST)["contradictions"]) == expected


def test_non_overlapping_validity_is_no_contradiction(person, reviewer):
    person.governed.record_fact(reviewer, "auth", "port", "8080", "x", valid_from=PAST, valid_to=LATER)
    assert person.governed.record_fact(reviewer, "auth", "port", "9090", "y", valid_from=LATER)["contradictions"] == []


def test_a_pending_claim_against_a_fact_is_flagged(agent, person, reviewer):
    fact = person.governed.record_fact(reviewer, "auth", "port", "8080", "x", valid_from=PAST)["fact"]
    result = agent.governed.propose_claim("auth", "port", "9090")
    assert [(c["fact"]["id"], c["other"]["kind"], c["other"]["id"]) for c in result["contradictions"]] == [
        (fact["id"], "claim", result["claim"]["id"])
    ]
    assert agent.governed.propose_claim("auth", "port", "9090", valid_from="2010-01-01")["contradictions"] != []
    past = agent.governed.propose_claim("auth", "port", "7070", valid_from="2010-01-01")
    person.governed.reject_claim(reviewer, past["claim"]["id"], "never true")
    assert [c["other"]["id"] for c in agent.governed.contradictions()] == [result["claim"]["id"]], "rejected claims are not flagged"


# Scope


def test_claims_and_facts_are_scoped_to_the_project(db_path, reviewer):
    p = Memory.open(db_path, project="p", actor="claude")
    q = Memory.open(db_path, project="q", actor="claude")
    claim = p.governed.propose_claim("auth", "uses", "postgres")["claim"]
    fact = p.governed.approve_claim(reviewer, claim["id"], "ok")["fact"]
    assert q.governed.list_claims() == [] and q.governed.get_facts()["facts"] == []
    assert q.governed.build_context_pack("auth")["items"] == []
    with pytest.raises(NotFound, match="claim 1 not found in project 'q'"):
        q.governed.reject_claim(reviewer, claim["id"], "no")
    with pytest.raises(NotFound, match="fact 1 not found in project 'q'"):
        q.governed.invalidate_fact(reviewer, fact["id"], "no")
    assert q.governed.propose_claim("auth", "uses", "postgres")["created"] is True
    q.governed.record_fact(reviewer, "auth", "uses", "mysql", "q's own", valid_from=PAST)
    assert p.governed.contradictions() == []


# Edits outside the core are evident


def governed_history(agent, person, reviewer):
    claim = agent.governed.propose_claim("auth", "uses", "postgres", evidence=["compose"])["claim"]
    fact = person.governed.approve_claim(reviewer, claim["id"], "ok", valid_from=PAST)["fact"]
    person.governed.supersede_fact(reviewer, fact["id"], "postgres 17", "upgrade", effective=LATER)
    person.governed.invalidate_fact(reviewer, 2, "retired", effective=FUTURE)
    person.governed.revalidate_fact(reviewer, 2, "kept")
    person.governed.reject_claim(reviewer, agent.governed.propose_claim("auth", "uses", "mysql")["claim"]["id"], "no")


def test_core_acts_pass_the_replay_check(agent, person, reviewer):
    governed_history(agent, person, reviewer)
    assert agent.check_replay() == {"ok": True, "problems": []}


@pytest.mark.parametrize("statements,problem", [
    (["INSERT INTO facts (project, subject, predicate, object, subject_key, predicate_key, object_key, valid_from, "
      "recorded_at, recorded_by, rationale) VALUES ('p', 'agent', 'is', 'admin', 'agent', 'is', 'admin', '2020', '2020', 'alice', 'x')"],
     ("facts", 3)),
    (["DROP TRIGGER facts_keep_what_they_say", "UPDATE facts SET object = 'sqlite' WHERE id = 1"],
     ("facts", 1)),
    (["UPDATE facts SET valid_to = NULL WHERE id = 1"],
     ("facts", 1)),
    (["INSERT INTO fact_history (fact_id, act, valid_to, recorded_at, actor, rationale) VALUES (1, 'revalidate', NULL, '3000', 'alice', 'x')"],
     ("fact_history", {"fact": 1})),
    (["DROP TRIGGER claims_status_moves_by_review", "UPDATE claims SET status = 'candidate' WHERE id = 2"],
     ("claims", 2)),
    (["INSERT INTO claims (project, subject, predicate, object, subject_key, predicate_key, object_key, proposed_by, proposed_at) "
      "VALUES ('p', 'a', 'b', 'c', 'a', 'b', 'c', 'claude', '2020')"],
     ("claims", 3)),
])
def test_direct_edits_are_named_by_the_replay(agent, person, reviewer, statements, problem):
    governed_history(agent, person, reviewer)
    for statement in statements:
        agent.conn.execute(statement)
    result = agent.check_replay()
    assert result["ok"] is False and problem in [(p["table"], p["row"]) for p in result["problems"]]
    assert agent.verify_chain().ok, "the ledger itself was not touched"
