"""Registering datasette-memory with a coding agent: its MCP server and hooks, merged into the agent's own settings.

One module per client (registered through the ``register_agent_clients``
hook, :mod:`.agent_clients`, so a plugin can add another) says where its files are and which entries go in them;
``json_entries`` and ``toml_entries`` merge those entries into a file without
touching anything else, ``setting_files`` plans, backs up and writes, and
``install_state`` keeps the backups and the folders made outside the user's repository. The
CLI's ``install`` and ``uninstall`` are the door.
"""

from .agent_clients import AgentClient, agent_clients
from .install_state import InstallState
from .places import SCOPES, Places
from .registration import Registration
from .setting_files import FileChange, SettingsFileError, apply

__all__ = ["AgentClient", "agent_clients", "SCOPES", "FileChange", "InstallState", "Places", "Registration", "SettingsFileError", "apply"]
