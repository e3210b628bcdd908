"""The ledger read as a timeline: one project's events, newest first, described for people.

Every query here names the project and walks the ``events_by_project`` index
(project, id) from an id cursor with a LIMIT, never an OFFSET, so the newest
page of a million-event ledger costs what the newest page of a small one does.
The activity counts are bounded by date (at most :data:`CHART_DAYS` days) and,
the ledger being append-only, carry on from an earlier count (:class:`DayCounts`).

Each event is described with what a person reads (``about``, ``text``,
``diff``, ``changes``) next to its full stored values, so a page and its JSON
twin carry the same thing; and with its ``origin``: this machine, or a sync
that applied other machines' events here (an echo, listed in
``memory_sync_derived``), with the foreign events that made the same change.
"""

import dataclasses
import datetime
import difflib
import json
import re
import sqlite3
from typing import Any

from .clock import format_time, parse_time
from .errors import InvalidInput
from .ledger import EVENT_COLUMNS, event_dict
from .log_heads import file_machine
from .validation import check_limit, check_name, check_text

DEFAULT_PAGE = 100
MAX_PAGE = 500
CHART_DAYS = 90
MAX_DIFF_TOKENS = 5000  # beyond this a text change is shown as all-old, all-new: difflib is quadratic at worst
ENTITY_KINDS = (
    "create_entity",
    "add_observation",
    "update_observation",
    "delete_observation",
    "delete_entity",
    "rename_entity",
    "merge_entity",
)
RELATION_KINDS = ("create_relation", "delete_relation")
# an event names the entity as its target, as an end of the relation it is about,
# or as the new name of a rename or the entity a merge went into
# words anywhere in what the event is about or holds, as stored (values are JSON), ignoring case
TEXT_MATCH = "(instr(lower(target), :text) > 0 OR instr(lower(coalesce(new, '')), :text) > 0 OR instr(lower(coalesce(old, '')), :text) > 0)"
MAX_TEXT_BYTES = 500
ENTITY_MATCH = f"""(
    (kind IN ({', '.join(repr(k) for k in ENTITY_KINDS)}) AND target = :entity)
    OR (kind IN ({', '.join(repr(k) for k in RELATION_KINDS)}) AND json_valid(target)
        AND :entity IN (json_extract(target, '$[0]'), json_extract(target, '$[2]')))
    OR (kind = 'rename_entity' AND json_valid(new) AND json_extract(new, '$.name') = :entity)
    OR (kind = 'merge_entity' AND json_valid(new) AND json_extract(new, '$.into') = :entity)
)"""
# what the event itself says (its actor, time, project, target) or what ``about`` shows: left out of ``changes``
BOOKKEEPING = ("id", "project", "proposed_at", "proposed_by", "recorded_at", "recorded_by", "added_at", "added_by", "reviews",
               "subject_key", "predicate_key", "object_key")
STATEMENT = ("subject", "predicate", "object")
# a word, or a name joined by - . / : @ (postgres-primary, api.v2, s3://bucket) taken whole, so
# two names changed into each other never interleave; runs of spaces; runs of other marks
TOKEN = re.compile(r"\w+(?:[-./:@]\w+)*|\s+|[^\w\s]+")
ITEM_TARGET = re.compile(r"(claim|fact):(\d+)")
# a sync writes its echoes with actor ``sync`` and this session (datasette_memory/sync/exchange.py, sync_caller);
# ``share`` applies held events as the peer ``share``
SYNC_ACTOR = "sync"
SYNC_SESSION = "sync with "
SHARE_PEER = "share"
OWN_EVENT = "machine = (SELECT value FROM memory_meta WHERE key = 'machine_id') AND id NOT IN (SELECT event_id FROM memory_sync_derived)"
ECHO_EVENT = "id IN (SELECT event_id FROM memory_sync_derived)"
# foreign events of one kind read, newest arrivals first, to find those an echo applied: a page stays cheap
# on a file holding many; an echo whose events arrived before these says only which sync applied it
SOURCES_SCANNED = 5000
SOURCE_COLUMNS = ("machine", "clock", "ts", "actor", "target", "old_digest", "new_digest", "received_from", "received_at")


