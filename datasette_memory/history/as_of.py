"""Memory as of any moment: the graph as the ledger says it was then.

A moment is an event id (``1234``, memory just after that event) or an ISO 8601
time (memory just after the newest event recorded at or before it). Reads
replay the project's events up to the moment: all of them for ``read_graph``,
only those shaping the named entities for ``open_nodes``. The searches run the
live search code on the replayed graph (every project's, with the words
deletions and edits removed), loaded into an in-memory memory file, so a search
of the past ranks and abstains exactly as a search of today would (on words
only: the semantic arm indexes today's memory). The past does not change, so the
last moment loaded for a search is kept for the next search of the same moment
(one at a time: loading a large file takes seconds).
"""

import dataclasses
import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..core.clock import parse_time
from ..core.database import configure, migrate
from ..core.errors import InvalidInput
from ..core.ledger import EVENT_COLUMNS, machine_id
from ..graph.parsing import parse_names
from ..search import memory_search, nodes
from ..search.settings import SearchSettings
from .replay import Project, events, replay
from .touching import events_shaping

# the events whose old words search treats as forgotten (memory_deleted_fts)
FORGETTING_KINDS = ("delete_entity", "delete_observation", "update_observation")


def resolve(conn: sqlite3.Connection, value: Any, field: str = "as_of") -> dict[str, Any]:
    """
    The moment ``value`` names: ``{event_id, ts, asked}``; event 0 is before the first event.

    :param value: an event id (integer, or text of digits) or an ISO 8601 date or time
    :raises InvalidInput: for anything else, or an event id beyond the ledger's head
    """
    head = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
    if isinstance(value, bool) or value is None or (not isinstance(value, (int, str))):
        raise InvalidInput(f"{field}: give an event id (such as 1234) or an ISO 8601 time (such as 2025-03-01T09:30:00Z), got {value!r}")
    text = str(value).strip()
    if text.lstrip("#").isdigit():
        event_id = int(text.lstrip("#"))
        if event_id > head:
            raise InvalidInput(f"{field}: event {event_id} does not exist yet; the ledger ends at event {head}")
    else:
        try:
            moment = parse_time(text, field)
        except InvalidInput:
            raise InvalidInput(f"{field}: {text[:64]!r} is neither an event id (such as 1234) nor an ISO 8601 time "
                               "(such as 2025-03-01 or 2025-03-01T09:30:00Z)")
        row = conn.execute("SELECT id FROM events WHERE ts <= ? ORDER BY ts DESC, id DESC LIMIT 1", [moment]).fetchone()
        event_id = row[0] if row else 0
    ts = conn.execute("SELECT ts FROM events WHERE id = ?", [event_id]).fetchone()
    return {"event_id": event_id, "ts": ts[0] if ts else None, "asked": text, "head": head}


def project_at(conn: sqlite3.Connection, project: str, event_id: int) -> Project:
    "The project's memory just after event ``event_id``."
    return replay(conn, project, upto=event_id).project(project)


def read_graph(conn: sqlite3.Connection, project: str, event_id: int) -> dict[str, list[Any]]:
    "The project's whole graph just after event ``event_id``, in the official shape."
    return project_at(conn, project, event_id).graph()


def open_nodes(conn: sqlite3.Connection, project: str, names: Any, event_id: int) -> dict[str, list[Any]]:
    "The named entities just after event ``event_id``, and the relations touching them, in the official shape."
    names = parse_names(names, "names")
    event_ids, _ = events_shaping(conn, project, names, upto=event_id)
    state = replay(conn, project, event_ids=event_ids).project(project)
    wanted = set(names)
    return {
        "entities": [e.as_official() for name, e in state.entities.items() if name in wanted],
        "relations": [{"from": f, "to": t, "relationType": r} for f, t, r in state.relations
                      if (f in wanted and f in state.entities) or (t in wanted and t in state.entities)],
    }


