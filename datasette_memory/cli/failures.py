"""Every command's failures as one line naming the file and what to do, never a traceback (unless ``--debug``).

The ``datasette-memory`` group is a :class:`FailureReportingGroup`: whatever a
command raises that click does not report itself reaches
:func:`one_line`, which says it the way the core says SQLite's and the
operating system's failures (:mod:`~datasette_memory.core.file_errors`), and the
command exits non-zero. ``--debug`` (or ``$DATASETTE_MEMORY_DEBUG``) lets the
traceback through instead.
"""

import errno
import pathlib
from typing import Any

import click

from ..core.errors import MemoryStoreError
from ..core.file_errors import file_failure

DEBUG_ENV = "DATASETTE_MEMORY_DEBUG"
FILE_KEY = "datasette_memory.file"  # in the click context's meta: the memory file the command is using
# a command's exit code for a failure, when not 1: verify's for a file it cannot check at all
EXIT_CODES = {"verify": 2}


def using_file(path: pathlib.Path) -> None:
    "Note the memory file the running command uses, for its failures to name."
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[FILE_KEY] = path


def one_line(error: BaseException, path: pathlib.Path | None) -> str:
    """
    ``error`` in one line: ``<file>: <what is wrong>; <what to do>``.

    :param error: what a command raised
    :param path: the memory file it was using, if it got that far
    """
    failure = file_failure(error, path)
    if failure is not None:
        return failure.message
    where = f"{path}: " if path else ""
    if isinstance(error, MemoryStoreError):
        return f"{where}{error}"
    return (f"{where}unexpected {type(error).__name__}: {error}; run again with --debug (or ${DEBUG_ENV}=1) "
            "to see where, and report it")


def passed_through(error: BaseException) -> bool:
    "Errors click reports itself: its own, and a closed pipe (``datasette-memory export | head``)."
    return isinstance(error, (click.ClickException, click.exceptions.Abort, click.exceptions.Exit)) or (
        isinstance(error, OSError) and error.errno == errno.EPIPE
    )


class FailureReportingGroup(click.Group):
    "A command group whose commands' failures are one line and a non-zero exit, or a traceback with ``--debug``."

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as e:
            if passed_through(e) or ctx.params.get("debug"):
                raise
            failed = click.ClickException(one_line(e, ctx.meta.get(FILE_KEY)))
            failed.exit_code = EXIT_CODES.get(ctx.invoked_subcommand or "", 1)
            raise failed from None


debug_option = click.option(
    "--debug",
    is_flag=True,
    envvar=DEBUG_ENV,
    help=f"Show the traceback of a failure instead of one line (also ${DEBUG_ENV}=1)",
)