@dataclasses.dataclass(frozen=True)
class Filters:
    """
    Which events a timeline shows: one project's, optionally narrowed.

    :param project: the project
    :param entity: events about this entity (relation events: at either end)
    :param kind: events of this kind
    :param actor: events by this actor
    :param since: events at or after this time (stored format)
    :param until: events at or before this time (stored format)
    :param text: events whose target or values contain this text, ignoring case (lower case)
    :param origin: ``here`` (this machine's own events), ``sync`` (those a sync wrote to apply other
        machines' events) or ``sync:PEER`` (those a sync with PEER wrote)
    """

    project: str
    entity: str | None = None
    kind: str | None = None
    actor: str | None = None
    since: str | None = None
    until: str | None = None
    text: str | None = None
    origin: str | None = None

    def condition(self) -> tuple[str, dict[str, Any]]:
        "The SQL condition on ``events`` these filters make, and its parameters."
        clauses = ["project = :project"]
        for column, value in (("kind", self.kind), ("actor", self.actor)):
            if value is not None:
                clauses.append(f"{column} = :{column}")
        if self.since is not None:
            clauses.append("ts >= :since")
        if self.until is not None:
            clauses.append("ts <= :until")
        if self.entity is not None:
            clauses.append(ENTITY_MATCH)
        if self.text is not None:
            clauses.append(TEXT_MATCH)
        if self.origin == "here":
            clauses.append(OWN_EVENT)
        elif self.origin is not None:
            clauses.append(ECHO_EVENT)
        peer = self.origin[len("sync:"):] if self.origin and self.origin.startswith("sync:") else None
        if peer is not None:
            clauses.append("actor = :sync_actor AND session = :sync_session")
        return " AND ".join(clauses), {**dataclasses.asdict(self), "sync_actor": SYNC_ACTOR, "sync_session": SYNC_SESSION + (peer or "")}


def filters(
    project: str,
    entity: str | None = None,
    kind: str | None = None,
    actor: str | None = None,
    since: str | None = None,
    until: str | None = None,
    text: str | None = None,
    origin: str | None = None,
) -> Filters:
    """
    Check and normalize a timeline's filters; an empty one is no filter.

    :param project: the project
    :param entity: an entity name
    :param kind: an event kind
    :param actor: an actor id
    :param since: the ``from`` filter: an ISO 8601 date or time
    :param until: the ``to`` filter: an ISO 8601 date (that whole day is included) or time
    :param text: words the event's target or values contain, ignoring case (the hooks' activity is found this way)
    :param origin: ``here``, ``sync`` or ``sync:PEER`` (see :class:`Filters`)
    :raises InvalidInput: naming ``from`` or ``to`` for a malformed time, or a range that ends before it starts;
        naming ``origin`` for an origin that is none of those
    """
    chosen = Filters(
        project,
        entity=check_name(entity, "entity") if entity else None,
        kind=check_name(kind, "kind") if kind else None,
        actor=check_name(actor, "actor") if actor else None,
        since=parse_time(since, "from") if since else None,
        until=end_of(until) if until else None,
        text=check_text(text, "text", max_bytes=MAX_TEXT_BYTES).strip().lower() or None if text else None,
        origin=check_origin(origin) if origin else None,
    )
    if chosen.since and chosen.until and chosen.until < chosen.since:
        raise InvalidInput(f"to: {until!r} is before from {since!r}; give a range that ends after it starts")
    return chosen


def check_origin(value: str) -> str:
    "An ``origin`` filter as given, or an error saying what it may be."
    value = check_text(value, "origin", max_bytes=MAX_TEXT_BYTES)
    if value in ("here", "sync") or (value.startswith("sync:") and value[len("sync:"):].strip()):
        return value
    raise InvalidInput(f"origin: {value[:80]!r} is not an origin; give here (this machine's own events), "
                       "sync (events a sync applied from other machines) or sync:PEER (those a sync with PEER applied)")


def end_of(value: str) -> str:
    "The last moment ``value`` (the ``to`` filter) includes: a date alone includes its whole day."
    try:
        day = datetime.date.fromisoformat(check_text(value, "to", max_bytes=64).strip())
    except ValueError:
        return str(parse_time(value, "to"))
    return day_end(day)


def day_start(day: datetime.date) -> str:
    return format_time(datetime.datetime.combine(day, datetime.time(), datetime.timezone.utc))


