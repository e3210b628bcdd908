"""What the commands share: the memory file, and the configuration read from flags and the environment.

This is the one place the environment is read for configuration: each SQL cap
is a ``--sql-<cap>`` flag or its ``DATASETTE_MEMORY_SQL_<CAP>`` variable, the
snapshot folder ``--snapshot-dir`` or ``DATASETTE_MEMORY_SNAPSHOT_DIR``, the cap on
one MCP request ``--max-request-bytes`` or ``DATASETTE_MEMORY_MAX_REQUEST_BYTES``, and the
search settings ``DATASETTE_MEMORY_NO_VECTORS`` and the tuning variables in
:data:`SEARCH_ENV`. Commands get them as one :class:`~datasette_memory.Config`.
"""

import dataclasses
import functools
import os
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import click

from ..config import DEFAULT_MAX_REQUEST_BYTES, Config
from ..core.database import connect
from ..core.evidence import start_line
from ..core.errors import InvalidInput, MemoryStoreError
from ..memory import Memory
from ..search.settings import SearchSettings
from ..sqltools.limits import Limits, positive_int
from .failures import using_file

DB_ENV = "DATASETTE_MEMORY_DB"
SQL_ENV_PREFIX = "DATASETTE_MEMORY_SQL_"
SNAPSHOT_DIR_ENV = "DATASETTE_MEMORY_SNAPSHOT_DIR"
MAX_REQUEST_BYTES_ENV = "DATASETTE_MEMORY_MAX_REQUEST_BYTES"
NO_VECTORS_ENV = "DATASETTE_MEMORY_NO_VECTORS"
# variable: the search setting it sets
SEARCH_ENV = {
    "DATASETTE_MEMORY_RRF_BM25": "rrf_bm25",
    "DATASETTE_MEMORY_RRF_VECTOR": "rrf_vector",
    "DATASETTE_MEMORY_RRF_K": "rrf_k",
    "DATASETTE_MEMORY_VECTOR_MIN_SIMILARITY": "vector_min_similarity",
    "DATASETTE_MEMORY_VECTOR_BAND": "vector_band",
    "DATASETTE_MEMORY_VECTOR_ELSEWHERE_MARGIN": "vector_elsewhere_margin",
    "DATASETTE_MEMORY_RELATED_LIMIT": "related_limit",
}


def default_db_path(environ: Mapping[str, str]) -> pathlib.Path:
    """
    The memory file used when no path is given: ``$DATASETTE_MEMORY_DB``, else
    ``memory.db`` in the per-user data directory (``$XDG_DATA_HOME`` or
    ``~/.local/share``) under ``datasette-memory``.

    :param environ: the environment
    """
    if environ.get(DB_ENV):
        return pathlib.Path(environ[DB_ENV]).expanduser()
    data_home = environ.get("XDG_DATA_HOME") or "~/.local/share"
    return pathlib.Path(data_home).expanduser() / "datasette-memory" / "memory.db"


def db_option(function: Callable[..., Any]) -> Callable[..., Any]:
    "The ``--db`` option every command shares."
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False, path_type=pathlib.Path),
        help=f"The memory file. Default: ${DB_ENV}, else memory.db in "
        "$XDG_DATA_HOME/datasette-memory (~/.local/share/datasette-memory)",
    )(function)


def resolve(db_path: pathlib.Path | None, creating: bool = True) -> pathlib.Path:
    """
    The memory file a command uses: ``--db``, else the default; its failures name it.
    Only the built-in default place's folder is created when missing: a path
    given (``--db`` or ``$DATASETTE_MEMORY_DB``) must be in a folder that exists,
    so a typo is an error rather than a new, empty memory.

    :param creating: the command creates the file if missing (``verify`` does not: it says the file is missing)
    """
    given = db_path or (pathlib.Path(os.environ[DB_ENV]) if os.environ.get(DB_ENV) else None)
    path = (given or default_db_path(os.environ)).expanduser().resolve()
    if creating and given is not None and not path.parent.is_dir():
        source = "--db" if db_path else f"${DB_ENV}"
        raise click.ClickException(
            f"{path}: the folder {path.parent} does not exist; check {source} for a typo, or create the folder first "
            "(only the default place is created when missing)"
        )
    using_file(path)
    return path


