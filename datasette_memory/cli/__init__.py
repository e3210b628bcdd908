"""The ``datasette-memory`` command: each command lives in a module of its own, imported when it runs.

A hook runs on every prompt an agent is given, so a command loads only its own
module: ``hook prompt`` never imports Datasette's server, the installers or
the importers.
"""

import importlib
from collections.abc import Iterator, Mapping

import click

from .failures import FailureReportingGroup, debug_option

# name: "module:attribute" of the click command
COMMANDS = {
    "serve": ".serve:serve",
    "mcp": ".mcp_server:mcp",
    "import": ".import_export:import_",
    "export": ".import_export:export",
    "create-token": ".serve:create_token",
    "verify": ".verify:verify",
    "replicate": ".replicate:replicate",
    "restore": ".restore:restore",
    "redactions": ".redactions:redactions",
    "backfill-vectors": ".backfill:backfill_vectors",
    "install": ".install:install",
    "uninstall": ".install:uninstall",
    "hook": ".hook:hook",
    "sync": ".sync:sync",
    "bundle": ".sync:bundle",
    "share": ".sync:share",
    "unshare": ".sync:unshare",
}


class LazyCommands(Mapping[str, click.Command]):
    """
    The group's commands by name, each imported the first time it is asked for.

    :param places: name: ``"module:attribute"``, the module relative to this package
    """

    def __init__(self, places: dict[str, str]):
        self.places = places
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            module, attribute = self.places[name].split(":")
            self.loaded[name] = getattr(importlib.import_module(module, __name__), attribute)
        return self.loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.places)

    def __len__(self) -> int:
        return len(self.places)


@click.group(cls=FailureReportingGroup)
@click.version_option(package_name="datasette-memory")
@debug_option
def cli(debug: bool) -> None:
    """Memory for coding agents in one SQLite file.

    A failure (a full disk, a read-only folder, a damaged file...) is one line
    naming the file and what to do, and a non-zero exit; --debug shows its
    traceback instead.
    """


cli.commands = LazyCommands(COMMANDS)  # type: ignore[assignment]
