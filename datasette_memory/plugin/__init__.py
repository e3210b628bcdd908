"""The Datasette plugin: each hook lives in a small module of its own."""

from .actions import register_person_actions
from .bearer_tokens import actor_from_bearer_in_any_case
from .connection import prepare_connection, startup
from .entity_routes import entity_cell_links, entity_row_actions, register_curation_events, register_entity_routes
from .error_pages import handle_exception, register_unknown_memory_paths
from .governance_routes import register_governance_routes
from .governed_links import link_claim_and_fact_ids, open_claim_or_fact
from .host_check import check_allowed_hosts, refuse_foreign_hosts
from .integrity_routes import register_integrity_routes
from .ledger_routes import register_ledger_routes
from .mcp_http import check_mcp_tools, register_mcp_routes, stop_mcp
from .overview_routes import menu_links, register_overview_routes
from .permissions import deny_writes_to_memory_tables, explain_refused_writes
from .redaction_routes import register_redaction_routes
from .review_forms import register_events
from .review_routes import register_review_routes
from .search_routes import register_search_routes
from .secret_guard import refuse_secrets_in_datasette_writes
from .sign_in import register_sign_in_routes
from .sync_page import register_sync_page
from .sync_routes import register_sync_routes
from .templates import prepare_jinja2_environment

__all__ = [
    "actor_from_bearer_in_any_case",
    "check_allowed_hosts",
    "check_mcp_tools",
    "deny_writes_to_memory_tables",
    "entity_cell_links",
    "entity_row_actions",
    "explain_refused_writes",
    "handle_exception",
    "link_claim_and_fact_ids",
    "menu_links",
    "open_claim_or_fact",
    "prepare_connection",
    "prepare_jinja2_environment",
    "register_curation_events",
    "register_entity_routes",
    "register_redaction_routes",
    "register_person_actions",
    "register_governance_routes",
    "register_integrity_routes",
    "register_ledger_routes",
    "register_mcp_routes",
    "register_events",
    "register_overview_routes",
    "register_review_routes",
    "register_search_routes",
    "register_sign_in_routes",
    "register_sync_page",
    "register_sync_routes",
    "refuse_foreign_hosts",
    "refuse_secrets_in_datasette_writes",
    "register_unknown_memory_paths",
    "startup",
    "stop_mcp",
]
