"""SQL as the agent's tool, with the safety in the server. See :class:`SqlTools`."""

from .limits import Limits
from .sql_errors import SqlError, SqlLimitExceeded, SqlRefused
from .tools import SqlTools

__all__ = ["Limits", "SqlError", "SqlLimitExceeded", "SqlRefused", "SqlTools"]
