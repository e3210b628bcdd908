"""Links from Datasette's own pages to the review pages: claim and fact ids in tables and stored queries, row actions.

The ``claims`` and ``facts`` tables, and the stored governance queries that list
them, show each id as a link to its claim or fact page, where a person holding
``memory-approve`` finds the forms; a row's page offers the same link in its actions.
"""

from typing import Any

from datasette import hookimpl
from markupsafe import Markup, escape

from .connection import memory_database_name

# table or stored query: what its id column names
ID_PAGES = {
    "claims": "claims", "pending_claims": "claims", "rejected_claims": "claims",
    "facts": "facts", "current_facts": "facts", "retired_facts": "facts",
}


def listed_in(database: str, table: str | None, request: Any) -> str | None:
    "Which of :data:`ID_PAGES` the page shows: the table, or the stored query in the request's path."
    name = table or (request.url_vars.get("table") if request is not None else None)
    return name if name in ID_PAGES else None


@hookimpl(specname="render_cell")
def link_claim_and_fact_ids(row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any, request: Any) -> Markup | None:
    if column != "id" or database != memory_database_name(datasette) or not isinstance(value, int):
        return None
    listing = listed_in(database, table, request)
    if listing is None:
        return None
    kind = ID_PAGES[listing]
    href = datasette.urls.path(f"/-/memory/{kind}/{value}")
    return Markup(f'<a href="{escape(href)}" title="Open {kind[:-1]} #{value}">{value}</a>')


@hookimpl(specname="row_actions")
def open_claim_or_fact(datasette: Any, actor: Any, request: Any, database: str, table: str, row: Any) -> list[dict[str, str]] | None:
    if database != memory_database_name(datasette) or table not in ("claims", "facts"):
        return None
    kind = table[:-1]
    return [{
        "href": datasette.urls.path(f"/-/memory/{table}/{row['id']}"),
        "label": f"Open {kind} #{row['id']}",
        "description": "Its evidence, reviews and history, and the forms to act on it",
    }]