def day_end(day: datetime.date) -> str:
    return format_time(datetime.datetime.combine(day, datetime.time.max, datetime.timezone.utc))


def events_page(conn: sqlite3.Connection, chosen: Filters, before: int | None = None, limit: int = DEFAULT_PAGE) -> dict[str, Any]:
    """
    One page of the timeline: the newest ``limit`` matching events older than
    ``before``, grouped, with the cursors of the pages either side.

    :param conn: an open connection
    :param chosen: which events
    :param before: show events with ids below this (the ``older`` cursor of the page above); None for the newest
    :param limit: events per page, 1 to :data:`MAX_PAGE`
    :return: ``{timeline, older, newer}``: entries (see :func:`timeline_entries`); each cursor
        ``{"before": id}`` (``None`` for the newest page), or None when there is no such page
    """
    limit = check_limit(limit, "limit", 1, MAX_PAGE)
    where, params = chosen.condition()
    cursor = "" if before is None else " AND id < :before"
    rows = conn.execute(
        f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE {where}{cursor} ORDER BY id DESC LIMIT :limit",
        {**params, "before": before, "limit": limit + 1},
    ).fetchall()
    stored = [dict(zip(EVENT_COLUMNS, row)) for row in rows[:limit]]
    found = origins(conn, chosen.project, stored)
    events = [{**describe(event_dict(event)), "origin": found[event["id"]]} for event in stored]
    return {
        "timeline": timeline_entries(events, checkpoint_rows(conn, chosen.project, events)),
        "older": {"before": events[-1]["id"]} if len(rows) > limit else None,
        "newer": None if before is None else newer_cursor(conn, where, params, before, limit),
    }


def newer_cursor(conn: sqlite3.Connection, where: str, params: dict[str, Any], before: int, limit: int) -> dict[str, Any] | None:
    "The cursor of the page above one that starts below ``before``: the ``limit`` matching events just newer."
    ids = [
        id
        for (id,) in conn.execute(
            f"SELECT id FROM events WHERE {where} AND id >= :before ORDER BY id LIMIT :limit",
            {**params, "before": before, "limit": limit + 1},
        )
    ]
    if not ids:
        return None
    return {"before": ids[limit - 1] + 1 if len(ids) > limit else None}


def checkpoint_rows(conn: sqlite3.Connection, project: str, events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    "The checkpoints anchored to the ``checkpoint`` events among ``events``, by event id."
    ids = [e["id"] for e in events if e["kind"] == "checkpoint"]
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT id, head_event_id FROM checkpoints WHERE project = ? AND head_event_id IN ({', '.join('?' for _ in ids)})",
        [project, *ids],
    )
    return {event_id: {"id": id} for id, event_id in rows}


