"""A person redacts a stored text (a leaked secret, say) from every copy memory keeps.

:func:`redact` records a ``redact`` event (see :mod:`..core.redacted`) and
:func:`apply` replaces every string of the project that held the text: in the
observations, in the records of the governed tier (claims, facts, their
evidence, reviews and history, checkpoints) and in the old and new values of
every event, this machine's own and those other machines sent. The search
indexes follow: the word and trigram indexes through the observations'
triggers, the deleted-words index by hand (it keeps no text to follow), each
then optimized so no segment keeps the text's words. :func:`re_embed` embeds
the entities whose text changed again, and :func:`purge` rewrites the file
(``VACUUM``, the write-ahead log truncated) so no free page keeps it either. A
peer applies a redaction when it arrives (:mod:`..sync.events`), and every
event it receives later, redacted on the way in.

What a redaction does not reach is listed, not hidden: the text in the SQL
audit log (its chain hashes each row whole), in another project, and in older
copies of the file (snapshots), which the person may delete.
"""

import json
import pathlib
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

from ..core import redacted, replication_lock
from ..core.errors import InvalidInput
from ..core.ledger import Caller, append_event, canonical
from ..governed.statements import check_rationale, value_key
from ..sqltools.snapshots import list_snapshots, snapshot_folder
from ..vectors.index import refresh
from ..vectors.side_file import memory_file_path, side_file, side_file_path_for
from .file_check import DELETED_WORDS, DELETED_WORDS_KINDS
from .replay import GRAPH_KINDS

MIN_TEXT = 4  # shorter texts would match too much to be a secret
MAX_TEXT = 10_000
INDEXES = ("observations_fts", "observations_trigram", "memory_deleted_fts")
# The governed tier's records a redaction rewrites (migration m014 lets it): their text
# columns, and which rows are the project's. A statement's keys follow its texts.
PROJECT_ROWS = "project = :project"
OF_CLAIMS = "claim_id IN (SELECT id FROM claims WHERE project = :project)"
OF_FACTS = "fact_id IN (SELECT id FROM facts WHERE project = :project)"
RECORDS = {
    "claims": (("subject", "predicate", "object"), PROJECT_ROWS),
    "facts": (("subject", "predicate", "object", "rationale"), PROJECT_ROWS),
    "claim_evidence": (("content",), OF_CLAIMS),
    "claim_reviews": (("rationale",), OF_CLAIMS),
    "fact_history": (("rationale",), OF_FACTS),
    "checkpoints": (("summary",), PROJECT_ROWS),
}
KEYED = ("subject", "predicate", "object")
# Where a redaction does not reach: listed for the person
UNREACHED = {"sql_audit": ("arguments", "detail", "error")}


def checked_text(text: Any) -> str:
    "The text to redact, or :class:`InvalidInput` naming what is wrong with it."
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("text: give the text to redact (the secret as it is stored); nothing was changed")
    if len(text) < MIN_TEXT:
        raise InvalidInput(f"text: {len(text)} characters would match too much; give at least {MIN_TEXT} "
                           "(the whole secret as it is stored); nothing was changed")
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"text: at most {MAX_TEXT:,} characters; nothing was changed")
    return text


def checked_arguments(text: Any, reason: Any) -> tuple[str, str]:
    "A redaction's text and reason, or :class:`InvalidInput` naming what is wrong (the reason must not repeat the text)."
    reason = check_rationale(reason, "reason")
    text = checked_text(text)
    if text in reason:
        raise InvalidInput("reason: it holds the text being redacted; say why without it (nothing was changed)")
    return text, reason


def in_names(conn: sqlite3.Connection, project: str, text: str) -> list[str]:
    "The entity names, types and relation types of ``project`` (now or in its events' targets) holding ``text``."
    rows = conn.execute(
        "SELECT name FROM entities WHERE project = :p AND (instr(name, :t) OR instr(entity_type, :t)) "
        "UNION SELECT relation_type FROM relations WHERE project = :p AND instr(relation_type, :t) "
        "UNION SELECT target FROM events WHERE project = :p AND instr(target, :t) LIMIT 5",
        {"p": project, "t": text},
    ).fetchall()
    return [row[0] for row in rows]


