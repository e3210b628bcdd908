"""``verify``: prove a memory file's tables match its ledger, without changing anything.

The file is opened read-only and never created or migrated. A full check runs
SQLite's integrity check and each word index's own check, walks the ledger's
and the SQL audit log's hash chains, compares the ledger with its head witness
(:mod:`datasette_memory.core.witness`) and with the last clean check's record
(:mod:`datasette_memory.core.last_check`), replays the ledger and compares every
memory table with the replay, row by row. A clean full check is remembered
beside the file (``memory.db.verified.json``), unless the file no longer holds
what the check before it saw; ``since_checkpoint`` then checks only what
happened after the newest checkpoint it covered: the chains from there, the
checkpoints since, and the entities, claims and facts the new events touched,
replayed from their whole history. What either comparison finds wrong is
recorded in the witness, where it stands until a person acknowledges it.
"""

import functools
import json
import pathlib
import re
import sqlite3
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import last_check, redacted, witness
from ..core.database import unknown_migrations
from ..core.ledger import EVENT_COLUMNS, GENESIS_HASH, ChainStatus, event_problem, verify_chain
from ..core.log_heads import as_problem
from ..core.migrations import event_names_sql, migrations
from ..sqltools.audit_log import audit_chain_problems
from . import compare
from .compare import CHECKPOINT_COLUMNS, anomalies, checkpoint_differences, differences, live
from .replay import Replay, replay
from .origins import origin_chains, summary
from .touching import events_shaping, governed_touched_since, names_touched_since

# word index -> (the table it indexes, that table's rowid column, the indexed columns)
WORD_INDEXES = {
    "observations_fts": ("observations", "id", ("content",)),
    "observations_trigram": ("observations", "id", ("content",)),
    "entities_fts": ("entities", "id", ("name", "entity_type")),
    "entities_trigram": ("entities", "id", ("name", "entity_type")),
    "memory_aliases_fts": ("memory_aliases", "id", ("alias",)),
}
DELETED_WORDS_KINDS = ("delete_entity", "delete_observation", "update_observation")
MAX_LISTED = 1000


class CannotVerify(Exception):
    """The file cannot be checked at all (missing, not a memory file, another schema): exit 2."""


@dataclass
class Check:
    """One check's outcome; ``problems`` are differences or messages naming table and row."""

    name: str
    ok: bool = True
    detail: str = ""
    problems: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "detail": self.detail,
                "problems": self.problems[:MAX_LISTED], "problem_count": len(self.problems)}


def open_read_only(path: str | pathlib.Path) -> sqlite3.Connection:
    """
    Open the memory file at ``path`` read-only: no file or folder is created, nothing migrated.

    :raises CannotVerify: if it is missing, not SQLite, not a memory file, or of another schema version
    """
    path = pathlib.Path(path)
    conn = sqlite3.connect(read_only_uri(path), uri=True, isolation_level=None)
    try:
        conn.execute("PRAGMA temp_store = MEMORY")
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        conn.close()
        if "malformed" in str(e):
            raise CannotVerify(f"{path}: damaged beyond reading ({e}); restore it from a snapshot or a backup")
        raise CannotVerify(f"{path}: not a SQLite database ({e})")
    if "events" not in tables or migrations.migrations_table not in tables:
        conn.close()
        raise CannotVerify(f"{path}: not a datasette-memory file (it has no ledger)")
    newer = unknown_migrations(conn)
    if newer:
        conn.close()
        raise CannotVerify(f"{path}: written by a newer datasette-memory (unknown migrations: {', '.join(newer)}); "
                           "upgrade datasette-memory to verify it")
    applied = {row[0] for row in conn.execute(f"SELECT name FROM [{migrations.migrations_table}]")}
    missing = [m.name for m in migrations._migrations if m.name not in applied]
    if missing:
        conn.close()
        raise CannotVerify(f"{path}: written by an older datasette-memory (migrations not yet applied: {', '.join(missing)}); "
                           "open it once with this version (datasette-memory serve or mcp) to upgrade it, then verify")
    return conn


