"""An example datasette-memory plugin, as a small package would ship it: one hook of each kind.

It is installed here as a real distribution (``datasette_memory_acme-0.1.0.dist-info``
beside it, naming this module in the ``datasette_memory`` entry-point group), so
the tests load it as pip would have: put this folder on the path and the plugin
manager finds it. docs/extending.md walks through it.
"""

import hashlib
import json
import os
import pathlib

from datasette_memory import hookimpl
from datasette_memory.clients import AgentClient, FileChange, Places, Registration
from datasette_memory.clients.json_entries import drop_server, put_server
from datasette_memory.clients.setting_files import edit_json

# where memory_event writes each event it is called with, one JSON line each (a test sets it)
EVENTS_FILE_ENV = "ACME_EVENTS_FILE"


@hookimpl
def register_secret_patterns(register):
    # Acme's API keys: acme_live_ then 24 letters and digits
    register("Acme API key", r"(?<![A-Za-z0-9])acme_live_[A-Za-z0-9]{24}(?![A-Za-z0-9])")


def acme_settings(places: Places) -> pathlib.Path:
    "The Acme agent keeps its MCP servers in .acme/mcp.json, in the project or the home folder."
    return (places.folder if places.scope == "project" else places.home) / ".acme" / "mcp.json"


def install_changes(registration: Registration, places: Places) -> list[FileChange]:
    path = acme_settings(places)
    entry = {"command": registration.executable, "args": registration.mcp_args()}
    return [edit_json(path, lambda data: put_server(data, entry, registration.server_name, path))]


def uninstall_changes(server_name: str, places: Places) -> list[FileChange]:
    return [edit_json(acme_settings(places), lambda data: drop_server(data, server_name))]


@hookimpl
def register_agent_clients(register):
    register(AgentClient("acme-agent", "Acme Agent", install_changes, uninstall_changes, "Restart Acme Agent to pick this up."))


@hookimpl
def memory_event(event):
    # a notification or an export would go here; this one appends the event to a file
    path = os.environ.get(EVENTS_FILE_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps({"id": event["id"], "kind": event["kind"], "target": event["target"], "hash": event["hash"]}) + "\n")


class HashingModel:
    "A stand-in embedding model: a vector from a text's sha256, so tests need no model download."

    model_id = "acme/hashing-64"
    dimensions = 64

    def embed(self, texts):
        import struct

        vectors = []
        for text in texts:
            digest = b"".join(hashlib.sha256(f"{i}:{text.lower()}".encode()).digest() for i in range(48))
            values = [b / 255 - 0.5 for b in digest[: self.dimensions]]
            norm = sum(v * v for v in values) ** 0.5
            vectors.append(struct.pack(f"{self.dimensions}f", *(v / norm for v in values)))
        return vectors


class AcmeEmbeddings:
    "The embedding model hook, in a plugin object of its own: registered only where a test asks for it."

    @hookimpl
    def embedding_model(self):
        return HashingModel()
