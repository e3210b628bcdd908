"""Write the package's version into the plugin's manifest, so the two never differ.

    python claude-plugin/plugin_version.py          # write pyproject.toml's version into plugin.json
    python claude-plugin/plugin_version.py --check  # exit 1, saying what differs, if it is not there

Claude Code shows a plugin's version and updates an installed plugin when it
changes; the plugin runs the ``datasette-memory`` command, so its version is the
package's (``[project] version`` in pyproject.toml). tests/test_claude_plugin.py
runs ``--check``.
"""

import json
import pathlib
import sys
import tomllib

PLUGIN = pathlib.Path(__file__).resolve().parent
MANIFEST = PLUGIN / ".claude-plugin" / "plugin.json"
PYPROJECT = PLUGIN.parent / "pyproject.toml"


def package_version(pyproject: pathlib.Path = PYPROJECT) -> str:
    "The package's version, as pyproject.toml gives it."
    return tomllib.loads(pyproject.read_text())["project"]["version"]


def manifest_with_version(manifest: pathlib.Path, version: str) -> str:
    "The manifest's text with ``version`` set, every other key as it was."
    data = json.loads(manifest.read_text())
    data["version"] = version
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str], manifest: pathlib.Path = MANIFEST, pyproject: pathlib.Path = PYPROJECT) -> int:
    version = package_version(pyproject)
    wanted = manifest_with_version(manifest, version)
    if argv == ["--check"]:
        if manifest.read_text() == wanted:
            return 0
        found = json.loads(manifest.read_text()).get("version")
        print(f"{manifest}: version is {found!r} but the package is {version!r} (pyproject.toml); "
              f"run python {pathlib.Path(__file__).name} in {PLUGIN}", file=sys.stderr)
        return 1
    if argv:
        print("usage: python plugin_version.py [--check]", file=sys.stderr)
        return 2
    manifest.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