def loaded(conn: sqlite3.Connection, event_id: int) -> sqlite3.Connection:
    """
    An in-memory memory file holding memory just after event ``event_id``, for
    the search code to read as it reads today's. Search weighs a word by all of
    memory (one only another project holds is no mere question wording), breaks
    ties by the order observations were stored and abstains on words a deletion
    or edit removed, so every project is loaded, observations in that order, with
    the events that removed words.
    """
    past = sqlite3.connect(":memory:", check_same_thread=False)
    configure(past)
    migrate(past)
    past.execute("BEGIN")
    for state in replay(conn, upto=event_id).projects.values():
        load_graph(past, state)
    past.executemany(
        f"INSERT INTO events ({', '.join(EVENT_COLUMNS)}) VALUES ({', '.join('?' for _ in EVENT_COLUMNS)})",
        [list(event.values()) for event in events(conn, "id <= ? AND kind IN (SELECT value FROM json_each(?))",
                                                   [event_id, json.dumps(FORGETTING_KINDS)])],
    )
    past.execute("COMMIT")
    return past


def load_graph(past: sqlite3.Connection, state: Project) -> None:
    "One project's graph into ``past``: its observations in the order they were stored, so row ids rank as today's do."
    ids = {}
    for entity in state.entities.values():
        cursor = past.execute(
            "INSERT INTO entities (project, name, entity_type, created_at) VALUES (?, ?, ?, ?)",
            [state.name, entity.name, entity.entity_type, entity.created_at or ""],
        )
        ids[entity.name] = cursor.lastrowid
    stored = sorted(((getattr(o, "made", (0, 0)), ids[e.name], o) for e in state.entities.values() for o in e.observations),
                    key=lambda item: item[0])
    past.executemany(
        "INSERT INTO observations (entity_id, content, created_at) VALUES (?, ?, ?)",
        [(entity_id, content, created_at or "") for _, entity_id, (content, created_at) in stored],
    )
    past.executemany(
        "INSERT INTO relations (project, from_entity, to_entity, relation_type, created_at) VALUES (?, ?, ?, ?, ?)",
        [(state.name, f, t, r, created_at or "") for (f, t, r), created_at in state.relations.items()],
    )
    past.executemany(
        "INSERT INTO memory_aliases (project, alias, entity_id, created_at) VALUES (?, ?, ?, ?)",
        [(state.name, alias, ids[target], created_at or "") for alias, (target, created_at) in state.aliases.items() if target in ids],
    )


T = TypeVar("T")
# the moment last loaded for a search: ((machine, event id, its hash), connection)
_loaded: list[tuple[tuple[Any, ...], sqlite3.Connection]] = []
_loading = threading.Lock()


def with_loaded(conn: sqlite3.Connection, event_id: int, read: Callable[[sqlite3.Connection], T]) -> T:
    "``read`` run on memory just after event ``event_id``, loaded in memory (or kept from the last search)."
    machine = machine_id(conn)
    event_hash = conn.execute("SELECT hash FROM events WHERE id = ?", [event_id]).fetchone()
    key = (machine, event_id, event_hash)
    with _loading:
        if not _loaded or _loaded[0][0] != key:
            while _loaded:
                _loaded.pop()[1].close()
            _loaded.append((key, loaded(conn, event_id)))
        return read(_loaded[0][1])


def words_only(settings: SearchSettings) -> SearchSettings:
    return dataclasses.replace(settings, semantic=False)


def search_nodes(conn: sqlite3.Connection, project: str, query: Any, event_id: int, settings: SearchSettings) -> dict[str, list[Any]]:
    "``search_nodes`` over the graph just after event ``event_id``."
    return with_loaded(conn, event_id, lambda past: nodes.search_nodes(past, project, query, words_only(settings)))


def search_memory(conn: sqlite3.Connection, project: str, query: Any, limit: Any, budget: Any, expand: bool,
                  moment: dict[str, Any], settings: SearchSettings) -> dict[str, Any]:
    "``search_memory`` over the graph at ``moment`` (from :func:`resolve`), saying which moment it searched."
    result = with_loaded(
        conn, moment["event_id"],
        lambda past: memory_search.search_memory(past, project, query, limit, budget, expand, words_only(settings)),
    )
    return {**result, "as_of": {k: moment[k] for k in ("event_id", "ts", "asked")}}
