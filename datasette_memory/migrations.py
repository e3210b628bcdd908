"""The memory file's schema, as ordered sqlite-utils migrations.

Never edit an applied migration: add ``m00N_...`` below it instead.
"""

import sqlite3
import uuid

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATION_SET = "datasette_memory"

migrations = Migrations(MIGRATION_SET)


def run_script(db: Database, script: str):
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
def m001_initial(db: Database):
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
    db["memory_meta"].insert({"key": "machine_id", "value": uuid.uuid4().hex})


@migrations()
def m002_ledger(db: Database):
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
