"""``/-/memory/entity``: one entity whole, for people (a page, its neighbourhood drawn) and scripts (JSON).

Reading it needs ``view-database``. An old name (from a rename or a merge)
redirects to the entity it now belongs to. The forms that correct an entity
are under ``/-/memory/entity/<curation>`` (:mod:`.curation_forms`), and their
links show for a person holding ``memory-curate``. Datasette's own pages lead
here too: an entity's row page has an action that opens it, and entity names
in the ``entities`` and ``relations`` tables link to it.
"""

from typing import Any

from datasette import Response, hookimpl
from datasette.events import Event
from markupsafe import Markup

from ..governed import about
from ..governed.gate import holds
from ..governed.person_actions import APPROVE_ACTION, CURATE_ACTION
from ..graph import entity_view
from . import curation_forms
from .connection import call_memory, memory_database_name
from .curation_forms import entity_path
from .error_pages import handled
from .graph_picture import layout
from .stored_text import stored
from .pages import chosen_moment, chosen_project, entity_name, respond, viewable_database, wants_json

LINKED_CELLS = {"entities": ("name",), "relations": ("from_entity", "to_entity")}


def read_entity(memory: Any, name: str, moment: dict[str, Any] | None = None) -> dict[str, Any]:
    """
    The entity page's data: the entity whole, and the facts and claims about any of its names.
    As of a past ``moment``, the entity as it was then, without facts and claims
    (they keep their own valid and record times: the fact pages show them).
    """
    if moment is not None:
        return entity_view.entity_page(memory.conn, memory.project, name, past=past_graph(memory, moment))
    page = entity_view.entity_page(memory.conn, memory.project, name)
    statements = about.statements_about(memory.conn, memory.project, [name, *page["entity"]["aliases"]])
    return {**page, **statements}


def past_graph(memory: Any, moment: dict[str, Any]) -> entity_view.PastGraph:
    "The graph as it was at ``moment``, read through memory's ``open_nodes`` as of it."
    return entity_view.PastGraph(lambda names: memory.open_nodes(names, as_of=moment["event_id"]), memory.project, moment["event_id"])


def name_then(memory: Any, name: str, moment: dict[str, Any]) -> str | None:
    """
    The name the entity now called (or once called) ``name`` had at ``moment``,
    when it had another one then: the entity page before a rename shows the old name.
    """
    names = entity_view.names_it_had(memory.conn, memory.project, name)
    then = past_graph(memory, moment).types(names)
    if name in then:
        return name
    return next(iter(then)) if len(then) == 1 else None


async def entity_page(datasette: Any, request: Any) -> Response:
    """
    ``/-/memory/entity?project=&name=``: observations and relations with the events
    that made them, neighbourhood, facts, claims, history; ``&as_of=`` reads it as it was then.
    """
    await viewable_database(datasette, request)
    project = await chosen_project(datasette, request)
    name = entity_name(request)
    moment = await chosen_moment(datasette, request)
    if moment is None:
        now_called = await call_memory(datasette, lambda memory: entity_view.current_name(memory.conn, project, name), project=project)
    else:
        now_called = await call_memory(datasette, lambda memory: name_then(memory, name, moment), project=project)
    if now_called is not None and now_called != name:
        return Response.redirect(entity_path(datasette, project, now_called, json=wants_json(request), moment=moment))
    data = await call_memory(datasette, lambda memory: read_entity(memory, name, moment), project=project)
    data = {"project": project, **data, "may_curate": moment is None and await holds(datasette, request, CURATE_ACTION),
            "may_redact": moment is None and await holds(datasette, request, APPROVE_ACTION)}
    if moment is not None:
        data["as_of"] = moment
    if not wants_json(request):
        data["picture"] = layout(data["neighbourhood"])
    return await respond(datasette, request, "entity", "memory_entity.html", data)


@hookimpl(specname="register_routes")
def register_entity_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (r"^/-/memory/entity(\.(?P<format>json))?$", handled(entity_page)),
        (r"^/-/memory/entity/(?P<curation>[^/]+)$", handled(curation_forms.curation_page)),
    ]


@hookimpl(specname="register_events")
def register_curation_events(datasette: Any) -> list[type[Event]]:
    return [curation_forms.MemoryCurateEvent]


@hookimpl(specname="row_actions")
def entity_row_actions(datasette: Any, actor: Any, request: Any, database: str, table: str, row: Any) -> list[dict[str, str]] | None:
    if database != memory_database_name(datasette) or table != "entities":
        return None
    return [{
        "href": entity_path(datasette, row["project"], row["name"]),
        "label": "Open entity page",
        "description": "Its observations with who added them, relations, neighbourhood, facts, claims and history",
    }]


@hookimpl(specname="render_cell")
def entity_cell_links(row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any, request: Any) -> Markup | None:
    "Entity names in the entities and relations tables, as links to their entity pages."
    if database != memory_database_name(datasette) or column not in LINKED_CELLS.get(table or "", ()):
        return None
    if not isinstance(value, str) or "project" not in row.keys():
        return None
    return Markup('<a href="{}">{}</a>').format(entity_path(datasette, row["project"], value), stored(value))
