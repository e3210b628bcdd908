"""As-of reads over random histories of entries, supersessions, invalidations and
revalidations, with past and future effective times, against a simple model."""

import datetime
import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from datasette_memory import Config, InvalidInput, Memory, SearchSettings
from datasette_memory.core.clock import format_time, now

from .governance import issue_reviewer

REVIEWER = issue_reviewer("alice")
PAST = [f"2020-0{month}-01T00:00:00.000000+00:00" for month in range(1, 6)]
FUTURE = [
    format_time(datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=days)) for days in (30, 60, 90)
]
TIMES = PAST + FUTURE
times = st.sampled_from(TIMES)
effective_times = st.one_of(st.none(), times)
values = st.sampled_from(["postgres", "mysql", "sqlite", "MySQL ", "duckdb"])


class ModelFact:
    "A fact as the model sees it: a start, and its end as known from each record time on."

    def __init__(self, id: int, object: str, valid_from: str, valid_to, recorded_at: str):
        self.id, self.object, self.valid_from = id, object, valid_from
        self.ends = [(recorded_at, valid_to)]

    @property
    def valid_to(self):
        return self.ends[-1][1]

    def known(self, recorded: str):
        "``(known at all, valid_to as known)`` at record time ``recorded``."
        known = [end for at, end in self.ends if at <= recorded]
        return (bool(known), known[-1] if known else None)

    def holds(self, valid: str, recorded: str) -> bool:
        known, valid_to = self.known(recorded)
        return known and self.valid_from <= valid and (valid_to is None or valid < valid_to)

    def can_end_at(self, effective: str) -> bool:
        return self.valid_from <= effective and (self.valid_to is None or effective < self.valid_to)


class FactHistory(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        lexical = Config(search=SearchSettings(semantic=False))  # nothing embeds in the background into self.dir
        self.memory = Memory.open(f"{self.dir.name}/memory.db", project="p", actor="claude", config=lexical)
        self.facts = []
        self.record_times = []

    def teardown(self):
        self.memory.close()
        self.dir.cleanup()

    def latest_record_time(self) -> str:
        return self.memory.conn.execute("SELECT max(recorded_at) FROM fact_history").fetchone()[0]

    def after_act(self):
        self.record_times.append(self.latest_record_time())

    def expect_refusal(self, call):
        before = self.latest_record_time()
        try:
            call()
        except InvalidInput:
            assert self.latest_record_time() == before
            return
        raise AssertionError("expected InvalidInput")

    @rule(object=values, valid_from=times, valid_to=st.one_of(st.none(), times), via_claim=st.booleans())
    def enter(self, object, valid_from, valid_to, via_claim):
        if valid_to is not None and valid_to < valid_from:
            return self.expect_refusal(
                lambda: self.memory.governed.record_fact(REVIEWER, "db", "engine", object, "x", valid_from, valid_to)
            )
        proposed = self.memory.governed.propose_claim("db", "engine", object, valid_from=valid_from) if via_claim and valid_to is None else None
        if proposed and self.holding_now(object):
            assert (proposed["claim"], proposed["already_fact"]["id"]) == (None, self.holding_now(object).id)
        if proposed and proposed["claim"]:
            fact = self.memory.governed.approve_claim(REVIEWER, proposed["claim"]["id"], "approved")["fact"]
        else:
            fact = self.memory.governed.record_fact(REVIEWER, "db", "engine", object, "entered", valid_from, valid_to)["fact"]
        self.facts.append(ModelFact(fact["id"], object, valid_from, valid_to, fact["recorded_at"]))
        self.after_act()

    @precondition(lambda self: self.facts)
    @rule(index=st.integers(0, 50), object=values, effective=effective_times)
    def supersede(self, index, object, effective):
        fact = self.facts[index % len(self.facts)]
        at = effective or now()
        same = object.strip().casefold() == fact.object.strip().casefold()
        if same or not fact.can_end_at(at):
            return self.expect_refusal(lambda: self.memory.governed.supersede_fact(REVIEWER, fact.id, object, "x", effective))
        result = self.memory.governed.supersede_fact(REVIEWER, fact.id, object, "replaced", effective)
        new, old = result["fact"], result["superseded"]
        assert (new["supersedes"], old["superseded_by"]) == (fact.id, new["id"])
        self.facts.append(ModelFact(new["id"], object, new["valid_from"], fact.valid_to, new["recorded_at"]))
        fact.ends.append((new["recorded_at"], old["valid_to"]))
        self.after_act()

    @precondition(lambda self: self.facts)
    @rule(index=st.integers(0, 50), effective=effective_times)
    def invalidate(self, index, effective):
        fact = self.facts[index % len(self.facts)]
        if not fact.can_end_at(effective or now()):
            return self.expect_refusal(lambda: self.memory.governed.invalidate_fact(REVIEWER, fact.id, "x", effective))
        changed = self.memory.governed.invalidate_fact(REVIEWER, fact.id, "ended", effective)["fact"]
        if effective is not None:
            assert changed["valid_to"] == effective
        fact.ends.append((changed["retracted_at"], changed["valid_to"]))
        self.after_act()

    @precondition(lambda self: self.facts)
    @rule(index=st.integers(0, 50))
    def revalidate(self, index):
        fact = self.facts[index % len(self.facts)]
        if fact.valid_to is None:
            return self.expect_refusal(lambda: self.memory.governed.revalidate_fact(REVIEWER, fact.id, "x"))
        self.memory.governed.revalidate_fact(REVIEWER, fact.id, "holds again")
        fact.ends.append((self.latest_record_time(), None))
        self.after_act()

    def holding_now(self, object: str):
        at = now()
        key = object.strip().casefold()
        return next((f for f in self.facts if f.object.strip().casefold() == key and f.holds(at, at)), None)

    def expected(self, valid: str, recorded: str) -> list:
        return [
            (f.id, f.known(recorded)[1]) for f in self.facts if f.holds(valid, recorded)
        ]

    def actual(self, valid, recorded) -> list:
        facts = self.memory.governed.get_facts(as_of_valid=valid, as_of_recorded=recorded)["facts"]
        return [(f["id"], f["valid_to"]) for f in facts]

    @rule(valid=times, step=st.integers(0, 100))
    def as_of_both_axes(self, valid, step):
        recorded = self.record_times[step % len(self.record_times)] if self.record_times else "2000-01-01"
        recorded = self.memory.governed.get_facts(as_of_recorded=recorded)["as_of_recorded"]
        assert self.actual(valid, recorded) == self.expected(valid, recorded)

    @invariant()
    def now_on_both_axes(self):
        at = now()
        for valid in TIMES + [None]:
            assert self.actual(valid, None) == self.expected(valid or at, at)

    @invariant()
    def nothing_said_was_changed_and_the_ledger_agrees(self):
        rows = self.memory.conn.execute("SELECT id, object, valid_from FROM facts ORDER BY id").fetchall()
        assert rows == [(f.id, f.object, f.valid_from) for f in self.facts]
        assert self.memory.verify_chain().ok
        assert self.memory.check_replay() == {"ok": True, "problems": []}


FactHistory.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_as_of_reads_against_model = FactHistory.TestCase