def read_only_uri(path: pathlib.Path) -> str:
    """
    The URI that opens the file at ``path`` read-only.

    A WAL file is read through its ``-shm`` index, which SQLite creates when
    missing; in a folder that cannot take it (read-only media, another user's
    folder) the file is opened immutable instead, which is exact only when no
    ``-wal`` holds changes the file lacks, so then it cannot be checked.

    :raises CannotVerify: if there is no such file, or it cannot be read
    """
    if not path.is_file():
        raise CannotVerify(f"{path}: no such file; give the path of an existing memory file (nothing was created)")
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"
    try:
        probe = sqlite3.connect(uri, uri=True)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return uri
        finally:
            probe.close()
    except sqlite3.DatabaseError as e:
        if "not a database" in str(e) or "malformed" in str(e):
            return uri  # open_read_only says what is wrong with it
        wal = pathlib.Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise CannotVerify(f"{path}: cannot be read ({e}): its write-ahead log ({wal.name}) needs a folder this user "
                               "can write to; verify it as its owner, or verify a copy of the file and its -wal")
        return uri + "&immutable=1"


def verify_file(path: str | pathlib.Path, since_checkpoint: bool = False) -> dict[str, Any]:
    """
    Check the memory file at ``path``; changes nothing in it.

    :param since_checkpoint: check only what happened after the newest checkpoint
        a clean full check covered (a full check if there was none)
    :return: ``{file, mode, ok, events, checks}``
    :raises CannotVerify: if the file cannot be checked at all
    """
    path = pathlib.Path(path)
    witness.flush()  # what this process wrote is witnessed before it is checked
    conn = open_read_only(path)
    try:
        record = last_check.anchor(conn, path) if since_checkpoint else None
        if record is not None:
            mode, checks = f"since checkpoint at event {record['anchor_event']}", incremental_checks(conn, path, record)
        else:
            mode, checks = "full", full_checks(conn, path)
        ok = all(check.ok for check in checks)
        head = conn.execute("SELECT id, hash FROM events ORDER BY id DESC LIMIT 1").fetchone() or (0, GENESIS_HASH)
        report = {"file": str(path), "mode": mode, "ok": ok, "events": head[0], "checks": [c.to_dict() for c in checks]}
        if since_checkpoint and record is None:
            report["note"] = "no clean full check was recorded for this file, so this was a full check"
        if ok:
            report["recorded"] = last_check.remember(conn, path, head)
        return report
    finally:
        conn.close()


def full_checks(conn: sqlite3.Connection, path: pathlib.Path) -> list[Check]:
    return [
        run("file integrity", lambda c: integrity(conn, c)),
        run("schema", lambda c: schema(conn, c)),
        run("word indexes", lambda c: word_indexes(path, conn, c)),
        run("ledger chain", lambda c: ledger_chain(conn, c)),
        run("head witness", lambda c: head_witness(conn, path, c)),
        run("last clean check", lambda c: last_clean_check(conn, path, c)),
        run("SQL audit chain", lambda c: audit_chain(conn, c)),
        run("replay", lambda c: full_replay(conn, c)),
        run("event index", lambda c: event_index(conn, c)),
        run("project sizes", lambda c: project_sizes(conn, c)),
        run("origins", lambda c: origins(conn, c)),
    ]


def incremental_checks(conn: sqlite3.Connection, path: pathlib.Path, record: dict[str, Any]) -> list[Check]:
    anchor = record["anchor_event"]
    return [
        run("schema", lambda c: schema(conn, c)),
        run("ledger chain", lambda c: ledger_chain_since(conn, anchor, record["anchor_hash"], c)),
        run("head witness", lambda c: head_witness(conn, path, c)),
        run("last clean check", lambda c: last_clean_check(conn, path, c)),
        run("SQL audit chain", lambda c: audit_chain_since(conn, record, c)),
        run("replay", lambda c: replay_since(conn, anchor, c)),
        run("event index", lambda c: event_index(conn, c, after=anchor)),
        run("project sizes", lambda c: project_sizes(conn, c)),
        run("origins", lambda c: origins(conn, c)),
    ]


