"""Errors raised by the core API; every door turns them into its own kind."""


class MemoryStoreError(Exception):
    """Base class for errors the caller can act on."""


class InvalidInput(MemoryStoreError, ValueError):
    """The input was malformed or over a limit; nothing was written."""


class NotFound(MemoryStoreError, LookupError):
    """Something the call named does not exist; nothing was written."""


class SchemaTooNewError(MemoryStoreError, RuntimeError):
    """The memory file was written by a newer version of datasette-memory."""


class DamagedFile(MemoryStoreError, RuntimeError):
    """The memory file's pages are damaged (SQLite's quick check fails); nothing was written to it."""
