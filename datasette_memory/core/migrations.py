"""The memory file's schema, as ordered sqlite-utils migrations.

Never edit an applied migration: add ``m00N_...`` below it instead.

sqlite-utils is imported only when a migration has to run (or a check needs its
registry): it imports numpy where numpy is installed, which would cost every
short command (a hook runs on every prompt) a tenth of a second for nothing.
"""

from __future__ import annotations

import functools
import sqlite3
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .ledger import GENESIS_HASH, chained_hash

if TYPE_CHECKING:
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations

MIGRATION_SET = "datasette_memory"


class MigrationSet:
    """
    sqlite-utils' ``Migrations``, made when first used: registering a migration and
    naming them (:meth:`names`) need no sqlite-utils.

    :param name: the migration set's name
    """

    migrations_table = "_sqlite_migrations"

    def __init__(self, name: str):
        self.name = name
        self.functions: list[Callable[[Database], None]] = []

    def __call__(self) -> Callable[[Callable[[Database], None]], Callable[[Database], None]]:
        "Register the decorated function as the next migration, as ``@Migrations()`` does."

        def register(function: Callable[[Database], None]) -> Callable[[Database], None]:
            self.functions.append(function)
            return function

        return register

    def names(self) -> list[str]:
        "The migrations' names, in order."
        return [function.__name__ for function in self.functions]

    @functools.cached_property
    def built(self) -> Migrations:
        "sqlite-utils' ``Migrations`` holding them."
        from sqlite_utils.migrations import Migrations

        built = Migrations(self.name)
        for function in self.functions:
            built()(function)
        return built

    @property
    def _migrations(self) -> Any:
        return self.built._migrations

    def pending(self, db: Database) -> Any:
        return self.built.pending(db)

    def apply(self, db: Database, **kwargs: Any) -> None:
        self.built.apply(db, **kwargs)


migrations = MigrationSet(MIGRATION_SET)


def run_script(db: Database, script: str) -> None:
    """
    Run each statement of ``script`` inside the caller's transaction.

    ``executescript`` would commit the transaction that keeps two processes
    from migrating one file at once, so statements go one at a time.
    """
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    assert not statement.strip(), f"incomplete statement: {statement}"


@migrations()
def m001_initial(db: Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE memory_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            entity_type TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (project, name)
        );
        CREATE TABLE observations (
            id INTEGER PRIMARY KEY,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            content TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (entity_id, content)
        );
        CREATE TABLE relations (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            from_entity TEXT NOT NULL,
            to_entity TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            created_at TEXT NOT NULL,
            UNIQUE (project, from_entity, to_entity, relation_type)
        );
        CREATE INDEX relations_to ON relations (project, to_entity);
        """
    )
    db.table("memory_meta").insert({"key": "machine_id", "value": uuid.uuid4().hex})


@migrations()
def m002_ledger(db: Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            machine TEXT NOT NULL,
            clock INTEGER NOT NULL,
            ts TEXT NOT NULL,
            actor TEXT NOT NULL,
            session TEXT,
            project TEXT NOT NULL,
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            old TEXT,
            new TEXT,
            old_digest TEXT,
            new_digest TEXT,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL UNIQUE,
            UNIQUE (machine, clock)
        );
        CREATE TRIGGER events_refuse_update BEFORE UPDATE ON events
        BEGIN
            SELECT RAISE(ABORT, 'the ledger is append-only: events cannot be updated');
        END;
        CREATE TRIGGER events_refuse_delete BEFORE DELETE ON events
        BEGIN
            SELECT RAISE(ABORT, 'the ledger is append-only: events cannot be deleted');
        END;
        CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            ts TEXT NOT NULL,
            actor TEXT NOT NULL,
            session TEXT,
            summary TEXT NOT NULL,
            head_event_id INTEGER REFERENCES events(id),
            head_hash TEXT NOT NULL
        );
        CREATE TRIGGER checkpoints_refuse_update BEFORE UPDATE ON checkpoints
        BEGIN
            SELECT RAISE(ABORT, 'checkpoints are append-only: they cannot be updated');
        END;
        CREATE TRIGGER checkpoints_refuse_delete BEFORE DELETE ON checkpoints
        BEGIN
            SELECT RAISE(ABORT, 'checkpoints are append-only: they cannot be deleted');
        END;
        """
    )


