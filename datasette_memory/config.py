"""What a door configures: read once, from command-line flags, the environment or Datasette's plugin configuration, then passed down as one object.

The library never reads the environment itself: :mod:`datasette_memory.cli`
turns flags and environment variables into a :class:`Config`, and the plugin
reads the same shape from Datasette's configuration (``plugins:
datasette-memory:`` in ``datasette.yaml``), which ``serve`` fills in.
"""

import dataclasses
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .core.errors import InvalidInput
from .search.settings import SearchSettings
from .sqltools.limits import Limits, positive_int

# the most bytes one MCP request may hold (one stdio line, one HTTP body): 4 MiB
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Config:
    """
    Everything configurable about how memory is served.

    :param search: whether the semantic arm runs, and the fusion constants
    :param sql: the SQL tools' caps
    :param snapshot_dir: where snapshots go; None for ``<file stem>-snapshots`` beside the memory file
    :param max_request_bytes: the most bytes one MCP request may hold: a longer one is refused unread
    """

    search: SearchSettings = field(default_factory=SearchSettings)
    sql: Limits = field(default_factory=Limits)
    snapshot_dir: pathlib.Path | None = None
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "Config":
        """
        A configuration from plain values, as in Datasette's plugin configuration:
        ``{search: {...}, sql: {...}, snapshot_dir: ..., max_request_bytes: ...}``; anything missing keeps its default.

        :param values: the mapping
        :raises InvalidInput: naming a setting that is unknown or of the wrong type
        """
        unknown = sorted(set(values) - {"search", "sql", "snapshot_dir", "max_request_bytes"})
        if unknown:
            raise InvalidInput(f"{unknown[0]}: unknown setting; the settings are search, sql, snapshot_dir and max_request_bytes")
        for part in ("search", "sql"):
            if not isinstance(values.get(part, {}), Mapping):
                raise InvalidInput(f"{part}: must be a mapping of settings, got {values[part]!r}")
        snapshot_dir = values.get("snapshot_dir")
        if snapshot_dir is not None and not isinstance(snapshot_dir, str):
            raise InvalidInput(f"snapshot_dir: must be a folder path, got {snapshot_dir!r}")
        return cls(
            search=SearchSettings.from_mapping(values.get("search", {})),
            sql=Limits.from_mapping(values.get("sql", {})),
            snapshot_dir=pathlib.Path(snapshot_dir).expanduser() if snapshot_dir else None,
            max_request_bytes=positive_int(values.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES), "max_request_bytes"),
        )

    def to_mapping(self) -> dict[str, Any]:
        "This configuration as plain values, the shape :meth:`from_mapping` reads."
        return {
            "search": dataclasses.asdict(self.search),
            "sql": dataclasses.asdict(self.sql),
            "snapshot_dir": str(self.snapshot_dir) if self.snapshot_dir else None,
            "max_request_bytes": self.max_request_bytes,
        }
