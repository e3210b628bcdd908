"""One core, many doors: the core imports no door, and the doors share the core."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).parent.parent
DOORS = {"cli.py", "cli_options.py", "__main__.py"}
DOOR_PACKAGES = ("mcp_bridge", "datasette", "fastmcp", "click", "jinja2", "datasette_memory.plugin", "datasette_memory.cli")


def imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            package = "datasette_memory." + ".".join(path.relative_to(ROOT / "datasette_memory").parts[:-1])
            base = node.module or ""
            if node.level:
                parent = package.rstrip(".").split(".")[: len(package.rstrip(".").split(".")) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            yield base


def core_modules():
    for path in (ROOT / "datasette_memory").rglob("*.py"):
        relative = path.relative_to(ROOT / "datasette_memory")
        if relative.parts[0] != "plugin" and path.name not in DOORS:
            yield path


def test_the_core_imports_no_door():
    modules = list(core_modules())
    assert len(modules) > 20
    for path in modules:
        for name in imports(path):
            assert not any(name == door or name.startswith(door + ".") for door in DOOR_PACKAGES), (path, name)


def test_the_mcp_bridge_reaches_memory_only_through_the_core():
    "No SQL in the bridge: every tool calls the core API or the SQL tools facade."
    for path in (ROOT / "mcp_bridge").glob("*.py"):
        text = path.read_text()
        assert ".execute(" not in text, path
