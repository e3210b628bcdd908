"""The official MCP memory server from npm, pinned in tests/official/package.json."""

import pathlib
import shutil

from fastmcp.client.transports import StdioTransport

from .installed import missing

OFFICIAL_DIR = pathlib.Path(__file__).parent / "official"
OFFICIAL_SERVER = OFFICIAL_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def official_transport(memory_file: pathlib.Path) -> StdioTransport:
    "A stdio transport to the official server storing its graph in ``memory_file``."
    if not OFFICIAL_SERVER.exists() or not shutil.which("node"):
        missing(f"no official memory server for the differential tests: install Node and run 'npm ci' in {OFFICIAL_DIR} (tests/run does)")
    return StdioTransport(
        "node", [str(OFFICIAL_SERVER)], env={"MEMORY_FILE_PATH": str(memory_file.resolve())}, keep_alive=False
    )
