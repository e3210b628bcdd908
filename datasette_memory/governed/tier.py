"""The governed tier, as :class:`~datasette_memory.Memory` offers it (``memory.governed``).

Agents propose claims and read; a person decides. Methods that read or propose
take ordinary arguments. Person-only methods take a
:class:`~datasette_memory.governed.gate.Reviewer` first and check it before
anything else: only :func:`~datasette_memory.governed.gate.reviewer_for_request`
issues one, for a signed-in person holding ``memory-approve``. Nothing here
promotes a claim by itself: no extraction, no counts, no confidence thresholds.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from ..core.clock import now, parse_time
from ..core.errors import InvalidInput
from ..core.scope import Scope
from ..core.validation import check_limit, check_text
from . import claims, context_pack, facts, review, status
from .contradictions import find_contradictions
from .gate import Reviewer, require_reviewer
from .statements import check_rationale, check_statement

DEFAULT_BUDGET = 4000
T = TypeVar("T")


class GovernedTier:
    """
    Claims, facts, contradictions and context packs of one project, for one caller.

    :param scope: the connection, project and caller it shares with the memory facade
    """

    def __init__(self, scope: Scope):
        self.scope = scope

    def as_reviewer(self, reviewer: Reviewer, function: Callable[..., T], *args: Any) -> T:
        "Run a person-only ``function`` in one transaction, recorded as the reviewer."
        caller = require_reviewer(reviewer).caller
        return replace(self.scope, caller=caller, after_write=None).write(function, *args)

    # Agents and people: propose and read

    def propose_claim(
        self, subject: Any, predicate: Any, object: Any, evidence: Any = None, confidence: Any = None, valid_from: Any = None
    ) -> dict[str, Any]:
        """
        Propose a claim for a person to review. An identical pending claim gains
        the evidence instead; a value that is a fact holding now makes no claim
        (``already_fact`` names the fact); a value a person rejected is refused.

        :param subject: what it is about
        :param predicate: the property
        :param object: the value
        :param evidence: strings, and ``{entityName, observation}`` quoting stored observations
        :param confidence: the proposer's confidence, 0 to 1
        :param valid_from: when it started to hold, ISO 8601; default when it is proposed
        :raises ClaimRejected: naming when, by whom and why the value was rejected
        :return: ``{claim, created, evidence_added, already_fact, contradictions}``
        """
        statement = check_statement(subject, predicate, object)
        valid_from = parse_time(valid_from, "valid_from")
        self.scope.refuse_secrets(subject=subject, predicate=predicate, object=object, evidence=evidence)
        result = self.scope.write(claims.propose_claim, statement, evidence, confidence, valid_from)
        if result["claim"] is None:
            return {**result, "contradictions": []}
        return {**result, "contradictions": find_contradictions(self.scope.conn, self.scope.project, claim_id=result["claim"]["id"])}

    def list_claims(self, status: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """
        The project's claims, oldest first, with evidence and reviews.

        :param status: ``pending`` (or ``candidate``, the same), ``approved`` or ``rejected``; None for all
        :param limit: most claims to return, 1 to 1000
        """
        return claims.list_claims(self.scope.conn, self.scope.project, status, check_limit(limit, "limit", 1, 1000))

    def get_facts(
        self, subject: Any = None, predicate: Any = None, as_of_valid: Any = None, as_of_recorded: Any = None
    ) -> dict[str, Any]:
        """
        The facts that held at valid time ``as_of_valid``, as memory knew them at
        record time ``as_of_recorded``. Both default to now, so a fact whose
        ``valid_to`` is in the future is returned until then.

        :param subject: only this subject (case and spacing ignored)
        :param predicate: only this predicate (case and spacing ignored)
        :param as_of_valid: ISO 8601 time on the valid axis
        :param as_of_recorded: ISO 8601 time on the record axis
        :return: ``{project, as_of_valid, as_of_recorded, facts}``
        """
        at = now()
        valid = parse_time(as_of_valid, "as_of_valid") or at
        recorded = parse_time(as_of_recorded, "as_of_recorded") or at
        for name, value in (("subject", subject), ("predicate", predicate)):
            if value is not None:
                check_text(value, name, max_bytes=4096)
        found = facts.facts_as_of(self.scope.conn, self.scope.project, valid, recorded, subject, predicate)
        return {"project": self.scope.project, "as_of_valid": valid, "as_of_recorded": recorded, "facts": found}

    # What a person reviewing memory reads

    def review_queue(self, limit: Any = review.MAX_QUEUE) -> dict[str, Any]:
        """
        The project's pending claims, newest first, each with what it contradicts.

        :param limit: most claims to return, 1 to 500
        :return: ``{pending, shown, claims}``
        """
        return review.review_queue(self.scope.conn, self.scope.project, check_limit(limit, "limit", 1, review.MAX_QUEUE))

    def claim(self, claim_id: Any) -> dict[str, Any]:
        "One claim of the project whole: evidence, reviews, contradictions, the fact it became."
        return review.claim_detail(self.scope.conn, self.scope.project, claim_id)

    def fact(self, fact_id: Any) -> dict[str, Any]:
        "One fact of the project whole: its validity history, its claim, its contradictions."
        return review.fact_detail(self.scope.conn, self.scope.project, fact_id)

    def facts_now(self) -> list[dict[str, Any]]:
        "The project's facts that hold now."
        return review.facts_now(self.scope.conn, self.scope.project, now())

    def project_of(self, kind: str, id: Any) -> str:
        """
        The project claim or fact ``id`` belongs to, whichever project this tier is scoped to.

        :param kind: ``claims`` or ``facts``
        """
        if kind not in ("claims", "facts"):
            raise InvalidInput(f"kind: must be claims or facts, got {kind!r}")
        return review.project_of(self.scope.conn, kind, id)

    def contradictions(self) -> list[dict[str, Any]]:
        "Pairs of facts, and facts and pending claims, that contradict each other, for a person to review."
        return find_contradictions(self.scope.conn, self.scope.project)

    def review_status(self, stale_days: Any = status.STALE_DAYS) -> dict[str, Any]:
        """
        Counts of what waits for a person: pending claims, those contradicting something, contradictions, stale entities.

        :param stale_days: an entity with nothing added for more days than this is stale, 0 to 36500
        :return: ``{project, pending_claims, contradicted_claims, contradictions, stale_entities, stale_days}``
        """
        return status.review_status(self.scope.conn, self.scope.project, check_limit(stale_days, "stale_days", 0, 36500))

    def build_context_pack(self, query: Any = "", budget: Any = DEFAULT_BUDGET, include_proposed: Any = True) -> dict[str, Any]:
        """
        What memory holds about ``query``, as text of at most ``budget``
        characters, with an accounting of what was left out and why.

        :param query: words to look for; empty includes everything current
        :param budget: most characters of text, 1 to 1,000,000
        :param include_proposed: include pending claims, marked PROPOSED
        """
        query = check_text(query, "query", max_bytes=4096)
        budget = check_limit(budget, "budget", 1, 1_000_000)
        if not isinstance(include_proposed, bool):
            raise InvalidInput("include_proposed: must be true or false")
        return context_pack.build_context_pack(self.scope.conn, self.scope.project, query, budget, include_proposed)

    # A person only: each takes a Reviewer from datasette_memory.governed.gate first

    def approve_claim(self, reviewer: Reviewer, claim_id: Any, rationale: Any, valid_from: Any = None) -> dict[str, Any]:
        """
        Make a candidate claim a fact.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param claim_id: the claim
        :param rationale: why, for the ledger
        :param valid_from: when the fact starts to hold; default the claim's, else now
        :return: ``{claim, fact, contradictions}``
        """
        require_reviewer(reviewer)
        args = (claim_id, check_rationale(rationale), parse_time(valid_from, "valid_from"))
        self.scope.refuse_secrets(rationale=rationale)
        result = self.as_reviewer(reviewer, claims.approve_claim, *args)
        return self.with_contradictions(result)

    def reject_claim(self, reviewer: Reviewer, claim_id: Any, rationale: Any) -> dict[str, Any]:
        """
        Reject a candidate claim: its value cannot be proposed again unless a person reopens it.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param claim_id: the claim
        :param rationale: why, shown to whoever proposes the value again
        """
        require_reviewer(reviewer)
        rationale = check_rationale(rationale)
        self.scope.refuse_secrets(rationale=rationale)
        return self.as_reviewer(reviewer, claims.reject_claim, claim_id, rationale)

    def reopen_claim(self, reviewer: Reviewer, claim_id: Any, rationale: Any) -> dict[str, Any]:
        """
        Make a rejected claim a candidate again.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param claim_id: the claim
        :param rationale: why, for the ledger
        """
        require_reviewer(reviewer)
        rationale = check_rationale(rationale)
        self.scope.refuse_secrets(rationale=rationale)
        return self.as_reviewer(reviewer, claims.reopen_claim, claim_id, rationale)

    def record_fact(
        self, reviewer: Reviewer, subject: Any, predicate: Any, object: Any, rationale: Any, valid_from: Any = None, valid_to: Any = None
    ) -> dict[str, Any]:
        """
        Enter a fact directly, without a claim.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param rationale: why, for the ledger
        :param valid_from: when it starts to hold, ISO 8601; default now
        :param valid_to: when it stops holding; default no end
        :return: ``{fact, contradictions}``
        """
        require_reviewer(reviewer)
        statement = check_statement(subject, predicate, object)
        rationale = check_rationale(rationale)
        times = (parse_time(valid_from, "valid_from"), parse_time(valid_to, "valid_to"))
        self.scope.refuse_secrets(subject=subject, predicate=predicate, object=object, rationale=rationale)
        return self.with_contradictions(self.as_reviewer(reviewer, facts.record_fact, statement, rationale, *times))

    def supersede_fact(self, reviewer: Reviewer, fact_id: Any, object: Any, rationale: Any, effective: Any = None) -> dict[str, Any]:
        """
        Replace a fact from ``effective`` with a new one saying ``object``; the two are linked both ways.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param fact_id: the fact
        :param object: the new value
        :param rationale: why, for the ledger
        :param effective: when the new value starts to hold, ISO 8601; default now
        :return: ``{superseded, fact, contradictions}``
        """
        require_reviewer(reviewer)
        rationale = check_rationale(rationale)
        effective = parse_time(effective, "effective")
        self.scope.refuse_secrets(object=object, rationale=rationale)
        return self.with_contradictions(
            self.as_reviewer(reviewer, facts.supersede_fact, fact_id, object, rationale, effective)
        )

    def invalidate_fact(self, reviewer: Reviewer, fact_id: Any, rationale: Any, effective: Any = None) -> dict[str, Any]:
        """
        A fact stops holding from ``effective``; a future time means it holds until then.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param fact_id: the fact
        :param rationale: why, for the ledger
        :param effective: ISO 8601; default now
        """
        require_reviewer(reviewer)
        rationale = check_rationale(rationale)
        effective = parse_time(effective, "effective")
        self.scope.refuse_secrets(rationale=rationale)
        return self.as_reviewer(reviewer, facts.invalidate_fact, fact_id, rationale, effective)

    def revalidate_fact(self, reviewer: Reviewer, fact_id: Any, rationale: Any) -> dict[str, Any]:
        """
        A retired fact holds again, with no end.

        :param reviewer: from :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param fact_id: the fact
        :param rationale: why, for the ledger
        :return: ``{fact, contradictions}``
        """
        require_reviewer(reviewer)
        rationale = check_rationale(rationale)
        self.scope.refuse_secrets(rationale=rationale)
        return self.with_contradictions(self.as_reviewer(reviewer, facts.revalidate_fact, fact_id, rationale))

    def with_contradictions(self, result: dict[str, Any]) -> dict[str, Any]:
        "``result`` with the contradictions its fact is now part of, flagged for review."
        found = find_contradictions(self.scope.conn, self.scope.project, fact_id=result["fact"]["id"])
        return {**result, "contradictions": found}
