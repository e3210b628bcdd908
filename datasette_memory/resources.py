"""Files that live at the top of the source tree and inside the wheel's package."""

import pathlib

PACKAGE_DIR = pathlib.Path(__file__).parent


def resource_path(name: str) -> pathlib.Path:
    """
    The path of a top-level resource such as ``templates`` or ``datasette.yaml``.

    The wheel carries them inside the package (see ``pyproject.toml``); a source
    checkout has them beside it.

    :param name: the file or folder name
    """
    for candidate in (PACKAGE_DIR / name, PACKAGE_DIR.parent / name):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"datasette-memory is missing its {name}; reinstall the package")