def as_stored(text: str) -> str:
    "``text`` as it stands inside a stored JSON value (its escapes)."
    return json.dumps(text, ensure_ascii=False)[1:-1]


def event_values(conn: sqlite3.Connection, project: str, text: str) -> Iterator[Any]:
    "The decoded old and new values of ``project``'s events (own and whole foreign ones) whose JSON holds ``text`` anywhere."
    for table, whole in (("events", ""), ("memory_sync_events", " AND opaque = 0")):
        for old, new in conn.execute(
            f"SELECT old, new FROM {table} WHERE project = :p{whole} "
            "AND (instr(old, :t) OR instr(new, :t))", {"p": project, "t": as_stored(text)}
        ):
            yield from (json.loads(value) for value in (old, new) if value is not None)


def gather(conn: sqlite3.Connection, project: str, text: str, mark: str) -> dict[str, str]:
    "``{digest: replacement}`` for every string of ``project``'s graph, records and events that holds ``text``."
    found: dict[str, str] = {}

    def take(value: str) -> None:
        if text in value:
            found[redacted.text_digest(value)] = value.replace(text, mark)

    for value in event_values(conn, project, text):
        for item in redacted.strings(value):
            take(item)
    for (content,) in conn.execute(
        "SELECT o.content FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.project = ? AND instr(o.content, ?)",
        [project, text],
    ):
        take(content)
    for table, (columns, rows) in RECORDS.items():
        for column in columns:
            for (value,) in conn.execute(f"SELECT {column} FROM {table} WHERE {rows} AND instr({column}, :text)",
                                         {"project": project, "text": text}):
                take(value)
    return found


def refusal(conn: sqlite3.Connection, project: str, text: str, found: dict[str, str]) -> str | None:
    "Why ``text`` (checked by :func:`checked_text`) cannot be redacted from ``project``, given what :func:`gather` found; None if it can."
    names = in_names(conn, project, text)
    if names:
        return (f"the text is part of a name in project {project} ({', '.join(names)}): names key the ledger's "
                "events and cannot be redacted; rename the entity first, then redact the text from its observations")
    if not found and any(True for _ in event_values(conn, project, text)):
        return (f"the text stands in project {project}'s events only in their structure (a field name, or across "
                "two values), which cannot be redacted")
    if not found:
        return f"the text is stored nowhere in project {project}'s graph or its events"
    return None


def preview(conn: sqlite3.Connection, project: str, text: str) -> dict[str, Any]:
    """
    What redacting ``text`` from ``project`` would change, read only: ``{strings,
    observations, records, events, foreign_events, entities}``, or :class:`InvalidInput`
    saying why it cannot be done (as :func:`redact` would).
    """
    text = checked_text(text)
    found = gather(conn, project, text, "")
    problem = refusal(conn, project, text, found)
    if problem:
        raise InvalidInput(problem)
    counts = {}
    for key, table, whole in (("events", "events", ""), ("foreign_events", "memory_sync_events", " AND opaque = 0")):
        (counts[key],) = conn.execute(
            f"SELECT count(*) FROM {table} WHERE project = :p{whole} "
            "AND (instr(old, :t) OR instr(new, :t))", {"p": project, "t": as_stored(text)}).fetchone()
    counts["records"] = sum(
        conn.execute(f"SELECT count(*) FROM {table} WHERE {rows} AND ({' OR '.join(f'instr({c}, :text)' for c in columns)})",
                     {"project": project, "text": text}).fetchone()[0]
        for table, (columns, rows) in RECORDS.items()
    )
    holders = [name for (name,) in conn.execute(
        "SELECT e.name FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.project = ? AND instr(o.content, ?)",
        [project, text])]
    return {"strings": len(found), "observations": len(holders), **counts, "entities": sorted(set(holders))}


