"""The Datasette plugin: each hook lives in a small module of its own."""

from .actions import register_person_actions
from .connection import prepare_connection, startup
from .governance_routes import register_governance_routes
from .mcp_http import register_mcp_routes, stop_mcp
from .overview_routes import menu_links, register_overview_routes
from .permissions import deny_writes_to_memory_tables, explain_refused_writes
from .review_forms import register_events
from .review_routes import register_review_routes
from .search_routes import register_search_routes
from .templates import prepare_jinja2_environment

__all__ = [
    "deny_writes_to_memory_tables",
    "explain_refused_writes",
    "menu_links",
    "prepare_connection",
    "prepare_jinja2_environment",
    "register_person_actions",
    "register_governance_routes",
    "register_mcp_routes",
    "register_events",
    "register_overview_routes",
    "register_review_routes",
    "register_search_routes",
    "startup",
    "stop_mcp",
]