def open_db(db_path: pathlib.Path | None, door: str | None = None) -> tuple[pathlib.Path, Any]:
    """
    Check, open and migrate the memory file, or exit with the reason it cannot be.

    :param door: the command, for a door that serves or changes memory: it checks
        the file against the records beside it and says so in one line on stderr
    """
    path = resolve(db_path)
    try:
        conn = connect(path, check_pages=True)
    except MemoryStoreError as e:
        raise click.ClickException(f"{path}: {e}")
    if door:
        say_witness(conn, door)
    return path, conn


def say_witness(conn: Any, door: str) -> bool:
    "Check the file against its witness and the last clean check at a door's start; one line on stderr. Whether all is well."
    ok, line = start_line(conn, door)
    click.echo(line, err=True)
    return ok


def sql_env_var(cap: str) -> str:
    "The environment variable setting one SQL cap."
    return SQL_ENV_PREFIX + cap.upper()


def search_settings(environ: Mapping[str, str]) -> SearchSettings:
    """
    The search settings the environment asks for.

    :param environ: the environment
    :raises click.ClickException: naming a variable that is not a number
    """
    values: dict[str, object] = {}
    if environ.get(NO_VECTORS_ENV, "").strip().lower() not in ("", "0", "false", "no"):
        values["semantic"] = False
    defaults = SearchSettings()
    for name, field in SEARCH_ENV.items():
        text = environ.get(name, "").strip()
        if text:
            try:
                values[field] = float(text)
            except ValueError:
                raise click.ClickException(f"${name} must be a number such as {getattr(defaults, field)}, not {text!r}")
    return SearchSettings.from_mapping(values)


def environment_config() -> Config:
    "The configuration of a command without flags for it: the search settings from the environment."
    return Config(search=search_settings(os.environ))


def wait_for_vectors(memory: Memory) -> None:
    "Before a command that wrote ends: let the semantic index catch up, saying so if it takes a moment."
    if not memory.wait_for_semantic_index(timeout=0.5):
        click.echo("Embedding the changes for semantic search...", err=True)
        memory.wait_for_semantic_index()


def checked_cap(ctx: click.Context, param: click.Parameter, value: Any) -> int | None:
    "A flag's cap as a whole number of at least 1, or a usage error naming the flag."
    if value is None:
        return None
    try:
        return positive_int(value, "--" + str(param.name).replace("_", "-"))
    except InvalidInput as e:
        raise click.BadParameter(str(e))


def config_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """
    Add ``--sql-<cap>`` for every SQL cap, ``--snapshot-dir`` and ``--max-request-bytes``
    to a click command; it is called with ``config``, a :class:`~datasette_memory.Config`
    holding them and the search settings from the environment.
    """

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        caps = {f.name: kwargs.pop("sql_" + f.name) for f in dataclasses.fields(Limits)}
        snapshot_dir = kwargs.pop("snapshot_dir")
        max_request_bytes = kwargs.pop("max_request_bytes")
        kwargs["config"] = Config(
            search=search_settings(os.environ),
            sql=Limits(**{name: value for name, value in caps.items() if value is not None}),
            snapshot_dir=pathlib.Path(snapshot_dir).expanduser() if snapshot_dir else None,
            max_request_bytes=max_request_bytes or DEFAULT_MAX_REQUEST_BYTES,
        )
        return function(*args, **kwargs)

    for field in reversed(dataclasses.fields(Limits)):
        command = click.option(
            "--sql-" + field.name.replace("_", "-"),
            "sql_" + field.name,
            type=click.INT,
            envvar=sql_env_var(field.name),
            callback=checked_cap,
            help=f"{field.metadata['help']}  [default: {field.default}]",
        )(command)
    command = click.option(
        "--max-request-bytes",
        type=click.INT,
        envvar=MAX_REQUEST_BYTES_ENV,
        callback=checked_cap,
        help="Most bytes one MCP request may hold (a stdio line, an HTTP body); a longer one is refused, "
        f"unparsed  [default: {DEFAULT_MAX_REQUEST_BYTES}]",
    )(command)
    return click.option(
        "--snapshot-dir",
        type=click.Path(file_okay=False),
        envvar=SNAPSHOT_DIR_ENV,
        help="Where snapshots go  [default: <file stem>-snapshots beside the memory file]",
    )(command)