def chain_checks(conn: sqlite3.Connection, problems_listed: int) -> dict[str, Any]:
    """
    ``verify``'s checks of the hash chains and of the records beside the file,
    without the replay: what the ``verify_chain`` tool reports. What is found
    wrong is recorded in the witness, as ``verify`` records it.

    :param conn: a connection to a memory file
    :param problems_listed: most problems listed per check (all are counted)
    :return: ``{ok, summary, checks, events, head_hash, broken_event_id, problem}``
    """
    path = pathlib.Path(witness.database_path(conn))
    chain = verify_chain(conn)
    checks = [
        run("ledger chain", lambda c: ledger_chain(conn, c, chain)),
        run("head witness", lambda c: head_witness(conn, path, c)),
        run("last clean check", lambda c: last_clean_check(conn, path, c)),
        run("SQL audit chain", lambda c: audit_chain(conn, c)),
    ]
    failed = [check for check in checks if not check.ok]
    summary = (f"{chain.summary()}; the head witness and the last clean check agree" if not failed else
               "; ".join(f"{check.name}: {describe_first(check)}" for check in failed) + "; run `datasette-memory verify` for the whole report")
    listed = [{**check.to_dict(), "problems": check.problems[:problems_listed]} for check in checks]
    return {"ok": not failed, "summary": summary, "checks": listed, **{k: v for k, v in chain.to_dict().items() if k not in ("ok", "summary")}}


def describe_first(check: Check) -> str:
    "A failed check's first problem in words."
    first = check.problems[0]
    return first["found"] if isinstance(first, dict) and isinstance(first.get("found"), str) else str(first)


def run(name: str, body: Callable[[Check], None]) -> Check:
    check = Check(name)
    try:
        body(check)
    except sqlite3.DatabaseError as e:
        # a damaged file can stop a check midway: that is a finding, never a crash or a pass
        check.problems.append(f"the check stopped: SQLite says {e}; the file is damaged")
    check.ok = check.ok and not check.problems
    if not check.ok:
        check.detail = f"{len(check.problems)} problem{'s' if len(check.problems) != 1 else ''} found"
    return check


def integrity(conn: sqlite3.Connection, check: Check) -> None:
    rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    if rows != ["ok"]:
        check.problems += [f"SQLite integrity check: {row}" for row in rows]
    check.detail = "SQLite's integrity check passed" if rows == ["ok"] else "SQLite's integrity check failed: the file is damaged"


