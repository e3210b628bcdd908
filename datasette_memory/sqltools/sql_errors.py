"""Errors raised by the SQL tools; each says what was wrong and what to do instead."""

from ..core.errors import MemoryStoreError


class SqlError(MemoryStoreError):
    """SQLite rejected the statement (a syntax error, a missing table...); nothing was changed."""


class SqlRefused(SqlError):
    """A safety rail refused the statement before it ran; nothing was changed."""


class SqlLimitExceeded(SqlError):
    """The call went over a limit and was stopped; nothing was changed."""
