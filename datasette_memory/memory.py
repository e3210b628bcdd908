"""The core API: the one place every door (Datasette, MCP, CLI, JSON) calls.

A :class:`Memory` is a connection to one memory file, scoped to one project and
one caller. Each mutating call is one IMMEDIATE transaction holding the change
and its ledger events: it all happens, or nothing does.

Example::

    from datasette_memory import Memory

    memory = Memory.open("memory.db", project="billing", actor="claude")
    memory.create_entities([{"name": "auth", "entityType": "service", "observations": []}])
    memory.verify_chain().ok
"""

import sqlite3

from . import graph, ledger, search, vectors
from .database import connect, immediate
from .errors import InvalidInput
from .governed import GovernedTier
from .ledger import Caller
from .secrets import refuse_secrets
from .validation import DEFAULT_PROJECT, MAX_SUMMARY_BYTES, check_limit, check_name, check_project, check_text



class Memory(GovernedTier):
    """
    One project of one memory file, as seen by one caller.

    :param conn: a connection to a migrated memory file (see :meth:`open`)
    :param project: the project every call is scoped to
    :param actor: who is calling, recorded in the ledger
    :param session: the caller's session id, recorded in the ledger
    :param allow_secrets: store text that looks like a credential instead of refusing it
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        project: str = DEFAULT_PROJECT,
        actor: str = "local",
        session: str | None = None,
        allow_secrets: bool = False,
    ):
        self.conn = conn
        self.project = check_project(project)
        self.caller = Caller(check_name(actor, "actor"), session)
        self.allow_secrets = allow_secrets

    @classmethod
    def open(cls, path, **kwargs) -> "Memory":
        """
        Open (creating and migrating if needed) the memory file at ``path``.

        :param path: the memory file
        :param kwargs: ``project``, ``actor``, ``session`` and ``allow_secrets``
        """
        return cls(connect(path), **kwargs)

    def close(self):
        self.conn.close()

    def _write(self, function, *args, stored_as: str | None = None):
        "Run ``function`` in one transaction; ``stored_as`` names an argument whose text is kept."
        if stored_as and not self.allow_secrets:
            for arg in args:
                refuse_secrets(arg, stored_as)
        since = vectors.ledger_head(self.conn)  # None unless the optional semantic arm is on
        with immediate(self.conn):
            result = function(self.conn, self.caller, self.project, *args)
        vectors.embed_changes(self.conn, since)  # after commit: re-embed what the write's events name
        return result

    # The knowledge graph: the official memory server's operations

    def create_entities(self, entities: list) -> list:
        """
        Create entities; names already in the project are left unchanged.

        :param entities: ``[{name, entityType, observations}]``
        :return: the entities actually created
        """
        return self._write(graph.create_entities, entities, stored_as="entities")

    def create_relations(self, relations: list) -> list:
        """
        Create relations not already stored.

        :param relations: ``[{from, to, relationType}]``
        :return: the relations actually created
        """
        return self._write(graph.create_relations, relations, stored_as="relations")

    def add_observations(self, observations: list) -> list:
        """
        Add observations to existing entities.

        :param observations: ``[{entityName, contents}]``
        :raises NotFound: if an entity is missing; nothing is added
        :return: ``[{entityName, addedObservations}]``
        """
        return self._write(graph.add_observations, observations, stored_as="observations")

    def delete_entities(self, entity_names: list):
        """
        Delete entities with their observations and relations.

        :param entity_names: names; missing ones are ignored
        """
        self._write(graph.delete_entities, entity_names)

    def delete_observations(self, deletions: list):
        """
        Delete observations.

        :param deletions: ``[{entityName, observations}]``; missing ones are ignored
        """
        self._write(graph.delete_observations, deletions)

    def delete_relations(self, relations: list):
        """
        Delete relations.

        :param relations: ``[{from, to, relationType}]``; missing ones are ignored
        """
        self._write(graph.delete_relations, relations)

    def import_graph(self, entities: list, relations: list) -> dict:
        """
        Merge entities and relations in one transaction: new entities are
        created, existing ones gain the observations they lack.

        :param entities: ``[{name, entityType, observations}]``
        :param relations: ``[{from, to, relationType}]``
        :return: counts of ``entities``, ``observations`` and ``relations`` added
        """

        def merge(conn, caller, project, entities, relations):
            counts = graph.merge_entities(conn, caller, project, entities)
            counts["relations"] = len(graph.create_relations(conn, caller, project, relations))
            return counts

        return self._write(merge, entities, relations, stored_as="items")

    def read_graph(self) -> dict:
        "The project's whole graph: ``{entities, relations}``."
        return graph.read_graph(self.conn, self.project)

    def open_nodes(self, names: list) -> dict:
        """
        The named entities and every relation touching them.

        :param names: entity names
        """
        return graph.open_nodes(self.conn, self.project, names)

    def search_nodes(self, query: str) -> dict:
        """
        Entities whose name, type or an observation contains ``query``, best
        first, with every relation touching them; if none does, the best matches
        for ``query`` as a natural-language question, or nothing.

        :param query: text to look for; empty matches everything
        """
        return search.search_nodes(self.conn, self.project, query)

    def search_memory(self, query: str, limit: int = search.DEFAULT_LIMIT, budget: int = search.DEFAULT_BUDGET, expand: bool = False) -> dict:
        """
        Ranked search with reasons and an accounting block.

        :param query: a natural question, keywords, or an FTS5 expression
        :param limit: most matches to return, 1 to 50
        :param budget: most bytes of results, 200 to 200,000
        :param expand: also return one-hop neighbours, ranked below every match
        """
        return search.search_memory(self.conn, self.project, query, limit, budget, expand)

    # The ledger

    def append_event(self, content: str, kind: str = "note") -> dict:
        """
        Record something the caller did or decided, as a ledger event.

        :param content: what happened
        :param kind: a short label, such as ``note`` or ``decision``
        """
        content = check_text(content, "content")
        kind = check_name(kind, "kind", max_chars=64)
        event = self._write(
            lambda conn, caller, project, content: ledger.append_event(conn, caller, project, kind, project, new=content),
            content,
            stored_as="content",
        )
        return ledger.event_dict(event)

    def checkpoint(self, summary: str) -> dict:
        """
        Record a checkpoint anchored to the ledger head.

        :param summary: what has been done and what comes next
        """
        summary = check_text(summary, "summary", max_bytes=MAX_SUMMARY_BYTES)
        if not summary.strip():
            raise InvalidInput("summary: must not be empty; say what was done and what comes next")
        return self._write(ledger.add_checkpoint, summary, stored_as="summary")

    def resume_context(self, max_events: int = 50) -> dict:
        """
        The latest checkpoint, the events since it and the chain status.

        :param max_events: most events to return, 0 to 1000
        """
        max_events = check_limit(max_events, "max_events", 0, 1000)
        return ledger.resume_context(self.conn, self.project, max_events)

    def verify_chain(self) -> ledger.ChainStatus:
        "Check the whole ledger's hash chain (every project)."
        return ledger.verify_chain(self.conn)
