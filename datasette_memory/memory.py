"""The core API: the one place every door (Datasette, MCP, CLI, JSON) calls.

A :class:`Memory` is a connection to one memory file, scoped to one project and
one caller. Each mutating call is one IMMEDIATE transaction holding the change
and its ledger events: it all happens, or nothing does. The governed tier
(claims and facts) is ``memory.governed``.

Example::

    from datasette_memory import Memory

    memory = Memory.open("memory.db", project="billing", actor="claude")
    memory.create_entities([{"name": "auth", "entityType": "service", "observations": []}])
    memory.verify_chain().ok
"""

import copy
import dataclasses
import pathlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .config import Config
from .core import checkpoints, evidence, ledger, witness
from .core.database import connect, rehearsal, write_transaction
from .core.errors import InvalidInput
from .core.hook_kinds import HOOK_KINDS
from .core.ledger import Caller, ChainStatus
from .core.scope import Scope
from .core.validation import DEFAULT_PROJECT, MAX_SUMMARY_BYTES, check_limit, check_name, check_project, check_text
from .history import redaction
from .governed.gate import Reviewer, require_reviewer
from .governed.statements import check_rationale
from .governed.tier import GovernedTier
from .graph import curation, mutations, paging, reads
from .history import as_of as history_as_of, compare, diff, file_check, provenance
from .search import memory_search, nodes
from .vectors import background

T = TypeVar("T")