@migrations()
def m003_sql_audit(db: Database) -> None:
    # One row per SQL tool call, refused ones included; append-only like the
    # ledger. sql_views holds the descriptions of views saved by create_view.
    run_script(
        db,
        """
        CREATE TABLE sql_audit (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            actor TEXT NOT NULL,
            session TEXT,
            project TEXT,
            tool TEXT NOT NULL,
            arguments TEXT NOT NULL,
            reason TEXT,
            ok INTEGER NOT NULL,
            error TEXT,
            outcome TEXT,
            rows_changed INTEGER,
            snapshot TEXT,
            detail TEXT,
            duration_ms REAL NOT NULL
        );
        CREATE TRIGGER sql_audit_refuse_update BEFORE UPDATE ON sql_audit
        BEGIN
            SELECT RAISE(ABORT, 'the SQL audit log is append-only: rows cannot be updated');
        END;
        CREATE TRIGGER sql_audit_refuse_delete BEFORE DELETE ON sql_audit
        BEGIN
            SELECT RAISE(ABORT, 'the SQL audit log is append-only: rows cannot be deleted');
        END;
        CREATE VIEW query_errors AS
            SELECT id, ts, actor, session, project, tool, error, arguments
            FROM sql_audit WHERE ok = 0 ORDER BY id DESC;
        CREATE TABLE sql_views (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL,
            select_sql TEXT NOT NULL,
            created_at TEXT NOT NULL,
            actor TEXT NOT NULL
        );
        """
    )


@migrations()
def m004_governed_tier(db: Database) -> None:
    # Claims are agents' proposals; facts are made only by a person. Neither is
    # ever deleted, and what they say never changes: the triggers refuse it.
    # fact_history records each change to a fact's validity at its record time,
    # which is what as-of reads on the record axis consult.
    run_script(
        db,
        """
        CREATE TABLE claims (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            subject TEXT NOT NULL,
            predicate TEXT NOT NULL,
            object TEXT NOT NULL,
            subject_key TEXT NOT NULL,
            predicate_key TEXT NOT NULL,
            object_key TEXT NOT NULL,
            valid_from TEXT,
            confidence REAL CHECK (confidence IS NULL OR confidence BETWEEN 0 AND 1),
            status TEXT NOT NULL DEFAULT 'candidate' CHECK (status IN ('candidate', 'approved', 'rejected')),
            proposed_by TEXT NOT NULL,
            proposed_at TEXT NOT NULL,
            fact_id INTEGER REFERENCES facts(id)
        );
        CREATE INDEX claims_by_value ON claims (project, subject_key, predicate_key, object_key);
        CREATE UNIQUE INDEX claims_one_pending_per_value ON claims (project, subject_key, predicate_key, object_key)
            WHERE status = 'candidate';
        CREATE TRIGGER claims_refuse_delete BEFORE DELETE ON claims
        BEGIN
            SELECT RAISE(ABORT, 'claims are never deleted: a person rejects one instead');
        END;
        CREATE TRIGGER claims_keep_their_statement
        BEFORE UPDATE OF id, project, subject, predicate, object, subject_key, predicate_key, object_key,
            valid_from, confidence, proposed_by, proposed_at ON claims
        BEGIN
            SELECT RAISE(ABORT, 'what a claim says never changes: propose a new claim instead');
        END;
        CREATE TRIGGER claims_status_moves_by_review BEFORE UPDATE OF status ON claims
        WHEN NOT ((OLD.status = 'candidate' AND NEW.status IN ('approved', 'rejected'))
            OR (OLD.status = 'rejected' AND NEW.status = 'candidate'))
        BEGIN
            SELECT RAISE(ABORT, 'a claim moves only from candidate to approved or rejected, or from rejected back to candidate');
        END;
        CREATE TRIGGER claims_fact_is_set_once BEFORE UPDATE OF fact_id ON claims
        WHEN OLD.fact_id IS NOT NULL
        BEGIN
            SELECT RAISE(ABORT, 'an approved claim keeps the fact it became');
        END;
        CREATE TABLE claim_evidence (
            id INTEGER PRIMARY KEY,
            claim_id INTEGER NOT NULL REFERENCES claims(id),
            kind TEXT NOT NULL CHECK (kind IN ('text', 'observation')),
            entity TEXT NOT NULL DEFAULT '',
            content TEXT NOT NULL,
            added_by TEXT NOT NULL,
            added_at TEXT NOT NULL,
            UNIQUE (claim_id, kind, entity, content)
        );
        CREATE TRIGGER claim_evidence_refuse_update BEFORE UPDATE ON claim_evidence
        BEGIN
            SELECT RAISE(ABORT, 'evidence is append-only: it cannot be updated');
        END;
        CREATE TRIGGER claim_evidence_refuse_delete BEFORE DELETE ON claim_evidence
        BEGIN
            SELECT RAISE(ABORT, 'evidence is append-only: it cannot be deleted');
        END;
        CREATE TABLE claim_reviews (
            id INTEGER PRIMARY KEY,
            claim_id INTEGER NOT NULL REFERENCES claims(id),
            act TEXT NOT NULL CHECK (act IN ('approve', 'reject', 'reopen')),
            reviewer TEXT NOT NULL,
            reviewed_at TEXT NOT NULL,
            rationale TEXT NOT NULL,
            fact_id INTEGER REFERENCES facts(id)
        );
        CREATE INDEX claim_reviews_by_claim ON claim_reviews (claim_id, id);
        CREATE TRIGGER claim_reviews_refuse_update BEFORE UPDATE ON claim_reviews
        BEGIN
            SELECT RAISE(ABORT, 'reviews are append-only: they cannot be updated');
        END;
        CREATE TRIGGER claim_reviews_refuse_delete BEFORE DELETE ON claim_reviews
        BEGIN
            SELECT RAISE(ABORT, 'reviews are append-only: they cannot be deleted');
        END;
        CREATE TABLE facts (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            subject TEXT NOT NULL,
            predicate TEXT NOT NULL,
            object TEXT NOT NULL,
            subject_key TEXT NOT NULL,
            predicate_key TEXT NOT NULL,
            object_key TEXT NOT NULL,
            valid_from TEXT NOT NULL,
            valid_to TEXT CHECK (valid_to IS NULL OR valid_to >= valid_from),
            recorded_at TEXT NOT NULL,
            retracted_at TEXT,
            recorded_by TEXT NOT NULL,
            rationale TEXT NOT NULL,
            claim_id INTEGER REFERENCES claims(id),
            supersedes INTEGER REFERENCES facts(id),
            superseded_by INTEGER REFERENCES facts(id)
        );
        CREATE INDEX facts_by_statement ON facts (project, subject_key, predicate_key);
        CREATE TRIGGER facts_refuse_delete BEFORE DELETE ON facts
        BEGIN
            SELECT RAISE(ABORT, 'facts are never deleted: a person invalidates or supersedes one instead');
        END;
        CREATE TRIGGER facts_keep_what_they_say
        BEFORE UPDATE OF id, project, subject, predicate, object, subject_key, predicate_key, object_key,
            valid_from, recorded_at, recorded_by, rationale, claim_id, supersedes ON facts
        BEGIN
            SELECT RAISE(ABORT, 'what a fact says and when it was recorded never change: supersede it instead');
        END;
        CREATE TABLE fact_history (
            id INTEGER PRIMARY KEY,
            fact_id INTEGER NOT NULL REFERENCES facts(id),
            act TEXT NOT NULL CHECK (act IN ('record', 'supersede', 'invalidate', 'revalidate')),
            valid_to TEXT,
            superseded_by INTEGER REFERENCES facts(id),
            recorded_at TEXT NOT NULL,
            actor TEXT NOT NULL,
            rationale TEXT NOT NULL
        );
        CREATE INDEX fact_history_by_fact ON fact_history (fact_id, recorded_at);
        CREATE TRIGGER fact_history_refuse_update BEFORE UPDATE ON fact_history
        BEGIN
            SELECT RAISE(ABORT, 'fact history is append-only: it cannot be updated');
        END;
        CREATE TRIGGER fact_history_refuse_delete BEFORE DELETE ON fact_history
        BEGIN
            SELECT RAISE(ABORT, 'fact history is append-only: it cannot be deleted');
        END;
        """
    )