def timeline_entries(events: list[dict[str, Any]], checkpoints: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """
    ``events`` (newest first) as timeline entries: runs of consecutive events by
    one actor in one session become a ``group``; each checkpoint is a ``checkpoint``
    milestone of its own, at its place.

    :param events: described events, newest first
    :param checkpoints: checkpoint rows by the id of their event
    """
    entries: list[dict[str, Any]] = []
    for event in events:
        last = entries[-1] if entries else None
        if event["kind"] == "checkpoint":
            entries.append(milestone(event, checkpoints.get(event["id"])))
        elif last and last["type"] == "group" and (last["actor"], last["session"]) == (event["actor"], event["session"]):
            last["events"].append(event)
            last["count"] += 1
            last["oldest"] = event["ts"]
        else:
            entries.append({"type": "group", "actor": event["actor"], "session": event["session"], "newest": event["ts"],
                            "oldest": event["ts"], "count": 1, "events": [event]})
    return entries


def origins(conn: sqlite3.Connection, project: str, events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """
    Where each of ``events`` (of ``project``, as stored) came from, by id: ``{type, machine,
    peer, sources}``. ``type`` is ``here`` (this machine's own event), ``sync`` (an echo: a
    sync wrote it to apply other machines' events; ``peer`` is the peer that sync was with,
    as its session says) or ``machine`` (an event carrying another machine's clock that no
    sync wrote: a file given a new machine id). ``sources`` are, for an echo, the events
    of other machines that made the same change (see :func:`echo_sources`).

    :param conn: an open connection
    :param project: the events' project
    :param events: events as stored (their digests among their columns)
    """
    own = file_machine(conn)
    ids = json.dumps([event["id"] for event in events])
    echoes = {row[0] for row in conn.execute("SELECT event_id FROM memory_sync_derived WHERE event_id IN (SELECT value FROM json_each(?))", [ids])}
    sources = echo_sources(conn, project, [event for event in events if event["id"] in echoes])
    found = {}
    for event in events:
        kind = "sync" if event["id"] in echoes else "here" if event["machine"] == own else "machine"
        found[event["id"]] = {"type": kind, "machine": event["machine"], "peer": sync_peer(event) if kind == "sync" else None,
                              "sources": sources.get(event["id"], [])}
    return found


def sync_peer(event: dict[str, Any]) -> str | None:
    "The peer whose sync wrote echo ``event``, as its session names it (``share`` when sharing applied it), or None."
    session = event["session"] or ""
    if event["actor"] == SYNC_ACTOR and session.startswith(SYNC_SESSION):
        return session[len(SYNC_SESSION):]
    return None


def echo_sources(conn: sqlite3.Connection, project: str, echoes: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """
    For each echo, the events held from other machines that made the same change (the
    same kind, target and digests of old and new value): ``{event id: [{machine, clock,
    ts, actor, received_from, received_at}]}``, by machine and clock. Of each kind only the
    newest :data:`SOURCES_SCANNED` arrivals are read (the project's index walked backwards):
    an echo usually follows its events' arrival, and a page must not read every event held.

    :param conn: an open connection
    :param project: the echoes' project
    :param echoes: events a sync wrote here
    """
    wanted: dict[tuple[Any, ...], list[int]] = {}
    for echo in echoes:
        wanted.setdefault((echo["kind"], echo["target"], echo["old_digest"], echo["new_digest"]), []).append(echo["id"])
    found: dict[int, list[dict[str, Any]]] = {}
    for kind in sorted({key[0] for key in wanted}):
        targets = json.dumps(sorted({key[1] for key in wanted if key[0] == kind}), ensure_ascii=False)
        rows = conn.execute(
            f"SELECT {', '.join(SOURCE_COLUMNS)} FROM memory_sync_events WHERE rowid IN (SELECT rowid FROM memory_sync_events "
            "WHERE project = ? AND kind = ? ORDER BY rowid DESC LIMIT ?) AND target IN (SELECT value FROM json_each(?)) ORDER BY machine, clock",
            [project, kind, SOURCES_SCANNED, targets],
        )
        for row in rows:
            source = dict(zip(SOURCE_COLUMNS, row))
            for event_id in wanted.get((kind, source.pop("target"), source.pop("old_digest"), source.pop("new_digest")), []):
                found.setdefault(event_id, []).append(source)
    return found


def origin_choices(conn: sqlite3.Connection) -> dict[str, Any]:
    """
    What the origin filter offers: ``{machine, peers}``, this file's machine id and the
    peers it has synced with, the most recent first (``sync:PEER`` picks a peer's).

    :param conn: an open connection
    """
    peers = [peer for (peer,) in conn.execute("SELECT peer FROM memory_sync_peers ORDER BY synced_at DESC, peer")]
    return {"machine": file_machine(conn), "peers": peers}


def milestone(event: dict[str, Any], checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    "A checkpoint as a timeline entry: the summary its event holds (the ledger's, whatever its row says now)."
    summary = (event["new"] or {}).get("summary")
    return {"type": "checkpoint", "actor": event["actor"], "session": event["session"], "ts": event["ts"],
            "checkpoint_id": checkpoint["id"] if checkpoint else None, "summary": summary, "event": event}


def describe(event: dict[str, Any]) -> dict[str, Any]:
    """
    ``event`` (as :func:`.ledger.event_dict` gives it) with what a person reads:
    ``about`` (parts naming what it was about), ``text`` (what was said),
    ``diff`` (a text change, see :func:`word_diff`) and ``changes`` (the fields of
    an object that changed, ``{field, old, new}`` as text).

    :param event: a decoded event
    """
    return {**event, "about": about(event), **change(event)}


def about(event: dict[str, Any]) -> list[dict[str, Any]]:
    "What ``event`` was about, as parts: ``{type: entity, name}``, ``{type: claim|fact, id}`` or ``{type: text, text}``."
    kind, target, new = event["kind"], event["target"], event["new"]
    if kind in RELATION_KINDS:
        return relation_parts(target)
    if kind in ("rename_entity", "merge_entity") and isinstance(new, dict):
        other, joint = (new.get("name"), " renamed to ") if kind == "rename_entity" else (new.get("into"), " merged into ")
        return [entity_part(target), text_part(joint), entity_part(str(other))]
    if kind in ENTITY_KINDS:
        return [entity_part(target)]
    item = ITEM_TARGET.fullmatch(target)
    if item:
        return [{"type": item[1], "id": int(item[2])}, *statement_parts(new)]
    return [] if target == event["project"] else [text_part(target)]


def statement_parts(value: Any) -> list[dict[str, Any]]:
    "What a claim or fact says, as a text part, when ``value`` (a proposal or a recording) holds it."
    if not (isinstance(value, dict) and all(isinstance(value.get(field), str) for field in STATEMENT)):
        return []
    return [text_part(": " + " · ".join(value[field] for field in STATEMENT))]


def relation_parts(target: str) -> list[dict[str, Any]]:
    "A relation target (``[from, relationType, to]``) as parts: the two entities and the relation's type."
    try:
        source, relation_type, destination = json.loads(target)
    except (ValueError, TypeError):
        return [text_part(target)]
    return [entity_part(str(source)), text_part(f" {relation_type} "), entity_part(str(destination))]


def entity_part(name: str) -> dict[str, Any]:
    return {"type": "entity", "name": name}


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def change(event: dict[str, Any]) -> dict[str, Any]:
    "What ``event`` changed, as ``{text, diff, changes}`` (each empty when it does not apply)."
    kind, old, new = event["kind"], event["old"], event["new"]
    found: dict[str, Any] = {"text": None, "diff": None, "changes": []}
    if kind == "checkpoint" and isinstance(new, dict):
        found["text"] = show(new.get("summary"))
    elif kind == "redact" and isinstance(new, dict):
        count = len(new.get("replacements") or {})
        found["text"] = f"redacted a text from {count} stored text{'s' if count != 1 else ''}: {show(new.get('reason'))}"
    elif kind in RELATION_KINDS:
        pass  # what ``about`` says is the whole of it
    elif kind in ("rename_entity", "merge_entity"):
        found["changes"] = curation_changes(kind, old, new)
    elif isinstance(old, str) and isinstance(new, str):
        found["diff"] = word_diff(old, new)
    elif kind in ENTITY_KINDS and isinstance(old, str):
        found["diff"] = [("delete", old)]
    elif kind in ENTITY_KINDS and isinstance(new, str):
        found["diff"] = [("insert", new)]
    elif isinstance(new, str) and old is None:
        found["text"] = new  # a note, decision or any kind an agent recorded
    else:
        found["changes"] = field_changes(old, new, skip=("name",) if kind in ENTITY_KINDS else BOOKKEEPING + STATEMENT)
    return found


def curation_changes(kind: str, old: Any, new: Any) -> list[dict[str, Any]]:
    "What a rename or a merge moved (``about`` names the entities): the observations of a merge, and the relations."
    if not isinstance(new, dict):
        return field_changes(old, new)
    moved = {"relations": relation_count(new.get("relations"))}
    if kind == "merge_entity":
        moved = {"observations moved": new.get("observations"), **moved}
    return field_changes(None, moved)


def field_changes(old: Any, new: Any, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """
    The fields that differ between objects ``old`` and ``new`` (either may be
    None: a creation or a deletion), as ``{field, old, new}`` text; a value that
    is not an object is one change with no field.

    :param skip: fields left out (what ``about`` already says)
    """
    before = old if isinstance(old, dict) else {}
    after = new if isinstance(new, dict) else {}
    if not (before or after):
        return [{"field": None, "old": show(old), "new": show(new)}] if old is not None or new is not None else []
    fields = list(before) + [k for k in after if k not in before]
    return [
        {"field": field, "old": show(before.get(field)), "new": show(after.get(field))}
        for field in fields
        if field not in skip and before.get(field) != after.get(field) and not (empty(before.get(field)) and empty(after.get(field)))
    ]


def empty(value: Any) -> bool:
    "A value that says nothing: missing, or an empty string or list."
    return value is None or value == "" or value == []


def relation_count(relations: Any) -> str | None:
    "How many relations followed a rename or merge, in words; None for none."
    count = len(relations) if isinstance(relations, list) else 0
    return f"{count} moved with it" if count else None


def show(value: Any) -> str | None:
    """
    A stored value as text: a string as it is, a list item after item (an item
    that is an object by its text: evidence), anything else as JSON.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "; ".join(str(show(item_text(item))) for item in value) if value else "none"
    return json.dumps(value, ensure_ascii=False)


def item_text(item: Any) -> Any:
    "An object in a list by what it says (evidence: its text, or the observation it quotes), else as it is."
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        return item["text"]
    if isinstance(item, dict) and isinstance(item.get("observation"), str):
        return f"{item.get('entityName')}: {item['observation']}"
    return item


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """
    The change from ``old`` to ``new`` word by word, as ``(op, text)`` pieces with
    op ``equal``, ``delete`` or ``insert``: the equal and deleted pieces spell
    ``old``, the equal and inserted ones ``new``. Words changed together (with
    only spaces between them) form one deletion and one insertion.

    :param old: the text before
    :param new: the text after
    """
    return joined_changes(token_diff(TOKEN.findall(old), TOKEN.findall(new)))


def token_diff(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    """
    The change from tokens ``old`` to tokens ``new``, each token kept whole (a
    word, or a name: :func:`word_diff` splits text so, and a relation is its two
    names and its type), as ``(op, text)`` pieces like :func:`word_diff`'s.

    :param old: the tokens before
    :param new: the tokens after
    """
    opcodes: list[tuple[str, int, int, int, int]] = [("replace", 0, len(old), 0, len(new))]
    if len(old) + len(new) <= MAX_DIFF_TOKENS:
        opcodes = list(difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes())
    pieces = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            pieces.append(("equal", "".join(old[i1:i2])))
        else:
            pieces += [("delete", "".join(old[i1:i2])), ("insert", "".join(new[j1:j2]))]
    return [(op, text) for op, text in pieces if text]


def joined_changes(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    "``pieces`` with each run of changes (spaces between changes included) as one deletion and one insertion."
    joined: list[tuple[str, str]] = []
    deleted = inserted = ""
    for index, (op, text) in enumerate(pieces):
        inside = 0 < index < len(pieces) - 1 and pieces[index - 1][0] != "equal" and pieces[index + 1][0] != "equal"
        if op == "equal" and not (text.isspace() and inside):
            joined += run(deleted, inserted) + [("equal", text)]
            deleted = inserted = ""
        else:
            deleted += text if op != "insert" else ""
            inserted += text if op != "delete" else ""
    return joined + run(deleted, inserted)


def run(deleted: str, inserted: str) -> list[tuple[str, str]]:
    return [(op, text) for op, text in (("delete", deleted), ("insert", inserted)) if text]


@dataclasses.dataclass(frozen=True)
class DayCounts:
    """
    Events counted per ``(day, kind, actor)`` under ``counted``, up to event
    ``through``. The ledger is append-only, so these never change: a later
    count adds only the events after ``through``.
    """

    counted: Filters
    through: int
    rows: tuple[tuple[str, str, str, int], ...]


def activity(
    conn: sqlite3.Connection, chosen: Filters, max_days: int = CHART_DAYS, known: DayCounts | None = None
) -> tuple[dict[str, Any], DayCounts | None]:
    """
    Events per day and kind over the filtered range, at most its last ``max_days`` days.

    The kind and actor filters narrow the counts, not the lists of the kinds and
    actors present (``kinds_present``, ``actors_present``), which a form offers.
    The text filter narrows the list of events only: counting by words would read
    every event's values on every look, where the counts are otherwise carried on.

    :param conn: an open connection
    :param chosen: which events
    :param max_days: the most days counted, ending with the range's last day
    :param known: the counts an earlier call returned for the same filters: only newer events are counted again
    :return: ``{first_day, last_day, limited, days: [{day, total, counts: {kind: n}}], kinds, total,
        kinds_present, actors_present}``: ``days`` only those with events, oldest first; ``kinds``
        by their total, largest first; ``limited`` when the range held more days than were counted.
        And the counts to pass as ``known`` next time (None when there are no days).
    """
    chosen = dataclasses.replace(chosen, text=None)
    span = day_span(conn, chosen, max_days)
    if span is None:
        return {"first_day": None, "last_day": None, "limited": False, "max_days": max_days, **day_counts([]),
                "kinds_present": [], "actors_present": []}, None
    first, last, limited = span
    counts = count_days(conn, counting(chosen, first), known)
    rows = [row for row in counts.rows if row[0] <= last.isoformat()]
    chosen_rows = [row for row in rows if chosen.kind in (None, row[1]) and chosen.actor in (None, row[2])]
    found = {"first_day": first.isoformat(), "last_day": last.isoformat(), "limited": limited, "max_days": max_days,
             **day_counts(chosen_rows), "kinds_present": sorted({row[1] for row in rows}), "actors_present": sorted({row[2] for row in rows})}
    return found, counts


def counting(chosen: Filters, first: datetime.date) -> Filters:
    """
    What to count for a chart starting on day ``first``: ``chosen`` without its kind
    and actor, from that day on. With no ``to``, the count has no end, so it
    stays the same count (and ``known`` stays good) as new days begin.
    """
    since = day_start(first)
    return dataclasses.replace(chosen, kind=None, actor=None, since=max(chosen.since or since, since))


def count_days(conn: sqlite3.Connection, counted: Filters, known: DayCounts | None) -> DayCounts:
    "Events per ``(day, kind, actor)`` under ``counted``: ``known``'s, and those appended since (all, without it)."
    through = conn.execute("SELECT max(id) FROM events WHERE project = ?", [counted.project]).fetchone()[0] or 0
    after = known.through if known is not None and known.counted == counted else 0
    where, params = counted.condition()
    rows = conn.execute(
        f"SELECT substr(ts, 1, 10) AS day, kind, actor, count(*) FROM events WHERE {where} AND id > :after AND id <= :through "
        "GROUP BY day, kind, actor",
        {**params, "after": after, "through": through},
    ).fetchall()
    merged = {row[:3]: row[3] for row in known.rows} if known is not None and after else {}
    for day, kind, actor, count in rows:
        merged[(day, kind, actor)] = merged.get((day, kind, actor), 0) + count
    return DayCounts(counted, through, tuple(sorted((*key, count) for key, count in merged.items())))


def day_span(conn: sqlite3.Connection, chosen: Filters, max_days: int) -> tuple[datetime.date, datetime.date, bool] | None:
    """
    The days to count: the filtered range cut to the project's first and newest
    events, then to its last ``max_days``; and whether that cut any off. None for no days.
    (The first and newest by id: one writer at a time stamps events, so times grow with ids.)
    """
    ends = [
        conn.execute(f"SELECT substr(ts, 1, 10) FROM events WHERE project = ? ORDER BY id {order} LIMIT 1", [chosen.project]).fetchone()
        for order in ("ASC", "DESC")
    ]
    if ends[0] is None:
        return None
    first, last = (datetime.date.fromisoformat(end[0]) for end in ends)
    if chosen.since:
        first = max(first, datetime.date.fromisoformat(chosen.since[:10]))
    if chosen.until:
        last = min(last, datetime.date.fromisoformat(chosen.until[:10]))
    if last < first:
        return None
    cut = max(first, last - datetime.timedelta(days=max_days - 1))
    return cut, last, cut > first


def day_counts(rows: list[tuple[str, str, str, int]]) -> dict[str, Any]:
    "``(day, kind, actor, count)`` rows as ``{days, kinds, total}``."
    days: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for day, kind, _, count in rows:  # one row per actor: summed
        counts = days.setdefault(day, {})
        counts[kind] = counts.get(kind, 0) + count
        totals[kind] = totals.get(kind, 0) + count
    return {
        "days": [{"day": day, "total": sum(counts.values()), "counts": dict(sorted(counts.items()))} for day, counts in sorted(days.items())],
        "kinds": sorted(totals, key=lambda kind: (-totals[kind], kind)),
        "total": sum(totals.values()),
    }
