"""A summary of a whole memory file: its projects, their sizes and the ledger, now or as of a past moment."""

import sqlite3
from typing import Any

from .core import evidence
from .core.ledger import verify_chain
from .history.replay import Project, replay

CHECKED_ON_SIGHT = 20_000  # a ledger this long is checked whole on every look: 0.19 s on a 2-core machine (docs/benchmarks.md, Pages)
ENTITIES_LISTED = 100  # per project, in a past overview


def overview(conn: sqlite3.Connection, check_chain: bool | None = None) -> dict[str, Any]:
    """
    Every project with its counts (pending claims among them) and latest checkpoint, the chain status,
    and the file against the records beside it (``integrity``: see :func:`.core.evidence.report`).

    :param conn: an open connection to a memory file
    :param check_chain: walk the whole hash chain (True), or only report its head (False);
        by default, walk it when the ledger holds at most :data:`CHECKED_ON_SIGHT` events
    """
    projects: dict[str, dict[str, Any]] = {}
    for table, sql in (
        ("entities", "SELECT project, count(*) FROM entities GROUP BY project"),
        (
            "observations",
            "SELECT e.project, count(*) FROM observations o JOIN entities e ON e.id = o.entity_id GROUP BY e.project",
        ),
        ("relations", "SELECT project, count(*) FROM relations GROUP BY project"),
        ("events", "SELECT project, count(*) FROM events GROUP BY project"),
        ("pending_claims", "SELECT project, count(*) FROM claims WHERE status = 'candidate' GROUP BY project"),
    ):
        for project, count in conn.execute(sql):
            projects.setdefault(project, dict.fromkeys(("entities", "observations", "relations", "events", "pending_claims"), 0))
            projects[project][table] = count
    for project in projects:
        # the ledger's newest checkpoint event (the truth), not the checkpoints table
        checkpoint = conn.execute(
            "SELECT ts, json_extract(new, '$.summary') FROM events WHERE project = ? AND kind = 'checkpoint' ORDER BY id DESC LIMIT 1",
            [project],
        ).fetchone()
        if checkpoint:
            projects[project]["latest_checkpoint"] = {"ts": checkpoint[0], "summary": checkpoint[1]}
    events = sum(counts.get("events", 0) for counts in projects.values())
    return {
        "projects": [{"project": name, **counts} for name, counts in sorted(projects.items())],
        "chain": chain_status(conn, events, check_chain),
        "integrity": evidence.report(conn, noticed_by="the overview"),
    }


def chain_status(conn: sqlite3.Connection, events: int, check_chain: bool | None) -> dict[str, Any]:
    "The chain walked whole (``check_chain``, by default for a ledger of at most :data:`CHECKED_ON_SIGHT` events), or its head."
    if check_chain is None:
        check_chain = events <= CHECKED_ON_SIGHT
    return {"checked": True, **verify_chain(conn).to_dict()} if check_chain else chain_head(conn, events)


def overview_as_of(conn: sqlite3.Connection, event_id: int, check_chain: bool | None = None) -> dict[str, Any]:
    """
    Every project as it was just after event ``event_id``, rebuilt from the
    ledger (one replay up to that event): its counts, pending claims, latest
    checkpoint and first :data:`ENTITIES_LISTED` entities by name. The chain's
    status and the integrity report are the file's now: the past is read from it.

    :param conn: an open connection to a memory file
    :param event_id: the moment, an event id (0 for before the first event)
    :param check_chain: as for :func:`overview`
    """
    state = replay(conn, upto=event_id)
    events = dict(conn.execute("SELECT project, count(*) FROM events WHERE id <= ? GROUP BY project", [event_id]).fetchall())
    projects = [{"project": name, **project_then(state.project(name)), "events": events[name]} for name in sorted(events)]
    total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    return {"projects": projects, "chain": chain_status(conn, total, check_chain), "integrity": evidence.report(conn, noticed_by="the overview")}


def project_then(project: Project) -> dict[str, Any]:
    "A replayed project's counts, pending claims, latest checkpoint and its first entities by name."
    names = sorted(project.entities)
    checkpoint = project.checkpoints[-1] if project.checkpoints else None
    return {
        "entities": len(names),
        "observations": sum(len(entity.observations) for entity in project.entities.values()),
        "relations": len(project.relations),
        "pending_claims": sum(claim["status"] == "candidate" for claim in project.claims.values()),
        "latest_checkpoint": {"ts": checkpoint["ts"], "summary": checkpoint["summary"]} if checkpoint else None,
        "entity_list": [
            {"name": name, "entityType": project.entities[name].entity_type, "observations": len(project.entities[name].observations)}
            for name in names[:ENTITIES_LISTED]
        ],
        "entities_left_out": max(0, len(names) - ENTITIES_LISTED),
    }


def chain_head(conn: sqlite3.Connection, events: int) -> dict[str, Any]:
    "The ledger's length and head, not checked: what the overview says of a ledger too long to walk on every look."
    head = conn.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
    head_hash = head[0] if head else ""
    return {
        "checked": False,
        "ok": None,
        "events": events,
        "head_hash": head_hash,
        "summary": f"ledger of {events} events, head {head_hash[:12]}; not checked on every look above {CHECKED_ON_SIGHT} events",
    }


PROJECTS = """
WITH RECURSIVE projects(name) AS (
    SELECT min(project) FROM events
    UNION ALL
    SELECT (SELECT min(project) FROM events WHERE project > projects.name) FROM projects WHERE name IS NOT NULL
)
SELECT name FROM projects WHERE name IS NOT NULL
"""  # one step of the events_by_project index per project, not a scan of the ledger


def project_names(conn: sqlite3.Connection) -> list[str]:
    "Every project that has stored anything, by name."
    return [name for (name,) in conn.execute(PROJECTS)]


def projects_holding_memory(conn: sqlite3.Connection) -> list[tuple[str, int, int]]:
    """
    Every project holding entities or facts, as ``(project, entities, facts)``, the largest first.
    Events alone (a session's start, an agent's activity) are not memory.

    :param conn: an open connection to a memory file
    """
    entities = dict(conn.execute("SELECT project, entities FROM memory_project_sizes WHERE entities > 0"))
    facts = dict(conn.execute("SELECT project, count(*) FROM facts GROUP BY project"))
    sizes = [(name, entities.get(name, 0), facts.get(name, 0)) for name in set(entities) | set(facts)]
    return sorted(sizes, key=lambda size: (-size[1], -size[2], size[0]))


def pending_by_project(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    "Each project with claims waiting for a person's review, and how many, by name."
    return [(project, count) for project, count in conn.execute(
        "SELECT project, count(*) FROM claims WHERE status = 'candidate' GROUP BY project ORDER BY project"
    )]


def busiest_project(conn: sqlite3.Connection) -> str | None:
    "The project of the newest event (the one with the most recent activity), or None for an empty ledger."
    row = conn.execute("SELECT project FROM events ORDER BY id DESC LIMIT 1").fetchone()
    return row[0] if row else None