def redact(conn: sqlite3.Connection, caller: Caller, project: str, text: str, reason: str, target: str) -> dict[str, Any]:
    """
    Redact ``text`` from ``project``, inside the caller's write transaction: the
    ``redact`` event, then :func:`apply`. Call :func:`purge` after the commit.

    :param caller: the person (a reviewer's caller)
    :param text: the text to remove, as stored (checked by :func:`checked_text`)
    :param reason: why, recorded with the redaction
    :param target: what the person redacted from (an entity's name, or ``event N``)
    :raises InvalidInput: if the text is in a name, or nowhere in the project
    :return: ``{event, machine, clock, mark, strings, replaced, entities}``
    """
    text = checked_text(text)
    replacements = gather(conn, project, text, redacted.mark(text))
    problem = refusal(conn, project, text, replacements)
    if problem:
        raise InvalidInput(f"{problem}; nothing was changed")
    named = {"sha256": redacted.text_digest(text), "length": len(text)}
    event = append_event(conn, caller, project, redacted.KIND, target,
                         new={"reason": reason, "replacements": replacements, "text": named})
    return {"event": event["id"], "machine": event["machine"], "clock": event["clock"], "mark": redacted.mark(text),
            "strings": len(replacements), **apply(conn, project)}


def apply(conn: sqlite3.Connection, project: str) -> dict[str, Any]:
    """
    Bring every string of ``project`` to what the redactions this file holds make of it
    (:class:`~..core.redacted.Resolver`), inside the caller's write transaction:
    observations, the governed tier's records, every event's values (own and foreign)
    and the search indexes.

    :return: ``{replaced: {observations, records, events, foreign_events}, entities: [names whose text changed]}``
    """
    resolver = redacted.Resolver(redacted.held_redactions(conn).get(project, []))
    if not resolver:
        return {"replaced": {"observations": 0, "events": 0, "foreign_events": 0, "records": 0}, "entities": []}
    entities: set[str] = set()
    changed_observations = 0
    rows = conn.execute(
        "SELECT o.id, o.content, e.name FROM observations o JOIN entities e ON e.id = o.entity_id WHERE e.project = ?", [project]
    ).fetchall()
    for id, content, name in rows:
        replacement = resolver.follow(content)
        if replacement is not None:
            conn.execute("UPDATE observations SET content = ? WHERE id = ?", [replacement, id])
            entities.add(name)
            changed_observations += 1
    own = rewrite_values(conn, "events", "id", project, resolver, entities)
    foreign = rewrite_values(conn, "memory_sync_events", "rowid", project, resolver, entities)
    records = rewrite_records(conn, project, resolver)
    for index in INDEXES:
        conn.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")
    return {"replaced": {"observations": changed_observations, "events": own, "foreign_events": foreign, "records": records},
            "entities": sorted(entities)}


def rewrite_records(conn: sqlite3.Connection, project: str, resolver: redacted.Resolver) -> int:
    "Rewrite the texts of the governed tier's records of ``project`` that the map names (a statement's keys with them); return how many rows."
    count = 0
    for table, (columns, rows) in RECORDS.items():
        for id, *values in conn.execute(f"SELECT id, {', '.join(columns)} FROM {table} WHERE {rows}", {"project": project}).fetchall():
            followed = {column: resolver.follow(value) for column, value in zip(columns, values) if isinstance(value, str)}
            changes = {column: value for column, value in followed.items() if value is not None}
            if not changes:
                continue
            changes.update({f"{column}_key": value_key(changes[column]) for column in KEYED if column in changes})
            conn.execute(f"UPDATE {table} SET {', '.join(f'{c} = :{c}' for c in changes)} WHERE id = :id", {**changes, "id": id})
            count += 1
    return count


def rewrite_values(conn: sqlite3.Connection, table: str, key: str, project: str, resolver: redacted.Resolver,
                   entities: set[str]) -> int:
    "Rewrite the old and new values of ``table``'s events of ``project`` holding a named string; return how many."
    own = table == "events"
    count = 0
    rows = conn.execute(
        f"SELECT {key}, kind, target, old, new, {DELETED_WORDS if own else 'NULL'} FROM {table} "
        f"WHERE project = ? AND (old IS NOT NULL OR new IS NOT NULL)", [project]
    ).fetchall()
    for id, kind, target, old, new, words in rows:
        old_text = redacted.redacted_text(old, resolver, canonical, kind)
        new_text = redacted.redacted_text(new, resolver, canonical, kind)
        if old_text is None and new_text is None:
            continue
        conn.execute(f"UPDATE {table} SET old = ?, new = ? WHERE {key} = ?", [old_text or old, new_text or new, id])
        if kind in GRAPH_KINDS:
            entities.add(target)
        count += 1
        if own and kind in DELETED_WORDS_KINDS and old_text is not None:
            conn.execute("INSERT INTO memory_deleted_fts (memory_deleted_fts, rowid, text) VALUES ('delete', ?, ?)", [id, words])
            conn.execute(f"INSERT INTO memory_deleted_fts (rowid, text) SELECT id, {DELETED_WORDS} FROM events WHERE id = ?", [id])
    return count


