"""The plugin's files from the top of the source tree: templates, ``datasette.yaml`` and ``metadata.yml``.

The wheel carries them inside the ``datasette_memory`` package (see
``pyproject.toml``); a source checkout has them beside it.
"""

import pathlib
from typing import Any

import yaml

PACKAGE_DIR = pathlib.Path(__file__).parent.parent  # datasette_memory/


def resource_path(name: str) -> pathlib.Path:
    """
    The path of a top-level resource such as ``templates`` or ``datasette.yaml``.

    :param name: the file or folder name
    """
    for candidate in (PACKAGE_DIR / name, PACKAGE_DIR.parent / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"datasette-memory is missing its {name}; reinstall the package")


def datasette_config(name: str, database: str) -> dict[str, Any]:
    """
    A top-level config file with its ``databases.memory`` block renamed to the
    served file's database name, which Datasette takes from the file name.

    :param name: ``datasette.yaml`` or ``metadata.yml``
    :param database: the memory database's name in Datasette
    """
    config = yaml.safe_load(resource_path(name).read_text())
    databases = config.get("databases", {})
    if "memory" in databases:
        databases[database] = databases.pop("memory")
    return config