def schema(conn: sqlite3.Connection, check: Check) -> None:
    """
    The memory tables, indexes and triggers as the migrations make them: a
    trigger dropped (the append-only ones, say) or changed, or one added to a
    memory table, is reported even before it is used.
    """
    expected = expected_schema()
    found = {(type, name): (table, sql) for type, name, table, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")}
    memory_tables = {table for table, _ in expected.values()}
    for (type, name), (table, sql) in expected.items():
        if found.get((type, name)) != (table, sql):
            check.problems.append({"table": "sqlite_master", "row": {"type": type, "name": name}, "expected": sql,
                                   "found": found[(type, name)][1] if (type, name) in found else None})
    for (type, name), (table, sql) in found.items():
        if type == "trigger" and (type, name) not in expected and table in memory_tables:
            check.problems.append({"table": "sqlite_master", "row": {"type": type, "name": name}, "expected": None, "found": sql})
    check.detail = f"the {len(expected)} tables, indexes and triggers of memory are as the migrations made them"


@functools.cache
def expected_schema() -> dict[tuple[str, str], tuple[str, str | None]]:
    "``{(type, name): (table, sql)}`` of a file the migrations just made."
    from sqlite_utils import Database  # only here: it imports numpy where numpy is installed

    fresh = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrations.apply(Database(fresh, execute_plugins=False))
        return {(type, name): (table, sql) for type, name, table, sql in fresh.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")}
    finally:
        fresh.close()


def word_indexes(path: pathlib.Path, conn: sqlite3.Connection, check: Check) -> None:
    """
    Each word index against the table it indexes, and the deleted-words index
    against the words the ledger's deletions removed. The indexes are copied
    into memory, as FTS5's checks need a writable handle.
    """
    copy = sqlite3.connect(":memory:", isolation_level=None)
    try:
        copy.execute("ATTACH DATABASE ? AS main_file", [read_only_uri(path)])
        for index, (table, rowid, columns) in WORD_INDEXES.items():
            check.problems += index_differences(copy, index, table, rowid, columns)
        check.problems += deleted_words_differences(copy)
    finally:
        copy.close()
    check.detail = f"{len(WORD_INDEXES)} word indexes match their tables; the deleted-words index matches the ledger"


def index_differences(copy: sqlite3.Connection, index: str, table: str, rowid: str, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """
    Copy ``index`` and the columns it indexes into memory and run FTS5's
    integrity check on the copy; if it fails, name the rows whose words differ
    from the words of the table's rows.
    """
    copy.execute(f"CREATE TABLE main.{table} ({rowid} INTEGER PRIMARY KEY, {', '.join(columns)})")
    copy.execute(f"INSERT INTO main.{table} SELECT {rowid}, {', '.join(columns)} FROM main_file.{table}")
    try:
        failure = copied_index_failure(copy, index)
        if failure is None:
            return []
        rows = words_differences(copy, index, f"INSERT INTO {EXPECTED_WORDS} ({EXPECTED_WORDS}) VALUES ('rebuild')")
        return rows or [{"table": index, "row": None, "expected": f"the words of {table}",
                         "found": f"the index does not match the table ({failure})"}]
    finally:
        copy.execute(f"DROP TABLE IF EXISTS main.{index}")
        copy.execute(f"DROP TABLE main.{table}")


def deleted_words_differences(copy: sqlite3.Connection) -> list[dict[str, Any]]:
    """
    The deleted-words index (contentless, rowid = the deletion's event id)
    against the words each deletion in the ledger removed.
    """
    index = "memory_deleted_fts"
    try:
        failure = copied_index_failure(copy, index)
        problems = words_differences(copy, index, f"INSERT INTO {EXPECTED_WORDS} (rowid, text) {DELETED_WORDS_SQL}")
        named = {p["row"] for p in problems}
        expected = {row[0] for row in copy.execute(DELETED_WORDS_SQL)}
        found = {row[0] for row in copy.execute(f"SELECT id FROM main.{index}_docsize")}
        problems += [{"table": index, "row": rowid, "expected": None, "found": "words of no deletion"}
                     for rowid in sorted(found - expected - named)]
        problems += [{"table": index, "row": rowid, "expected": f"the words event {rowid} deleted", "found": None}
                     for rowid in sorted(expected - found - named)]
        if failure and not problems:
            problems.append({"table": index, "row": None, "expected": "an intact index", "found": failure})
        return problems
    finally:
        copy.execute(f"DROP TABLE IF EXISTS main.{index}")


# The words each deletion removed, as the triggers of migrations m007 and m008 index them
# (an event row's columns; a redaction rewrites the index with it too, history/redaction.py)
DELETED_WORDS = """CASE WHEN kind IN ('delete_observation', 'update_observation') THEN json_extract(old, '$')
        ELSE coalesce(json_extract(old, '$.name'), '') || ' ' || coalesce(json_extract(old, '$.entityType'), '') || ' '
            || coalesce((SELECT group_concat(value, ' ') FROM json_each(old, '$.observations')), '') END"""
DELETED_WORDS_SQL = f"""
    SELECT id, {DELETED_WORDS}
    FROM main_file.events WHERE kind IN ({', '.join(repr(kind) for kind in DELETED_WORDS_KINDS)}) AND old IS NOT NULL
    ORDER BY id
"""
EXPECTED_WORDS = "expected_words"


def copied_index_failure(copy: sqlite3.Connection, index: str) -> str | None:
    "Copy ``index`` (its definition and shadow tables) into memory; run FTS5's integrity check on it; why it failed, or None."
    definition = copy.execute("SELECT sql FROM main_file.sqlite_master WHERE name = ?", [index]).fetchone()[0]
    copy.execute(definition)
    try:
        for shadow in ("data", "idx", "docsize", "config"):
            copy.execute(f"DELETE FROM main.{index}_{shadow}")
            copy.execute(f"INSERT INTO main.{index}_{shadow} SELECT * FROM main_file.{index}_{shadow}")
        copy.execute(f"INSERT INTO main.{index} ({index}, rank) VALUES ('integrity-check', 1)")
        return None
    except sqlite3.DatabaseError as e:
        return str(e)


def words_differences(copy: sqlite3.Connection, index: str, fill: str) -> list[dict[str, Any]]:
    """
    The rows whose words in the copied ``index`` differ from the words an index
    like it holds when built by ``fill`` (an INSERT into ``expected_words``).
    Empty if the copied index cannot be read word by word (damaged).
    """
    definition = copy.execute("SELECT sql FROM main_file.sqlite_master WHERE name = ?", [index]).fetchone()[0]
    copy.execute(re.sub(r"^\s*CREATE\s+VIRTUAL\s+TABLE\s+\S+", f"CREATE VIRTUAL TABLE main.{EXPECTED_WORDS}", definition, count=1, flags=re.I))
    try:
        copy.execute(fill)
        copy.execute(f"CREATE VIRTUAL TABLE main.found_terms USING fts5vocab({index}, instance)")
        copy.execute(f"CREATE VIRTUAL TABLE main.expected_terms USING fts5vocab({EXPECTED_WORDS}, instance)")
        rows = [row[0] for row in copy.execute(DIFFERING_ROWS)]
        found, expected = (terms(copy, side, rows) for side in ("found_terms", "expected_terms"))
        return [{"table": index, "row": row, "expected": expected.get(row), "found": found.get(row)} for row in rows]
    except sqlite3.DatabaseError:
        return []
    finally:
        for table in ("found_terms", "expected_terms", EXPECTED_WORDS):
            copy.execute(f"DROP TABLE IF EXISTS main.{table}")


DIFFERING_ROWS = f"""
    SELECT doc FROM (SELECT doc, col, offset, term FROM found_terms EXCEPT SELECT doc, col, offset, term FROM expected_terms)
    UNION
    SELECT doc FROM (SELECT doc, col, offset, term FROM expected_terms EXCEPT SELECT doc, col, offset, term FROM found_terms)
    ORDER BY doc LIMIT {MAX_LISTED}
"""


def terms(copy: sqlite3.Connection, vocabulary: str, rows: list[int]) -> dict[int, dict[str, str]]:
    "``{row: {column: its indexed terms in order}}`` for ``rows``, from an fts5vocab instance table."
    found: dict[int, dict[str, list[str]]] = {}
    for row, column, term in copy.execute(
        f"SELECT doc, col, term FROM {vocabulary} WHERE doc IN (SELECT value FROM json_each(?)) ORDER BY doc, col, offset",
        [json.dumps(rows)],
    ):
        found.setdefault(row, {}).setdefault(column, []).append(term)
    return {row: {column: " ".join(words) for column, words in columns.items()} for row, columns in found.items()}


def ledger_chain(conn: sqlite3.Connection, check: Check, status: ChainStatus | None = None) -> None:
    status = status or verify_chain(conn)
    check.detail = status.summary()
    if not status.ok:
        check.problems.append({"table": "events", "row": status.broken_event_id, "expected": "the next event of the chain",
                               "found": status.problem})
    count, top = conn.execute("SELECT count(*), coalesce(max(id), 0) FROM events").fetchone()
    if count != top:
        check.problems.append({"table": "events", "row": None, "expected": f"events 1 to {top}", "found": f"{count} events"})


def ledger_chain_since(conn: sqlite3.Connection, anchor: int, anchor_hash: str, check: Check) -> None:
    row = conn.execute("SELECT hash FROM events WHERE id = ?", [anchor]).fetchone() if anchor else (GENESIS_HASH,)
    if row is None or row[0] != anchor_hash:
        check.problems.append({"table": "events", "row": anchor, "expected": f"the checkpoint event verified before (hash {anchor_hash[:12]})",
                               "found": "no such event" if row is None else f"hash {row[0][:12]}"})
        return
    prev_hash, expected_id, count = anchor_hash, anchor + 1, 0
    allowed = redacted.accepted(conn)
    for values in conn.execute(f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE id > ? ORDER BY id", [anchor]):
        event = dict(zip(EVENT_COLUMNS, values))
        problem = event_problem(event, prev_hash, allowed) or (None if event["id"] == expected_id else f"event {expected_id} is missing")
        if problem:
            check.problems.append({"table": "events", "row": event["id"], "expected": "the next event of the chain", "found": problem})
            return
        prev_hash, expected_id, count = event["hash"], expected_id + 1, count + 1
    check.detail = f"ledger intact from event {anchor}: {count} events since, head {prev_hash[:12]}"


def head_witness(conn: sqlite3.Connection, path: pathlib.Path, check: Check) -> None:
    found = witness.check(conn, path, noticed_by="verify")
    check.detail = f"{found['status']}: {found['detail']}"
    check.problems += found["problems"]


def last_clean_check(conn: sqlite3.Connection, path: pathlib.Path, check: Check) -> None:
    """
    The heads the last clean check saw must still be in the file: a rewind or a
    rewrite since is found even with the witness gone, and recorded in the witness.
    """
    outcomes = last_check.compare(conn, path)
    broken = [outcome for outcome in outcomes if outcome["status"] != "agrees"]
    if broken:
        witness.record(path, conn, broken, "verify")
    check.problems += [as_problem(outcome, last_check.SEEN_BY) for outcome in broken]
    if not outcomes:
        check.detail = f"no clean check recorded before ({last_check.record_path(path).name})"
    elif not broken:
        check.detail = "; ".join(outcome["detail"] for outcome in outcomes)


def audit_chain(conn: sqlite3.Connection, check: Check) -> None:
    check.problems += audit_chain_problems(conn)
    check.detail = f"SQL audit log intact: {conn.execute('SELECT count(*) FROM sql_audit').fetchone()[0]} rows"


def audit_chain_since(conn: sqlite3.Connection, record: dict[str, Any], check: Check) -> None:
    check.problems += audit_chain_problems(conn, after=(record.get("audit_row") or 0, record.get("audit_hash") or GENESIS_HASH))
    check.detail = f"SQL audit log intact after row {record.get('audit_row') or 0}"


def full_replay(conn: sqlite3.Connection, check: Check) -> None:
    expected, problems = compare.check(conn)
    check.problems += problems
    check.detail = (f"replayed {expected.last_event} events into {len(expected.projects)} projects; "
                    "every memory table matches the ledger")


def replay_since(conn: sqlite3.Connection, anchor: int, check: Check) -> None:
    names_by_project = names_touched_since(conn, anchor)
    entities = 0
    for project, names in sorted(names_by_project.items()):
        event_ids, followed = events_shaping(conn, project, names)
        expected = replay(conn, project, event_ids=event_ids)
        restrict(expected.project(project), followed)
        found, ids = live(conn, [project], followed)
        check.problems += anomalies(expected.anomalies) + differences(expected, found, ids, governed=False)
        entities += len(followed)
    targets = governed_touched_since(conn, anchor)
    for project, touched in sorted(targets.items()):
        expected = replay(conn, project, event_ids=[row[0] for row in conn.execute(
            "SELECT event_id FROM memory_event_names WHERE project = ? AND name IN (SELECT value FROM json_each(?))",
            [project, json.dumps(sorted(touched))],
        )])
        found, ids = live(conn, [project], names=[], governed=True)
        restrict_governed(expected.project(project), found.project(project), touched)
        check.problems += anomalies(expected.anomalies) + differences(expected, found, ids, governed=True)
    checkpoint_rows(conn, anchor, check)
    check.detail = (f"replayed the history of {entities} entities and {sum(map(len, targets.values()))} claims and facts "
                    f"changed after event {anchor}; they match the ledger")


def restrict(project: Any, names: set[str]) -> None:
    "Keep only what concerns ``names``: the state :func:`live` reads for them."
    project.entities = {n: e for n, e in project.entities.items() if n in names}
    project.relations = {k: v for k, v in project.relations.items() if k[0] in names or k[1] in names}
    project.aliases = {a: t for a, t in project.aliases.items() if t[0] in names}


def restrict_governed(expected: Any, found: Any, targets: set[str]) -> None:
    "Compare only the claims and facts in ``targets`` (``claim:N``, ``fact:N``), and no graph or checkpoints."
    for state in (expected, found):
        state.entities, state.relations, state.aliases, state.checkpoints = {}, {}, {}, []
        for kind, tables in (("claim", ("claims", "evidence", "reviews")), ("fact", ("facts", "fact_history"))):
            for table in tables:
                rows = getattr(state, table)
                setattr(state, table, {id: v for id, v in rows.items() if f"{kind}:{id}" in targets})


def checkpoint_rows(conn: sqlite3.Connection, anchor: int, check: Check) -> None:
    "The checkpoints since ``anchor`` (and the anchor's own) against their events, compared as the full check compares them."
    events = [row[0] for row in conn.execute("SELECT id FROM events WHERE kind = 'checkpoint' AND id >= ?", [anchor])]
    expected, found = replay(conn, event_ids=events), Replay()
    for id, *values in conn.execute(
        f"SELECT id, {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints WHERE head_event_id >= ? ORDER BY id", [anchor]
    ):
        checkpoint = dict(zip(CHECKPOINT_COLUMNS, values), id=id)
        found.project(checkpoint["project"]).checkpoints.append(checkpoint)
    for project in sorted(set(expected.projects) | set(found.projects)):
        check.problems += checkpoint_differences(expected.project(project), found.project(project))


def event_index(conn: sqlite3.Connection, check: Check, after: int = 0) -> None:
    "``memory_event_names`` holds exactly the names the events touch."
    expected = f"SELECT * FROM ({event_names_sql('e', f'FROM (SELECT * FROM events WHERE id > {int(after)}) e')})"
    found = f"SELECT project, name, event_id FROM memory_event_names WHERE event_id > {int(after)}"
    for side, query in (("missing", f"{expected} EXCEPT {found}"), ("extra", f"{found} EXCEPT {expected}")):
        for project, name, event_id in conn.execute(f"{query} LIMIT {MAX_LISTED}"):
            check.problems.append({
                "table": "memory_event_names", "row": {"project": project, "name": name, "event_id": event_id},
                "expected": None if side == "extra" else "present", "found": None if side == "missing" else "present",
            })
    check.detail = "the index of events by entity matches the ledger"


def project_sizes(conn: sqlite3.Connection, check: Check) -> None:
    "``memory_project_sizes``, which search weighs words by, holds each project's count of entities."
    counted = dict(conn.execute("SELECT project, count(*) FROM entities GROUP BY project"))
    kept = dict(conn.execute("SELECT project, entities FROM memory_project_sizes"))
    for project in sorted(set(counted) | set(kept)):
        if counted.get(project, 0) != kept.get(project, 0):
            check.problems.append({
                "table": "memory_project_sizes", "row": {"project": project},
                "expected": counted.get(project, 0), "found": kept.get(project),
            })
    check.detail = "each project's size matches its entities"


def origins(conn: sqlite3.Connection, check: Check) -> None:
    "Each origin's chain as this file holds it (its own: the ledger; others': the events sync brought), one per line."
    chains = origin_chains(conn)
    check.detail = "; ".join(summary(chain) for chain in chains)
    check.problems += [summary(chain) for chain in chains if not chain["ok"]]
