"""The installed wheel carries the top-level templates and config inside the package."""

import subprocess
import sys
import zipfile


CHECK = """
import asyncio, pathlib, sys
import datasette_memory
from datasette.app import Datasette
from datasette_memory import Memory
from datasette_memory.plugin.resources import resource_path

target = pathlib.Path(sys.argv[1])
assert pathlib.Path(datasette_memory.__file__).is_relative_to(target), datasette_memory.__file__
for name in ("templates", "datasette.yaml", "metadata.yml"):
    assert resource_path(name).is_relative_to(target), resource_path(name)
Memory.open(sys.argv[2]).close()

async def main():
    response = await Datasette([sys.argv[2]]).client.get("/-/memory")
    assert response.status_code == 200 and "ledger intact" in response.text, response.text
asyncio.run(main())
print("ok")
"""


def test_installed_wheel_serves_its_templates(wheel, tmp_path):
    names = zipfile.ZipFile(wheel).namelist()
    for expected in (
        "datasette_memory/templates/memory_overview.html",
        "datasette_memory/datasette.yaml",
        "datasette_memory/metadata.yml",
        "mcp_bridge/__init__.py",
    ):
        assert expected in names
    target = tmp_path / "installed"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
    )
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(target), str(tmp_path / "memory.db")],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.stdout.strip() == "ok", result.stderr