def re_embed(conn: sqlite3.Connection, project: str, names: list[str]) -> int | None:
    """
    After a redaction's commit: the vector side file, if there is one, re-embeds the
    entities whose text changed and is rewritten so no free page keeps an old vector.

    :return: how many entities were embedded, or None without a side file
    """
    path = memory_file_path(conn)
    if path is None or not side_file_path_for(path).exists():
        return None
    embedded = refresh(conn, [(project, name) for name in names])
    with side_file(conn, create=False) as side:
        if side is not None:
            side.execute("VACUUM")
    return embedded


def purge(conn: sqlite3.Connection) -> dict[str, Any]:
    """
    After a redaction's commit: the file rewritten so no free page keeps the text
    (``VACUUM``), and the write-ahead log checkpointed and truncated. Under a running
    replication the log is left to Litestream, which must see every frame before it
    is checkpointed (a checkpoint of a ``VACUUM`` under it leaves its replica unable
    to restore): the rewritten pages reach the file when Litestream checkpoints.

    :return: ``{vacuumed, log_truncated, replicating}``
    """
    path = memory_file_path(conn)
    replicating = path is not None and replication_lock.replicating(path)
    if replicating:
        (every,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # not even the commit's own checkpoint
        try:
            conn.execute("VACUUM")
        finally:
            conn.execute(f"PRAGMA wal_autocheckpoint = {int(every)}")
        return {"vacuumed": True, "log_truncated": False, "replicating": True}
    conn.execute("VACUUM")
    truncated = False
    for _ in range(20):  # a reader holding an old snapshot keeps the log; wait for it a little
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if not busy:
            truncated = True
            break
        time.sleep(0.05)
    return {"vacuumed": True, "log_truncated": truncated, "replicating": False}


def remaining(conn: sqlite3.Connection, text: str) -> list[dict[str, Any]]:
    "Where ``text`` still stands after a redaction: ``[{table, column, rows}]`` (the SQL audit log, other projects)."
    found = []
    for table, columns in {**{t: c for t, (c, _) in RECORDS.items()}, **UNREACHED}.items():
        for column in columns:
            (count,) = conn.execute(f"SELECT count(*) FROM {table} WHERE instr({column}, ?)", [text]).fetchone()
            if count:
                found.append({"table": table, "column": column, "rows": count})
    for table in ("events", "memory_sync_events"):
        (count,) = conn.execute(
            f"SELECT count(*) FROM {table} WHERE instr(old, :t) OR instr(new, :t) OR instr(target, :t)", {"t": as_stored(text)}
        ).fetchone()
        if count:
            found.append({"table": table, "column": "old, new", "rows": count})
    (count,) = conn.execute("SELECT count(*) FROM observations WHERE instr(content, ?)", [text]).fetchone()
    if count:
        found.append({"table": "observations", "column": "content", "rows": count})
    return found


def older_copies(conn: sqlite3.Connection, snapshot_dir: pathlib.Path | None, text: str, delete: bool) -> list[dict[str, Any]]:
    """
    The copies of the file made before (its snapshots) that still hold ``text``, deleted if ``delete``.

    :param snapshot_dir: where the door puts snapshots (None: beside the file)
    :return: ``[{path, bytes, deleted}]``
    """
    memory_path = memory_file_path(conn)
    if memory_path is None:
        return []
    found = []
    needle = text.encode("utf-8")
    for path in list_snapshots(snapshot_folder(memory_path, snapshot_dir), memory_path.stem):
        try:
            holds = needle in path.read_bytes()
        except OSError:
            continue
        if holds:
            size = path.stat().st_size
            if delete:
                path.unlink()
            found.append({"path": str(path), "bytes": size, "deleted": delete})
    return found
