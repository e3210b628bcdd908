"""What every part of the core works through: one project of one memory file, as seen by one caller."""

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .database import write_transaction
from .ledger import Caller, head
from .secrets import refuse_secrets

T = TypeVar("T")


@dataclass
class Scope:
    """
    A connection, the project every call is scoped to, and who is calling.

    The memory facade and the governed tier share one, so both write the same
    way: one transaction per call, with its ledger events.

    :param conn: a connection to a migrated memory file
    :param project: the project every call is scoped to
    :param caller: who is calling, recorded in the ledger
    :param allow_secrets: store text that looks like a credential instead of refusing it
    :param after_write: called after each write commits, with the id of the newest
        ledger event before it (0 for an empty ledger); the semantic index uses it
    """

    conn: sqlite3.Connection
    project: str
    caller: Caller
    allow_secrets: bool = False
    after_write: Callable[[int], None] | None = None

    def __post_init__(self) -> None:
        # a project's name is stored in every row and event of it
        self.refuse_secrets(project=self.project)

    def refuse_secrets(self, **fields: Any) -> None:
        "Refuse text that looks like a credential in any of ``fields``, unless secrets are allowed."
        if not self.allow_secrets:
            for name, value in fields.items():
                refuse_secrets(value, name)

    def write(self, function: Callable[..., T], *args: Any) -> T:
        """
        Run ``function(conn, caller, project, *args)`` in one write transaction:
        the change and its ledger events all happen, or nothing does.

        :param function: a core function that changes memory and appends its events
        :param args: its arguments after the project
        """
        before = (head(self.conn)[0] or 0) if self.after_write else 0
        with write_transaction(self.conn):
            result = function(self.conn, self.caller, self.project, *args)
        if self.after_write:
            self.after_write(before)
        return result
