"""Command-line flags for the SQL tools' caps, for any click command that serves them.

Each cap gets ``--sql-<cap>`` (``--sql-max-rows``, ``--sql-timeout-ms``, ...), read
from its ``DATASETTE_MEMORY_SQL_*`` variable when not given; a given flag sets
that variable, which is where :class:`~.sql.tools.SqlTools` reads its caps.
"""

import dataclasses
import os

import click

from .errors import InvalidInput
from .sql.limits import Limits, env_var, positive_int
from .sql.snapshots import SNAPSHOT_DIR_ENV_VAR


def export(ctx, param, value):
    "Put a given flag's value where the SQL tools read it."
    if value is None:
        return value
    if param.type is click.INT:
        try:
            value = positive_int(value, "--" + param.name.replace("_", "-"))
        except InvalidInput as e:
            raise click.BadParameter(str(e))
    os.environ[param.envvar] = str(value)
    return value


def sql_limit_options(function):
    "Add ``--sql-<cap>`` for every cap, and ``--snapshot-dir``, to a click command."
    for field in reversed(dataclasses.fields(Limits)):
        function = click.option(
            "--sql-" + field.name.replace("_", "-"),
            type=click.INT,
            envvar=env_var(field.name),
            expose_value=False,
            callback=export,
            help=f"{field.metadata['help']}  [default: {field.default}]",
        )(function)
    return click.option(
        "--snapshot-dir",
        type=click.Path(file_okay=False),
        envvar=SNAPSHOT_DIR_ENV_VAR,
        expose_value=False,
        callback=export,
        help="Where snapshots go  [default: <file stem>-snapshots beside the memory file]",
    )(function)
