"""datasette-memory: memory for coding agents in one SQLite file."""

from .errors import InvalidInput, MemoryStoreError, NotFound, SchemaTooNewError
from .memory import DEFAULT_PROJECT, Memory

__all__ = ["DEFAULT_PROJECT", "InvalidInput", "Memory", "MemoryStoreError", "NotFound", "SchemaTooNewError"]