class Memory:
    """
    One project of one memory file, as seen by one caller.

    :param conn: a connection to a migrated memory file (see :meth:`open`)
    :param project: the project every call is scoped to
    :param actor: who is calling, recorded in the ledger
    :param session: the caller's session id, recorded in the ledger
    :param allow_secrets: store text that looks like a credential instead of refusing it
    :param config: what the door configured: search settings among them
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        project: str = DEFAULT_PROJECT,
        actor: str = "local",
        session: str | None = None,
        allow_secrets: bool = False,
        config: Config | None = None,
    ):
        self.config = config or Config()
        semantic = self.config.search.semantic_on()
        self.scope = Scope(
            conn,
            check_project(project),
            Caller(check_name(actor, "actor"), session),
            allow_secrets,
            after_write=(lambda since: background.after_write(conn, since)) if semantic else None,
        )
        self.governed = GovernedTier(self.scope)

    @classmethod
    def open(cls, path: str | pathlib.Path, **kwargs: Any) -> "Memory":
        """
        Open (creating and migrating if needed) the memory file at ``path``.

        :param path: the memory file
        :param kwargs: ``project``, ``actor``, ``session``, ``allow_secrets`` and ``config``
        """
        return cls(connect(path), **kwargs)

    @property
    def conn(self) -> sqlite3.Connection:
        "The connection to the memory file."
        return self.scope.conn

    @property
    def project(self) -> str:
        "The project every call is scoped to."
        return self.scope.project

    @property
    def allow_secrets(self) -> bool:
        "Whether text that looks like a credential is stored instead of refused."
        return self.scope.allow_secrets

    def close(self) -> None:
        "Close the file, once the head witness holds what this process wrote."
        witness.flush()
        self.conn.close()

    def rehearse(self, act: Callable[["Memory"], T]) -> T:
        """
        What ``act(memory)`` would return, with nothing written: it runs in a
        transaction that is rolled back (and tells the semantic index nothing).

        :param act: called with a :class:`Memory` like this one
        """
        rehearsing = copy.copy(self)
        rehearsing.scope = dataclasses.replace(self.scope, after_write=None)
        rehearsing.governed = GovernedTier(rehearsing.scope)
        with rehearsal(self.conn):
            return act(rehearsing)

    # The knowledge graph: the official memory server's operations

    def create_entities(self, entities: Any) -> list[dict[str, Any]]:
        """
        Create entities; names already in the project are left unchanged.

        :param entities: ``[{name, entityType, observations}]``
        :return: the entities actually created
        """
        self.scope.refuse_secrets(entities=entities)
        return self.scope.write(mutations.create_entities, entities)

    def create_relations(self, relations: Any) -> list[dict[str, str]]:
        """
        Create relations not already stored.

        :param relations: ``[{from, to, relationType}]``
        :return: the relations actually created
        """
        self.scope.refuse_secrets(relations=relations)
        return self.scope.write(mutations.create_relations, relations)

    def add_observations(self, observations: Any) -> list[dict[str, Any]]:
        """
        Add observations to existing entities.

        :param observations: ``[{entityName, contents}]``
        :raises NotFound: if an entity is missing; nothing is added
        :return: ``[{entityName, addedObservations}]``
        """
        self.scope.refuse_secrets(observations=observations)
        return self.scope.write(mutations.add_observations, observations)

    def delete_entities(self, entity_names: Any) -> None:
        """
        Delete entities with their observations and relations.

        :param entity_names: names; missing ones are ignored
        """
        self.scope.write(mutations.delete_entities, entity_names)

    def delete_observations(self, deletions: Any) -> None:
        """
        Delete observations.

        :param deletions: ``[{entityName, observations}]``; missing ones are ignored
        """
        self.scope.write(mutations.delete_observations, deletions)

    def delete_relations(self, relations: Any) -> None:
        """
        Delete relations.

        :param relations: ``[{from, to, relationType}]``; missing ones are ignored
        """
        self.scope.write(mutations.delete_relations, relations)

    def import_graph(self, entities: list[Any], relations: list[Any]) -> dict[str, int]:
        """
        Merge entities and relations in one transaction: new entities are
        created, existing ones gain the observations they lack.

        :param entities: ``[{name, entityType, observations}]``
        :param relations: ``[{from, to, relationType}]``
        :return: counts of ``entities``, ``observations`` and ``relations`` added
        """

        def merge(conn: sqlite3.Connection, caller: Caller, project: str, entities: list[Any], relations: list[Any]) -> dict[str, int]:
            counts = mutations.merge_entities(conn, caller, project, entities)
            counts["relations"] = len(mutations.create_relations(conn, caller, project, relations))
            return counts

        self.scope.refuse_secrets(items=entities)
        self.scope.refuse_secrets(items=relations)
        return self.scope.write(merge, entities, relations)

    # A person's corrections (Datasette asks for memory-curate before calling these)

    def update_observation(self, entity_name: Any, old: Any, new: Any) -> dict[str, Any]:
        """
        Replace one observation's text in place.

        :param entity_name: the entity
        :param old: the observation as stored now
        :param new: what it should say
        """
        self.scope.refuse_secrets(new=new)
        return self.scope.write(curation.update_observation, entity_name, old, new)

    def rename_entity(self, name: Any, new_name: Any) -> dict[str, Any]:
        """
        Rename an entity; its relations follow and the old name becomes an alias, so search still finds it.

        :param name: the entity's name now
        :param new_name: a name no entity in the project has
        """
        self.scope.refuse_secrets(new_name=new_name)
        return self.scope.write(curation.rename_entity, name, new_name)

    def merge_entity(self, name: Any, into: Any) -> dict[str, Any]:
        """
        Merge entity ``name`` into ``into``: observations and relations move, ``name`` becomes an alias.

        :param name: the entity that goes
        :param into: the entity that remains
        """
        return self.scope.write(curation.merge_entity, name, into)

    def moment(self, value: Any, field: str = "as_of") -> dict[str, Any]:
        """
        The moment ``value`` names, for reading memory as it was then.

        :param value: an event id (memory just after it) or an ISO 8601 time
            (memory just after the newest event at or before it)
        :return: ``{event_id, ts, asked, head}``
        """
        return history_as_of.resolve(self.conn, value, field)

    def read_graph(self, as_of: Any = None) -> dict[str, list[Any]]:
        """
        The project's whole graph: ``{entities, relations}``.

        :param as_of: read it as it was at this moment (see :meth:`moment`); None for now
        """
        if as_of is not None:
            return history_as_of.read_graph(self.conn, self.project, self.moment(as_of)["event_id"])
        return reads.read_graph(self.conn, self.project)

    def read_graph_page(self, limit: Any = None, cursor: Any = None, as_of: Any = None) -> dict[str, Any]:
        """
        One page of the project's graph: consecutive slices of :meth:`read_graph`'s
        entities, then its relations, ``{entities, relations, page}``; ``page`` says
        what it returned, how many entities and relations remain, and the
        ``next_cursor`` (None after the last page).

        :param limit: the most entities and relations in the page, 1 to 1,000 (default 100);
            a page also stops before 100,000 bytes of JSON
        :param cursor: the ``next_cursor`` of the page before; None for the first page
        :param as_of: page through memory as it was at this moment (see :meth:`moment`); None for now
        """
        if as_of is not None:
            moment = self.moment(as_of)["event_id"]
            return paging.page_of(history_as_of.read_graph(self.conn, self.project, moment), self.project, moment, limit, cursor)
        return paging.read_page(self.conn, self.project, limit, cursor)

    def graph_rows(self) -> tuple[Iterator[tuple[int, str, str, list[str]]], Iterator[tuple[int, str, str, str]]]:
        """
        The project's whole graph as rows read a batch at a time, for a door that
        writes it out without holding it: ``(entities, relations)``, iterators of
        ``(id, name, entity_type, observations)`` and ``(id, from, to, relation_type)``
        in creation order. Read both, in that order, before the next call on this memory.
        """
        return reads.entity_rows(self.conn, self.project), reads.relation_rows(self.conn, self.project)

    def entity_count(self) -> int:
        "How many entities the project holds."
        return reads.entity_count(self.conn, self.project)

    def open_nodes(self, names: Any, as_of: Any = None) -> dict[str, list[Any]]:
        """
        The named entities and every relation touching them.

        :param names: entity names
        :param as_of: read them as they were at this moment (see :meth:`moment`); None for now
        """
        if as_of is not None:
            return history_as_of.open_nodes(self.conn, self.project, names, self.moment(as_of)["event_id"])
        return reads.open_nodes(self.conn, self.project, names)

    # Search

    def search_nodes(self, query: Any, as_of: Any = None) -> dict[str, list[Any]]:
        """
        Entities whose name, type or an observation contains ``query``, best
        first, with every relation touching them; if none does, the best matches
        for ``query`` as a natural-language question, or nothing.

        :param query: text to look for; empty matches everything
        :param as_of: search memory as it was at this moment (see :meth:`moment`), on words only; None for now
        """
        if as_of is not None:
            moment = self.moment(as_of)["event_id"]
            return history_as_of.search_nodes(self.conn, self.project, query, moment, self.config.search)
        return nodes.search_nodes(self.conn, self.project, query, self.config.search)

    def search_memory(
        self, query: Any, limit: Any = memory_search.DEFAULT_LIMIT, budget: Any = memory_search.DEFAULT_BUDGET, expand: bool = False,
        as_of: Any = None,
    ) -> dict[str, Any]:
        """
        Ranked search with reasons and an accounting block.

        :param query: a natural question, keywords, or an FTS5 expression
        :param limit: most matches to return, 1 to 50
        :param budget: most bytes of results, 200 to 200,000
        :param expand: also return one-hop neighbours, ranked below every match
        :param as_of: search memory as it was at this moment (see :meth:`moment`), on words only; None for now
        """
        if as_of is not None:
            return history_as_of.search_memory(
                self.conn, self.project, query, limit, budget, expand, self.moment(as_of), self.config.search
            )
        return memory_search.search_memory(self.conn, self.project, query, limit, budget, expand, self.config.search)

    # Memory's past: diffs, provenance, the replay check

    def memory_diff(self, since: Any, until: Any = None, budget: Any = diff.DEFAULT_BUDGET) -> dict[str, Any]:
        """
        What was added, changed and deleted in the project between two moments.

        :param since: the earlier moment (see :meth:`moment`)
        :param until: the later moment; None for now
        :param budget: most bytes of changes, 1,000 to 200,000
        """
        start = self.moment(since, "from")
        end = self.moment(until if until is not None else self.moment(0, "to")["head"], "to")
        if end["event_id"] < start["event_id"]:
            raise InvalidInput(f"to: event {end['event_id']} is before from (event {start['event_id']}); give the earlier moment first")
        before = history_as_of.project_at(self.conn, self.project, start["event_id"])
        after = history_as_of.project_at(self.conn, self.project, end["event_id"])
        return diff.memory_diff(before, after, (start, end), budget)

    def provenance(self, entity: Any = None, claim: Any = None, fact: Any = None,
                   budget: Any = provenance.DEFAULT_BUDGET) -> dict[str, Any]:
        """
        Where a piece of memory came from: name exactly one of an entity, a claim or a fact.

        :param entity: an entity's name: its observations and relations, each with the events that made it
        :param claim: a claim's id: who proposed it, on what evidence, its reviews
        :param fact: a fact's id: who recorded it and why, the claim and evidence approved, its validity changes
        :param budget: most bytes of the result, 1,000 to 200,000
        """
        given = [name for name, value in (("entity", entity), ("claim", claim), ("fact", fact)) if value is not None]
        if len(given) != 1:
            raise InvalidInput("give exactly one of entity, claim or fact" + (f" (got {', '.join(given)})" if given else ""))
        if entity is not None:
            return provenance.entity_provenance(self.conn, self.project, check_name(entity, "entity"), budget)
        if claim is not None:
            return provenance.budgeted(provenance.claim_provenance(self.conn, self.project, claim), budget)
        return provenance.budgeted(provenance.fact_provenance(self.conn, self.project, fact), budget)

    def check_replay(self) -> dict[str, Any]:
        """
        Replay the whole ledger (every project) and compare every memory table with it.

        :return: ``{ok, problems}``, each problem ``{table, row, expected, found}``
        """
        problems = compare.check(self.conn)[1]
        return {"ok": not problems, "problems": problems}

    def wait_for_semantic_index(self, timeout: float | None = None) -> bool:
        """
        Wait until the semantic index has caught up with every write so far
        (it catches up in the background); True at once when the semantic arm is off.

        :param timeout: seconds, or None to wait as long as it takes
        :return: False if ``timeout`` passed first
        """
        if not self.config.search.semantic_on():
            return True
        return background.wait_until_current(self.conn, timeout)

    # The ledger

    def append_event(self, content: Any, kind: Any = "note") -> dict[str, Any]:
        """
        Record something the caller did or decided, as a ledger event.

        :param content: what happened
        :param kind: a short label, such as ``note`` or ``decision``
        """
        content = check_text(content, "content")
        if not content.strip():
            raise InvalidInput("content: must not be empty; say what happened")
        kind = check_name(kind, "kind", max_chars=64)
        if not kind.strip():
            raise InvalidInput("kind: must not be empty; use a short label such as note or decision")
        if kind.strip().lower() in ledger.RECORDED_KINDS:
            raise InvalidInput(f"kind: {kind!r} is a kind memory records for its own changes; "
                               "use another label, such as note or decision (checkpoint has a tool of its own)")
        self.scope.refuse_secrets(content=content, kind=kind)
        event = self.scope.write(
            lambda conn, caller, project: ledger.append_event(conn, caller, project, kind, project, new=content)
        )
        return ledger.event_dict(event)

    def checkpoint(self, summary: Any) -> dict[str, Any]:
        """
        Record a checkpoint anchored to the ledger head.

        :param summary: what has been done and what comes next
        """
        summary = check_text(summary, "summary", max_bytes=MAX_SUMMARY_BYTES)
        if not summary.strip():
            raise InvalidInput("summary: must not be empty; say what was done and what comes next")
        self.scope.refuse_secrets(summary=summary)
        return self.scope.write(checkpoints.add_checkpoint, summary)

    def resume_context(
        self, max_events: Any = 50, budget: Any = checkpoints.DEFAULT_BUDGET, skip_kinds: tuple[str, ...] = HOOK_KINDS
    ) -> dict[str, Any]:
        """
        The latest checkpoint (as the ledger records it), the newest events since it
        that fit in ``budget``, the chain from the checkpoint to the head, and an
        accounting of what was left out.

        :param max_events: most events to return, 0 to 1000
        :param budget: most bytes of the whole result, 1,000 to 200,000
        :param skip_kinds: kinds of events to leave out and count apart (``left_out_by_kind``); by default
            the hooks' bookkeeping (tool activity, session starts), which would crowd out decisions
        """
        max_events = check_limit(max_events, "max_events", 0, 1000)
        budget = check_limit(budget, "budget", checkpoints.MIN_BUDGET, checkpoints.MAX_BUDGET)
        skip_kinds = tuple(check_name(kind, "skip_kinds", max_chars=64) for kind in skip_kinds)
        return checkpoints.resume_context(self.conn, self.project, max_events, budget, skip_kinds)

    def verify_chain(self) -> ChainStatus:
        "Check the whole ledger's hash chain (every project)."
        return ledger.verify_chain(self.conn)

    def chain_checks(self, problems_listed: int = 5) -> dict[str, Any]:
        """
        What ``verify`` says of the hash chains and the records beside the file
        (the ledger's chain, the head witness, the last clean check, the SQL audit
        log's chain), without its replay: ``{ok, summary, checks, events, head_hash,
        broken_event_id, problem}``, each check listing at most ``problems_listed`` problems.
        """
        return file_check.chain_checks(self.conn, problems_listed)

    def integrity(self, noticed_by: str | None = None) -> dict[str, Any]:
        """
        The file against the records kept beside it (the head witness, the last
        clean check), in a few lookups: ``{ok, witness, last_check, summary,
        problems, problem_count, acknowledged}``.

        :param noticed_by: record what is found wrong in the witness, as found by this; None to record nothing
        """
        return evidence.report(self.conn, noticed_by)

    def acknowledge_divergences(self, reviewer: Reviewer, reason: Any) -> dict[str, Any]:
        """
        A person acknowledges, with a reason, every divergence from the witness
        not yet acknowledged: recorded in the ledger as theirs; later checks
        compare with the file as it is now. Only a person can.

        :param reviewer: issued by :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param reason: why (a restore from a backup, a known repair), for whoever reads the ledger later
        :raises ReviewRequired: for anything but a reviewer the gate issued
        :return: ``{event, acknowledged}``
        """
        caller = require_reviewer(reviewer).caller
        reason = check_rationale(reason, "reason")
        self.scope.refuse_secrets(reason=reason)
        return evidence.acknowledge(self.conn, caller, self.project, reason)

    def redact(self, reviewer: Reviewer, text: Any, reason: Any, target: str, delete_older_copies: bool = False) -> dict[str, Any]:
        """
        A person redacts ``text`` (a leaked secret, say) from this project: from its
        graph, every search index, the vector side file and every graph event's old
        and new values (their digests stay, so the chain still verifies), recorded
        as a ``redact`` event that syncs and that each peer applies on arrival. The
        file is then rewritten so no free page keeps the text. Only a person can.

        :param reviewer: issued by :func:`~datasette_memory.governed.gate.reviewer_for_request`
        :param text: the text to remove, as stored (at least four characters)
        :param reason: why, for whoever reads the ledger later
        :param target: what the person redacted from: an entity's name, or ``event N``
        :param delete_older_copies: delete the file's snapshots that still hold the text
        :raises ReviewRequired: for anything but a reviewer the gate issued
        :raises InvalidInput: if the text is too short, part of a name, or not stored in the project
        :return: ``{event, strings, replaced, entities, embedded, file, remaining, older_copies}``
        """
        caller = require_reviewer(reviewer).caller
        text, reason = redaction.checked_arguments(text, reason)
        self.scope.refuse_secrets(reason=reason)
        with write_transaction(self.conn):
            done = redaction.redact(self.conn, caller, self.project, text, reason, target)
        done["embedded"] = redaction.re_embed(self.conn, self.project, done["entities"])
        done["file"] = redaction.purge(self.conn)
        done["remaining"] = redaction.remaining(self.conn, text)
        done["older_copies"] = redaction.older_copies(self.conn, self.config.snapshot_dir, text, delete_older_copies)
        return done
