"""SQL as the agent's tool, with the safety in the server. See :class:`SqlTools`.

:class:`SqlTools` (and the guard, lexer and catalog it brings) is imported
when first asked for: the configuration needs only :class:`Limits`, and a
hook run that never touches SQL should not pay for the rest.
"""

from typing import Any

from .limits import Limits
from .sql_errors import SqlError, SqlLimitExceeded, SqlRefused

__all__ = ["Limits", "SqlError", "SqlLimitExceeded", "SqlRefused", "SqlTools"]


def __getattr__(name: str) -> Any:
    if name == "SqlTools":
        from .tools import SqlTools

        return SqlTools
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