@migrations()
def m005_substring_index(db: Database) -> None:
    # Trigram indexes make the official server's substring search fast at any
    # size; triggers keep them in step with the tables they index.
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE observations_trigram USING fts5(
            content, content='observations', content_rowid='id', tokenize='trigram'
        );
        CREATE VIRTUAL TABLE entities_trigram USING fts5(
            name, entity_type, content='entities', content_rowid='id', tokenize='trigram'
        );
        CREATE TRIGGER observations_trigram_insert AFTER INSERT ON observations BEGIN
            INSERT INTO observations_trigram (rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER observations_trigram_delete AFTER DELETE ON observations BEGIN
            INSERT INTO observations_trigram (observations_trigram, rowid, content)
            VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER entities_trigram_insert AFTER INSERT ON entities BEGIN
            INSERT INTO entities_trigram (rowid, name, entity_type) VALUES (new.id, new.name, new.entity_type);
        END;
        CREATE TRIGGER entities_trigram_delete AFTER DELETE ON entities BEGIN
            INSERT INTO entities_trigram (entities_trigram, rowid, name, entity_type)
            VALUES ('delete', old.id, old.name, old.entity_type);
        END;
        CREATE TRIGGER observations_trigram_update AFTER UPDATE ON observations BEGIN
            INSERT INTO observations_trigram (observations_trigram, rowid, content)
            VALUES ('delete', old.id, old.content);
            INSERT INTO observations_trigram (rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER entities_trigram_update AFTER UPDATE ON entities BEGIN
            INSERT INTO entities_trigram (entities_trigram, rowid, name, entity_type)
            VALUES ('delete', old.id, old.name, old.entity_type);
            INSERT INTO entities_trigram (rowid, name, entity_type) VALUES (new.id, new.name, new.entity_type);
        END;
        INSERT INTO observations_trigram (observations_trigram) VALUES ('rebuild');
        INSERT INTO entities_trigram (entities_trigram) VALUES ('rebuild');
        """,
    )


@migrations()
def m006_ranked_search(db: Database) -> None:
    # Word indexes (porter stemming) for ranked search; triggers keep them in step
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE observations_fts USING fts5(
            content, content='observations', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE entities_fts USING fts5(
            name, entity_type, content='entities', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER observations_fts_insert AFTER INSERT ON observations BEGIN
            INSERT INTO observations_fts (rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER observations_fts_delete AFTER DELETE ON observations BEGIN
            INSERT INTO observations_fts (observations_fts, rowid, content) VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER observations_fts_update AFTER UPDATE ON observations BEGIN
            INSERT INTO observations_fts (observations_fts, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO observations_fts (rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER entities_fts_insert AFTER INSERT ON entities BEGIN
            INSERT INTO entities_fts (rowid, name, entity_type) VALUES (new.id, new.name, new.entity_type);
        END;
        CREATE TRIGGER entities_fts_delete AFTER DELETE ON entities BEGIN
            INSERT INTO entities_fts (entities_fts, rowid, name, entity_type)
            VALUES ('delete', old.id, old.name, old.entity_type);
        END;
        CREATE TRIGGER entities_fts_update AFTER UPDATE ON entities BEGIN
            INSERT INTO entities_fts (entities_fts, rowid, name, entity_type)
            VALUES ('delete', old.id, old.name, old.entity_type);
            INSERT INTO entities_fts (rowid, name, entity_type) VALUES (new.id, new.name, new.entity_type);
        END;
        INSERT INTO observations_fts (observations_fts) VALUES ('rebuild');
        INSERT INTO entities_fts (entities_fts) VALUES ('rebuild');
        """,
    )


@migrations()
def m007_deleted_words(db: Database) -> None:
    # A word index (contentless: no text kept) of what deletions removed, rowid =
    # the deletion's event id, so search can tell a question about something
    # forgotten from one in the question's own words
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE memory_deleted_fts USING fts5(
            text, content='', tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memory_deleted_fts_insert AFTER INSERT ON events
        WHEN new.kind IN ('delete_entity', 'delete_observation')
        BEGIN
            INSERT INTO memory_deleted_fts (rowid, text) VALUES (
                new.id,
                CASE new.kind WHEN 'delete_observation' THEN json_extract(new.old, '$')
                ELSE coalesce(json_extract(new.old, '$.name'), '') || ' '
                    || coalesce(json_extract(new.old, '$.entityType'), '') || ' '
                    || coalesce((SELECT group_concat(value, ' ') FROM json_each(new.old, '$.observations')), '') END
            );
        END;
        INSERT INTO memory_deleted_fts (rowid, text)
        SELECT id,
            CASE kind WHEN 'delete_observation' THEN json_extract(old, '$')
            ELSE coalesce(json_extract(old, '$.name'), '') || ' '
                || coalesce(json_extract(old, '$.entityType'), '') || ' '
                || coalesce((SELECT group_concat(value, ' ') FROM json_each(old, '$.observations')), '') END
        FROM events WHERE kind IN ('delete_entity', 'delete_observation');
        """,
    )


@migrations()
def m008_curation(db: Database) -> None:
    # A person curates: an entity renamed or merged away keeps its old name as an
    # alias of the survivor (searchable, so the old name still finds it), and an
    # edited observation's old words join the deleted words, as a deletion's do.
    # The names are under the reserved memory_ prefix, so no agent's table can hold them.
    # The ledger gains an index by project, for reading it a project at a time.
    run_script(
        db,
        """
        CREATE TABLE memory_aliases (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            UNIQUE (project, alias)
        );
        CREATE INDEX memory_aliases_by_entity ON memory_aliases (entity_id);
        CREATE VIRTUAL TABLE memory_aliases_fts USING fts5(
            alias, content='memory_aliases', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memory_aliases_fts_insert AFTER INSERT ON memory_aliases BEGIN
            INSERT INTO memory_aliases_fts (rowid, alias) VALUES (new.id, new.alias);
        END;
        CREATE TRIGGER memory_aliases_fts_delete AFTER DELETE ON memory_aliases BEGIN
            INSERT INTO memory_aliases_fts (memory_aliases_fts, rowid, alias) VALUES ('delete', old.id, old.alias);
        END;
        CREATE TRIGGER memory_aliases_fts_update AFTER UPDATE ON memory_aliases BEGIN
            INSERT INTO memory_aliases_fts (memory_aliases_fts, rowid, alias) VALUES ('delete', old.id, old.alias);
            INSERT INTO memory_aliases_fts (rowid, alias) VALUES (new.id, new.alias);
        END;
        -- the ledger read by project (people's timeline, the list of projects), newest first
        CREATE INDEX events_by_project ON events (project, id);
        CREATE TRIGGER memory_deleted_fts_edited AFTER INSERT ON events
        WHEN new.kind = 'update_observation'
        BEGIN
            INSERT INTO memory_deleted_fts (rowid, text) VALUES (new.id, json_extract(new.old, '$'));
        END;
        """,
    )


# The names each event touches: its target (an entity, or claim:N / fact:N), a
# relation's endpoints, a rename's new name, a merge's survivor, and the endpoints
# of the relations a rename or merge moved. ``{e}`` is the event row.
NAMED_KINDS = (
    "'create_entity', 'add_observation', 'delete_observation', 'update_observation', 'delete_entity', "
    "'rename_entity', 'merge_entity', 'propose_claim', 'add_claim_evidence', 'approve_claim', 'reject_claim', "
    "'reopen_claim', 'record_fact', 'supersede_fact', 'invalidate_fact', 'revalidate_fact'"
)
EVENT_NAMES = (
    ("{e}.target", "", f"{{e}}.kind IN ({NAMED_KINDS})"),
    ("json_extract({e}.target, '$[0]')", "", "{e}.kind IN ('create_relation', 'delete_relation') AND json_valid({e}.target)"),
    ("json_extract({e}.target, '$[2]')", "", "{e}.kind IN ('create_relation', 'delete_relation') AND json_valid({e}.target)"),
    ("json_extract({e}.new, '$.name')", "", "{e}.kind = 'rename_entity' AND json_valid({e}.new)"),
    ("json_extract({e}.new, '$.into')", "", "{e}.kind = 'merge_entity' AND json_valid({e}.new)"),
    ("json_extract(r.value, '$.from')", "json_each(CASE WHEN json_valid({e}.new) THEN {e}.new END, '$.relations') r",
     "{e}.kind IN ('rename_entity', 'merge_entity')"),
    ("json_extract(r.value, '$.to')", "json_each(CASE WHEN json_valid({e}.new) THEN {e}.new END, '$.relations') r",
     "{e}.kind IN ('rename_entity', 'merge_entity')"),
)


def event_names_sql(row: str, source: str) -> str:
    "A SELECT of (project, name, event_id) for each name the events of ``source`` touch, row alias ``row``."
    selects = []
    for name, join, where in EVENT_NAMES:
        tables = ", ".join(part for part in (source.removeprefix("FROM "), join.format(e=row)) if part)
        selects.append(
            f"SELECT * FROM (SELECT {row}.project AS project, {name.format(e=row)} AS name, {row}.id AS event_id"
            f"{' FROM ' + tables if tables else ''} WHERE {where.format(e=row)}) WHERE name IS NOT NULL"
        )
    return " UNION ".join(selects)


APPEND_ONLY_TABLES = ("checkpoints", "sql_audit", "claim_evidence", "claim_reviews", "fact_history", "claims", "facts")
AUDIT_HASHED = (
    "ts", "actor", "session", "project", "tool", "arguments", "reason", "ok", "error", "outcome",
    "rows_changed", "snapshot", "detail", "duration_ms",
)


@migrations()
def m009_ledger_truth(db: Database) -> None:
    # 1. memory_event_names: each event under the entity names (and claim:N /
    #    fact:N targets) it touches, kept by a trigger, so one entity's history,
    #    provenance and as-of state are read without replaying the whole ledger.
    # 2. No write can replace or reuse a row of an append-only table: REPLACE
    #    deletes a conflicting row without firing delete triggers, so each table
    #    refuses, before insert, an id (or, for events, a clock or hash) it holds.
    # 3. The SQL audit log is hash-chained like the ledger.
    # 4. An index of events by time, for reading memory as of a time.
    run_script(
        db,
        f"""
        CREATE TABLE memory_event_names (
            project TEXT NOT NULL,
            name TEXT NOT NULL,
            event_id INTEGER NOT NULL,
            PRIMARY KEY (project, name, event_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_event_names_by_event ON memory_event_names (event_id);
        CREATE TRIGGER memory_event_names_insert AFTER INSERT ON events
        BEGIN
            INSERT OR IGNORE INTO memory_event_names (project, name, event_id) {event_names_sql("new", "")};
        END;
        INSERT OR IGNORE INTO memory_event_names (project, name, event_id) {event_names_sql("e", "FROM events e")};
        CREATE TRIGGER events_refuse_overwrite BEFORE INSERT ON events
        WHEN (new.id != -1 AND new.id <= (SELECT max(id) FROM events))
            OR EXISTS (SELECT 1 FROM events WHERE machine = new.machine AND clock = new.clock)
            OR EXISTS (SELECT 1 FROM events WHERE hash = new.hash)
        BEGIN
            SELECT RAISE(ABORT, 'the ledger is append-only: an event cannot replace or reuse the id, clock or hash of another');
        END;
        CREATE TRIGGER claims_refuse_second_pending BEFORE INSERT ON claims
        WHEN new.status = 'candidate' AND EXISTS (
            SELECT 1 FROM claims WHERE project = new.project AND subject_key = new.subject_key
            AND predicate_key = new.predicate_key AND object_key = new.object_key AND status = 'candidate')
        BEGIN
            SELECT RAISE(ABORT, 'this value already has a pending claim: add evidence to it instead');
        END;
        CREATE TRIGGER claim_evidence_refuse_repeat BEFORE INSERT ON claim_evidence
        WHEN EXISTS (SELECT 1 FROM claim_evidence WHERE claim_id = new.claim_id AND kind = new.kind
            AND entity = new.entity AND content = new.content)
        BEGIN
            SELECT RAISE(IGNORE);
        END;
        ALTER TABLE sql_audit ADD COLUMN prev_hash TEXT;
        ALTER TABLE sql_audit ADD COLUMN hash TEXT;
        -- reading memory as of a time finds the newest event at or before it
        CREATE INDEX events_by_ts ON events (ts);
        -- a project's newest checkpoint (or event of any kind), however far back
        CREATE INDEX events_by_kind ON events (project, kind, id);
        -- rows written from here on carry their event's time, which replay
        -- rebuilds exactly; older rows' times were taken apart from their events
        INSERT INTO memory_meta (key, value) SELECT 'exact_times_from', coalesce(max(id), 0) + 1 FROM events;
        """,
    )
    for table in APPEND_ONLY_TABLES:
        run_script(
            db,
            f"""
            CREATE TRIGGER {table}_refuse_overwrite BEFORE INSERT ON {table}
            WHEN new.id != -1 AND new.id <= (SELECT max(id) FROM {table})
            BEGIN
                SELECT RAISE(ABORT, '{table} is append-only: a row cannot replace or reuse the id of another');
            END;
            """,
        )
    chain_audit_log(db)


def chain_audit_log(db: Database) -> None:
    "Hash-chain the SQL audit rows written before the chain existed."
    db.execute("DROP TRIGGER sql_audit_refuse_update")
    prev = GENESIS_HASH
    rows = db.execute(f"SELECT id, {', '.join(AUDIT_HASHED)} FROM sql_audit ORDER BY id").fetchall()
    for id, *values in rows:
        hash = chained_hash(dict(zip(AUDIT_HASHED, values)), prev)
        db.execute("UPDATE sql_audit SET prev_hash = ?, hash = ? WHERE id = ?", [prev, hash, id])
        prev = hash
    run_script(
        db,
        """
        CREATE TRIGGER sql_audit_refuse_update BEFORE UPDATE ON sql_audit
        BEGIN
            SELECT RAISE(ABORT, 'the SQL audit log is append-only: rows cannot be updated');
        END;
        """,
    )


@migrations()
def m010_project_sizes(db: Database) -> None:
    # How many entities each project holds, kept by triggers, so search weighs
    # a word against its project's size without counting the project per query.
    run_script(
        db,
        """
        CREATE TABLE memory_project_sizes (
            project TEXT PRIMARY KEY,
            entities INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO memory_project_sizes (project, entities) SELECT project, count(*) FROM entities GROUP BY project;
        CREATE TRIGGER memory_project_sizes_insert AFTER INSERT ON entities
        BEGIN
            INSERT INTO memory_project_sizes (project, entities) VALUES (new.project, 1)
            ON CONFLICT (project) DO UPDATE SET entities = entities + 1;
        END;
        CREATE TRIGGER memory_project_sizes_delete AFTER DELETE ON entities
        BEGIN
            UPDATE memory_project_sizes SET entities = entities - 1 WHERE project = old.project;
        END;
        CREATE TRIGGER memory_project_sizes_move AFTER UPDATE OF project ON entities
        BEGIN
            UPDATE memory_project_sizes SET entities = entities - 1 WHERE project = old.project;
            INSERT INTO memory_project_sizes (project, entities) VALUES (new.project, 1)
            ON CONFLICT (project) DO UPDATE SET entities = entities + 1;
        END;
        """,
    )


# What a name's key leaves out: the separators people write between a name's words
# (or leave out, in camelCase). m011's indexes are built on name_key_sql's exact
# expression, and search finds them by writing the same one: never change either;
# a new key needs a new migration.
NAME_KEY_SEPARATORS = " -_./:()[],'\"@#+"  # 15 nested replace()s: SQLite's parser stack holds about 29


def name_key_sql(column: str) -> str:
    "SQL for ``column`` lower-cased (ASCII letters only: SQLite's lower()) without :data:`NAME_KEY_SEPARATORS`."
    expression = column
    for separator in NAME_KEY_SEPARATORS:
        expression = f"replace({expression}, '{separator.replace(chr(39), chr(39) * 2)}', '')"
    return f"lower({expression})"


@migrations()
def m011_name_keys(db: Database) -> None:
    # Entities and their former names (aliases) by name key: ``checkout-api``,
    # ``checkout_api``, ``checkout api`` and ``checkoutApi`` share one, so a query
    # holding a name in any of those spellings finds the entity by index lookups.
    run_script(
        db,
        f"""
        CREATE INDEX entities_by_name_key ON entities (project, {name_key_sql("name")});
        CREATE INDEX memory_aliases_by_key ON memory_aliases (project, {name_key_sql("alias")});
        """,
    )


# m012's triggers: EVENT_NAMES again, by the kinds each part applies to, so an event runs
# only its own kind's statements. A condition on a list of more than two kinds (IN) builds a
# temporary index each time it runs (every event), so the named kinds are matched by CASE.
NAMED_KIND = "CASE new.kind " + " ".join(f"WHEN {kind.strip()} THEN 1" for kind in NAMED_KINDS.split(",")) + " ELSE 0 END"
EVENT_NAME_TRIGGERS = {
    "memory_event_names_target": (NAMED_KIND, (0,)),
    "memory_event_names_relation": ("new.kind IN ('create_relation', 'delete_relation') AND json_valid(new.target)", (1, 2)),
    "memory_event_names_moved": ("new.kind IN ('rename_entity', 'merge_entity')", (3, 4, 5, 6)),
}


def event_names_trigger(name: str) -> str:
    "The CREATE TRIGGER statement of one of m012's triggers: the parts of EVENT_NAMES it holds, each its own INSERT."
    when, parts = EVENT_NAME_TRIGGERS[name]
    inserts = []
    for part in parts:
        column, join, where = (text.format(e="new") for text in EVENT_NAMES[part])
        if part == 0:  # an event's target is never null
            inserts.append(f"INSERT OR IGNORE INTO memory_event_names (project, name, event_id) VALUES (new.project, {column}, new.id);")
        else:
            inserts.append(
                f"INSERT OR IGNORE INTO memory_event_names (project, name, event_id) SELECT * FROM (SELECT new.project AS project, "
                f"{column} AS name, new.id AS event_id{' FROM ' + join if join else ''} WHERE {where}) WHERE name IS NOT NULL;"
            )
    body = "\n            ".join(inserts)
    return f"CREATE TRIGGER {name} AFTER INSERT ON events WHEN {when}\n        BEGIN\n            {body}\n        END;\n"


@migrations()
def m012_event_names_by_kind(db: Database) -> None:
    # The names each event touches (m009) are indexed by three triggers, each for the kinds
    # it serves, instead of one that ran all seven parts of EVENT_NAMES for every event:
    # the same rows (verify compares them with event_names_sql), a fifth of the work per event.
    run_script(db, "DROP TRIGGER memory_event_names_insert;\n" + "".join(event_names_trigger(name) for name in EVENT_NAME_TRIGGERS))


@migrations()
def m013_sync(db: Database) -> None:
    # Sync by ledger (datasette_memory/sync): the projects a person shared (only
    # those ever leave the machine), the events other machines sent, each under its
    # origin (machine, clock) and its own hash chain, an opaque one holding nothing
    # but its place in that chain, the local events that applied foreign ones (an
    # echo, never sent on as this machine's own), and each peer's last sync.
    run_script(
        db,
        """
        CREATE TABLE memory_sync_projects (
            project TEXT PRIMARY KEY,
            shared_at TEXT NOT NULL,
            shared_by TEXT NOT NULL
        );
        CREATE TABLE memory_sync_events (
            machine TEXT NOT NULL,
            clock INTEGER NOT NULL,
            ts TEXT,
            actor TEXT,
            session TEXT,
            project TEXT,
            kind TEXT,
            target TEXT,
            old TEXT,
            new TEXT,
            old_digest TEXT,
            new_digest TEXT,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL,
            opaque INTEGER NOT NULL DEFAULT 0,
            received_at TEXT NOT NULL,
            received_from TEXT NOT NULL,
            PRIMARY KEY (machine, clock)
        );
        CREATE INDEX memory_sync_events_by_project ON memory_sync_events (project, kind);
        CREATE TRIGGER memory_sync_events_refuse_delete BEFORE DELETE ON memory_sync_events
        BEGIN
            SELECT RAISE(ABORT, 'foreign events are append-only: they cannot be deleted');
        END;
        -- an opaque event becomes whole only when its whole form arrives, with the same hash
        CREATE TRIGGER memory_sync_events_refuse_update BEFORE UPDATE ON memory_sync_events
        WHEN NOT (old.opaque = 1 AND new.opaque = 0 AND new.machine = old.machine AND new.clock = old.clock
            AND new.hash = old.hash AND new.prev_hash = old.prev_hash)
        BEGIN
            SELECT RAISE(ABORT, 'foreign events are append-only: they cannot be updated');
        END;
        CREATE TABLE memory_sync_derived (
            event_id INTEGER PRIMARY KEY REFERENCES events(id)
        );
        -- projects holding foreign events not yet applied (applied by the next sync, or by share)
        CREATE TABLE memory_sync_pending (
            project TEXT PRIMARY KEY
        );
        CREATE TABLE memory_sync_peers (
            peer TEXT PRIMARY KEY,
            synced_at TEXT NOT NULL,
            sent INTEGER NOT NULL,
            received INTEGER NOT NULL,
            applied INTEGER NOT NULL
        );
        """,
    )




def redactable(table: str, message: str, alternative: str, keys: tuple[str, ...]) -> str:
    """
    A trigger refusing every update of an event table but a redaction's (old or new
    value given a redaction's mark, nothing else changed) and ``alternative``.
    """
    same = " AND ".join(f"new.{column} IS old.{column}" for column in keys + (
        "machine", "clock", "ts", "actor", "session", "project", "kind", "target", "old_digest", "new_digest",
        "prev_hash", "hash"))
    return f"""
        CREATE TRIGGER {table}_refuse_update BEFORE UPDATE ON {table}
        WHEN NOT (({alternative}) OR ({same}
            AND (new.old IS old.old OR instr(new.old, '[redacted ') > 0)
            AND (new.new IS old.new OR instr(new.new, '[redacted ') > 0)
            AND (new.old IS NOT old.old OR new.new IS NOT old.new)))
        BEGIN
            SELECT RAISE(ABORT, '{message}');
        END;
    """


def redactable_record(trigger: str, table: str, message: str, fixed: tuple[str, ...], texts: tuple[str, ...],
                      keys: tuple[str, ...] = (), watched: tuple[str, ...] | None = None) -> str:
    """
    A trigger refusing every update of a record but a redaction's: one of its ``texts``
    given a redaction's mark, the others and its ``fixed`` columns unchanged (each
    text's key, ``<text>_key``, follows its text).

    :param watched: the columns the trigger fires on (default every one named)
    """
    columns = watched or fixed + texts + keys
    kept = [f"new.{column} IS old.{column}" for column in fixed]
    kept += [f"(new.{column} IS old.{column} OR instr(new.{column}, '[redacted ') > 0)" for column in texts]
    kept += [f"(new.{key} IS old.{key} OR new.{key[:-4]} IS NOT old.{key[:-4]})" for key in keys]
    kept.append("(" + " OR ".join(f"new.{column} IS NOT old.{column}" for column in texts) + ")")  # a redaction changes a text
    return f"""
        DROP TRIGGER {trigger};
        CREATE TRIGGER {trigger} BEFORE UPDATE OF {', '.join(columns)} ON {table}
        WHEN NOT ({' AND '.join(kept)})
        BEGIN
            SELECT RAISE(ABORT, '{message}');
        END;
    """


STATEMENT = ("subject", "predicate", "object")
STATEMENT_KEYS = ("subject_key", "predicate_key", "object_key")


@migrations()
def m014_redaction(db: Database) -> None:
    # Redaction (datasette_memory/history/redaction.py): a person's redaction may
    # replace an event's old and new values, own or foreign, by the same values with
    # a text marked redacted; every other field (the digests and the hash among them)
    # stays, and every other update is refused as before. The records the governed
    # tier keeps (claims, facts, evidence, reviews, fact history, checkpoints) may
    # have a text marked redacted the same way, and nothing else.
    run_script(
        db,
        "DROP TRIGGER events_refuse_update;\nDROP TRIGGER memory_sync_events_refuse_update;\n"
        + redactable("events", "the ledger is append-only: events cannot be updated", "0", ("id",))
        + redactable(
            "memory_sync_events", "foreign events are append-only: they cannot be updated",
            # an opaque event becomes whole when its whole form arrives, with the same hash
            "old.opaque = 1 AND new.opaque = 0 AND new.machine = old.machine AND new.clock = old.clock "
            "AND new.hash = old.hash AND new.prev_hash = old.prev_hash",
            ("opaque", "received_at", "received_from"),
        )
        + redactable_record("claims_keep_their_statement", "claims", "what a claim says never changes: propose a new claim instead",
                            ("id", "project", "valid_from", "confidence", "proposed_by", "proposed_at"), STATEMENT, STATEMENT_KEYS)
        + redactable_record("facts_keep_what_they_say", "facts",
                            "what a fact says and when it was recorded never change: supersede it instead",
                            ("id", "project", "valid_from", "recorded_at", "recorded_by", "claim_id", "supersedes"),
                            STATEMENT + ("rationale",), STATEMENT_KEYS)
        + redactable_record("claim_evidence_refuse_update", "claim_evidence", "evidence is append-only: it cannot be updated",
                            ("id", "claim_id", "kind", "entity", "added_by", "added_at"), ("content",))
        + redactable_record("claim_reviews_refuse_update", "claim_reviews", "reviews are append-only: they cannot be updated",
                            ("id", "claim_id", "act", "reviewer", "reviewed_at", "fact_id"), ("rationale",))
        + redactable_record("fact_history_refuse_update", "fact_history", "fact history is append-only: it cannot be updated",
                            ("id", "fact_id", "act", "valid_to", "superseded_by", "recorded_at", "actor"), ("rationale",))
        + redactable_record("checkpoints_refuse_update", "checkpoints", "checkpoints are append-only: they cannot be updated",
                            ("id", "project", "ts", "actor", "session", "head_event_id", "head_hash"), ("summary",))
        # every check of a chain looks for redactions first: a lookup, not a scan
        + "CREATE INDEX events_redactions ON events (kind) WHERE kind = 'redact';\n"
        + "CREATE INDEX memory_sync_events_redactions ON memory_sync_events (kind) WHERE kind = 'redact';\n",
    )
