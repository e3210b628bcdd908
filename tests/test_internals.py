"""The stdio transport's private fastmcp and mcp names live in mcp_bridge/internals.py, which refuses other versions."""

import ast
import json
import pathlib
import subprocess
import sys

import pytest

from mcp_bridge import internals
from mcp_bridge.internals import WRITTEN_FOR, UnsupportedFramework, check_versions, installed_versions

BRIDGE = pathlib.Path(internals.__file__).parent
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_the_installed_versions_are_the_ones_it_was_written_for():
    assert installed_versions() == WRITTEN_FOR


@pytest.mark.parametrize("version", ["4.2.3", "4.2.4", "4.2.10"])
def test_the_same_minor_series_is_accepted_as_the_dependency_ranges_do(version):
    check_versions({**WRITTEN_FOR, "fastmcp": version})
    check_versions({**WRITTEN_FOR, "mcp": "2.3." + version.split(".")[2]})


@pytest.mark.parametrize("package,version", [("fastmcp", "4.3.0"), ("fastmcp", "5.0.0"), ("fastmcp", "4.20.3"), ("mcp", "2.4.0"), ("mcp", "1.9.0")])
def test_another_version_is_refused_naming_both(package, version):
    installed = {**WRITTEN_FOR, package: version}
    with pytest.raises(UnsupportedFramework) as raised:
        check_versions(installed)
    message = str(raised.value)
    assert f"{package} {version}" in message
    assert "written for fastmcp 4.2.3 and mcp 2.3.0 (it accepts fastmcp 4.2.x and mcp 2.3.x)" in message
    assert "pip install 'fastmcp==4.2.3' 'mcp==2.3.0'" in message


def private_names(path):
    "Attributes and modules with a leading underscore that the file reaches into fastmcp or mcp for."
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("fastmcp", "mcp"):
            found |= {part for part in node.module.split(".") if part.startswith("_")}
            found |= {alias.name for alias in node.names if alias.name.startswith("_")}
        if isinstance(node, ast.Attribute) and node.attr in ("_lifespan_manager", "_mcp_server"):
            found.add(node.attr)
    return found


def test_no_other_bridge_module_reaches_into_the_frameworks_privates():
    assert private_names(BRIDGE / "internals.py") == {"_context_streams", "_lifespan_manager", "_mcp_server"}
    others = {path.name: private_names(path) for path in BRIDGE.glob("*.py") if path.name != "internals.py"}
    assert {name: found for name, found in others.items() if found} == {}


def test_a_real_stdio_server_beside_another_fastmcp_says_which_and_stops(tmp_path):
    "A fastmcp whose metadata says 9.9.9 comes first on the path: the server names it, names 4.2.3, and exits 1."
    fake = tmp_path / "site" / "fastmcp_slim-9.9.9.dist-info"
    fake.mkdir(parents=True)
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: fastmcp-slim\nVersion: 9.9.9\n")
    executable = pathlib.Path(sys.executable).parent / "datasette-memory"
    done = subprocess.run(
        [str(executable), "mcp", "--db", str(tmp_path / "memory.db")],
        input=json.dumps(INITIALIZE) + "\n", capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "site"), "HOME": str(tmp_path)},
    )
    assert done.returncode == 1
    assert "this Python has fastmcp 9.9.9, mcp 2.3.0" in done.stderr
    assert "written for fastmcp 4.2.3 and mcp 2.3.0" in done.stderr
    assert "unexpected" not in done.stderr
