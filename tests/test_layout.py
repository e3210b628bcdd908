"""Rooms whose names are the architecture: the import graph keeps each in its place.

Every module of ``datasette_memory`` and ``mcp_bridge`` is read with ``ast``; its
imports, relative ones resolved, are the edges of a graph. The rules:

- the core packages build on each other only downwards (:data:`MAY_USE`), and
  never import a door or a door's framework (datasette, fastmcp, click, jinja2);
- ``mcp_bridge`` never imports the plugin or the CLI, nor Datasette itself; the
  plugin may use the bridge (to serve MCP over HTTP); the CLI may use anything;
- no module imports, directly or round a cycle, itself;
- no two modules share a file name, so a file name says which room it is in;
- the core never reads the environment: the doors pass configuration down.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PACKAGES = ("datasette_memory", "mcp_bridge")

# room: the rooms its modules may import (their own included)
CORE_ROOMS = {
    "core": {"core"},
    "graph": {"core", "graph"},
    "governed": {"core", "governed"},
    "sqltools": {"core", "sqltools"},
    "vectors": {"core", "vectors"},
    "search": {"core", "graph", "vectors", "search"},
    # memory rebuilt from the ledger: verify, as-of reads, diffs, provenance
    "history": {"core", "graph", "governed", "sqltools", "vectors", "search", "history"},
    # replication with Litestream, and the replica compared with the file: over the ledger and verify
    "replication": {"core", "history", "replication"},
    # datasette_memory's own modules: Memory, Config and the file overview, over every core room
    "facade": {"core", "graph", "governed", "sqltools", "vectors", "search", "history", "facade"},
}
DOOR_ROOMS = {
    "mcp_bridge": set(CORE_ROOMS) | {"mcp_bridge"},
    "plugin": set(CORE_ROOMS) | {"mcp_bridge", "plugin"},
    # registering the MCP server and hooks in coding agents' settings files
    "clients": set(CORE_ROOMS) | {"clients"},
    # what the coding agents' hooks do: session-start context, prompt recall, tool capture, the stop check
    "hooks": set(CORE_ROOMS) | {"hooks"},
    "cli": set(CORE_ROOMS) | {"mcp_bridge", "plugin", "clients", "hooks", "cli"},
}
MAY_USE = {**CORE_ROOMS, **DOOR_ROOMS}
DOOR_FRAMEWORKS = ("datasette", "fastmcp", "click", "jinja2", "mcp_types")


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py") if "__pycache__" not in path.parts
}


def room(module: str) -> str:
    "The room a project module is in: its package under datasette_memory, or mcp_bridge."
    parts = module.split(".")
    if parts[0] == "mcp_bridge":
        return "mcp_bridge"
    if module == "datasette_memory.__main__":
        return "cli"  # python -m datasette_memory
    if len(parts) > 1 and parts[1] in MAY_USE:
        return parts[1]
    return "facade"  # datasette_memory's __init__, memory, config, overview


def imports(module: str) -> set:
    "Every module ``module`` names in an import: ``from a import b`` names ``a.b`` if that is a module, else ``a``."
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names}
    return found


GRAPH = {module: imports(module) for module in MODULES}


def project_edges(module: str) -> set:
    return {name for name in GRAPH[module] if name in MODULES}


def test_the_graph_covers_every_room():
    assert {room(module) for module in MODULES} == set(MAY_USE)
    assert len(MODULES) > 100


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_module_imports_only_the_rooms_it_may(module):
    allowed = MAY_USE[room(module)]
    for name in project_edges(module):
        assert room(name) in allowed, f"{module} ({room(module)}) imports {name} ({room(name)})"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in CORE_ROOMS))
def test_the_core_imports_no_door_framework(module):
    for name in GRAPH[module]:
        assert name.split(".")[0] not in DOOR_FRAMEWORKS, f"{module} imports {name}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) == "mcp_bridge"))
def test_the_bridge_leans_on_no_other_door(module):
    "The plugin and the CLI are out of bounds (see MAY_USE); so is Datasette, which only the plugin knows."
    for name in GRAPH[module]:
        assert name.split(".")[0] != "datasette", f"{module} imports {name}"


def test_no_import_cycles():
    "Depth-first search over the project's modules; a module met again on the current path closes a cycle."
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for name in sorted(project_edges(module)):
            visit(name)
        path.pop()
        done.add(module)

    for module in sorted(MODULES):
        visit(module)


def test_file_names_are_unique():
    seen = {}
    for module, path in MODULES.items():
        if path.name not in ("__init__.py", "__main__.py"):
            assert path.name not in seen, f"{module} and {seen[path.name]} share the file name {path.name}"
            seen[path.name] = module


def reads_environment(node: ast.AST) -> bool:
    "``os.environ.get(...)``, ``os.environ[...]`` read, ``os.getenv(...)`` or ``... in os.environ``."
    def is_environ(n):
        return isinstance(n, ast.Attribute) and n.attr == "environ" and isinstance(n.value, ast.Name) and n.value.id == "os"

    if isinstance(node, ast.Attribute) and is_environ(node.value) and node.attr in ("get", "copy", "items", "keys", "values"):
        return True
    if isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
        return True
    if isinstance(node, ast.Attribute) and node.attr == "getenv" and isinstance(node.value, ast.Name) and node.value.id == "os":
        return True
    return isinstance(node, ast.Compare) and any(is_environ(c) for c in node.comparators)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in CORE_ROOMS))
def test_the_core_never_reads_the_environment(module):
    tree = ast.parse(MODULES[module].read_text())
    assert not [ast.unparse(n) for n in ast.walk(tree) if reads_environment(n)]


def test_the_mcp_bridge_reaches_memory_only_through_the_core():
    "No SQL in the bridge: every tool calls the core API or the SQL tools."
    for module, path in MODULES.items():
        if room(module) == "mcp_bridge":
            assert ".execute(" not in path.read_text(), module
