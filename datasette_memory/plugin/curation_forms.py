"""A person's corrections to an entity as forms: fill in, see what will change, confirm, see what changed.

``/-/memory/entity/<curation>?project=&name=``, the curations being
``edit-observation``, ``delete-observation``, ``rename``, ``merge`` and
``delete-relation``. ``GET`` shows the form; an entity renamed or merged away
meanwhile gets a page saying where it went instead. Posting the form
(``step=confirm``) keeps it as a draft and redirects to the same page with
``?draft=``, where the change is rehearsed (it runs, and is rolled back) to
show the ledger events it would write; confirming (``step=apply``) makes it
as that person and goes back to the entity (the one that remains, after a
rename or merge) with a message saying what changed. Every step is
POST-redirect-GET (:mod:`.drafts`). Every step needs a signed-in person
holding ``memory-curate``; a token never gets past the gate. Datasette
refuses a cross-site POST before it reaches here.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from datasette import Response
from datasette.events import Event

from ..core.errors import InvalidInput, NotFound
from ..governed.gate import person_holding
from ..governed.person_actions import CURATE_ACTION
from ..graph import entity_view
from ..memory import Memory
from . import drafts
from .connection import call_memory
from .pages import chosen_project, entity_name, form_fields, render_page, shown, viewable_database
from .stored_text import stored

Change = Callable[[Memory, str, dict[str, str]], dict[str, Any]]


@dataclass
class MemoryCurateEvent(Event):
    """A person corrected an entity through the forms."""

    name = "memory-curate"
    curation: str
    entity: str


@dataclass(frozen=True)
class Curation:
    """
    One correction a person can make to an entity.

    :param verb: what the form's title and button say
    :param fields: the form's fields, posted at each step
    :param change: makes the change through the core: ``change(memory, entity, fields)``
    :param message: says what changed, after it has: ``message(entity, fields, result)``
    """

    verb: str
    fields: tuple[str, ...]
    change: Change
    message: Callable[[str, dict[str, str], dict[str, Any]], str]


def edit_observation(memory: Memory, name: str, fields: dict[str, str]) -> dict[str, Any]:
    return memory.update_observation(name, fields["old"], fields["new"])


def delete_observation(memory: Memory, name: str, fields: dict[str, str]) -> dict[str, Any]:
    "Delete one observation; the core ignores one that is not there, so the form says so instead."
    text = fields["observation"]
    if text not in entity_view.entity_outline(memory.conn, memory.project, name)["observations"]:
        raise InvalidInput(f"observation: {name} has no observation {text!r}; it may have been edited or deleted meanwhile")
    memory.delete_observations([{"entityName": name, "observations": [text]}])
    return {"entityName": name, "observation": text}


def rename(memory: Memory, name: str, fields: dict[str, str]) -> dict[str, Any]:
    return memory.rename_entity(name, fields["new_name"])


def merge(memory: Memory, name: str, fields: dict[str, str]) -> dict[str, Any]:
    return memory.merge_entity(name, fields["into"])


def delete_relation(memory: Memory, name: str, fields: dict[str, str]) -> dict[str, Any]:
    "Delete one of the entity's relations, named as the ledger names it (``[from, relationType, to]`` in JSON)."
    relations = entity_view.entity_outline(memory.conn, memory.project, name)["relations"]
    chosen = next((r for r in relations if relation_key(r["target"]) == relation_key(fields["relation"])), None)
    if chosen is None:
        raise InvalidInput(f"relation: {name} has no relation {fields['relation']}; choose one of its relations")
    relation = {k: chosen[k] for k in ("from", "to", "relationType")}
    memory.delete_relations([relation])
    return relation


def relation_key(text: str) -> Any:
    "A relation's ledger name, decoded so spelling differences in the JSON do not matter; None if it is not JSON."
    try:
        return json.loads(text)
    except ValueError:
        return None


def relation_text(relation: dict[str, Any]) -> str:
    return f"{relation['from']} —{relation['relationType']}→ {relation['to']}"


CURATIONS = {
    "edit-observation": Curation(
        "Edit an observation", ("old", "new"), edit_observation,
        lambda name, fields, result: f"Edited an observation of {name}.",
    ),
    "delete-observation": Curation(
        "Delete an observation", ("observation",), delete_observation,
        lambda name, fields, result: f"Deleted an observation of {name}.",
    ),
    "rename": Curation(
        "Rename", ("new_name",), rename,
        lambda name, fields, result: (
            f"Renamed {name} to {result['entity']['name']}; {len(result['relations'])} relations follow it. "
            f"{name} stays another name of it, so searching for {name} still finds it."
        ),
    ),
    "merge": Curation(
        "Merge", ("into",), merge,
        lambda name, fields, result: (
            f"Merged {name} into {result['entity']['name']}: {len(result['observations'])} observations and "
            f"{len(result['relations'])} relations moved. {name} is now another name of {result['entity']['name']}."
        ),
    ),
    "delete-relation": Curation(
        "Delete a relation", ("relation",), delete_relation,
        lambda name, fields, result: f"Deleted the relation {relation_text(result)}.",
    ),
}


def entity_path(datasette: Any, project: str, name: str, json: bool = False, moment: dict[str, Any] | None = None) -> str:
    "The path of entity ``name``'s page (or its JSON twin), as of ``moment`` if given."
    path = datasette.urls.path("/-/memory/entity" + (".json" if json else ""))
    query = {"project": project, "name": name, **({"as_of": moment["event_id"]} if moment else {})}
    return f"{path}?{urlencode(query, quote_via=quote)}"


def curation_for(request: Any) -> tuple[str, Curation]:
    "The curation the path names, or :class:`NotFound` listing those there are."
    name = request.url_vars["curation"]
    if name not in CURATIONS:
        raise NotFound(f"curation: there is no {shown(name)}; an entity's curations are {', '.join(CURATIONS)}")
    return name, CURATIONS[name]


def first_fields(curation: Curation, request: Any, entity: dict[str, Any]) -> dict[str, str]:
    """
    The form's fields at first, from the query string: the entity page's links
    name an observation by its place (``index``, counting from 0, since an
    observation may be too long for a URL) and a relation as the ledger does.
    """
    fields = {name: request.args.get(name, "") for name in curation.fields}
    observations = entity["observations"]
    index = request.args.get("index", "")
    chosen = observations[int(index)] if index.isdigit() and int(index) < len(observations) else next(iter(observations), "")
    for name in ("old", "observation"):
        if name in fields:
            fields[name] = fields[name] or chosen
    if "new" in fields:
        fields["new"] = fields["new"] or fields["old"]
    return fields


async def curation_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/entity/<curation>?project=&name=``: the form, the confirmation, or the change itself."
    await viewable_database(datasette, request)
    person = await person_holding(datasette, request, CURATE_ACTION)
    name, curation = curation_for(request)
    project = await chosen_project(datasette, request)
    asked = entity_name(request)
    now_called = await call_memory(datasette, lambda memory: entity_view.current_name(memory.conn, project, asked), project=project)
    if now_called is not None and now_called != asked:  # renamed or merged away meanwhile: say where it went
        if request.method == "POST":
            datasette.add_message(request, stored(f"Not done: {asked} is now called {now_called}.", "plain"), datasette.ERROR)
            return Response.redirect(drafts.form_url(request))
        context = {"curation_name": name, "curation": curation, "project": project, "now_called": now_called}
        return await render(datasette, request, "moved", {**context, "entity": {"name": asked, "entityType": None}})
    entity = await outline(datasette, project, asked)
    context = {"curation_name": name, "curation": curation, "project": project, "entity": entity, "person": person}
    if request.method == "POST":
        posted = await form_fields(request)
        fields = {field: posted.get(field, "") for field in curation.fields}
        if posted.get("step") != "apply":
            return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, fields)))
        return await apply(datasette, request, person, {**context, "fields": fields})
    fields = drafts.kept(datasette, request)
    if fields is None:
        gone = "That confirmation is no longer kept (the server restarted since): fill in the form again." if drafts.asked(request) else None
        return await render(datasette, request, "form", {**context, "fields": first_fields(curation, request, entity), "notice": gone})
    return await rehearse(datasette, request, person, {**context, "fields": fields, "form_url": drafts.form_url(request)})


async def outline(datasette: Any, project: str, name: str) -> dict[str, Any]:
    "The entity as stored, with the names of the project's other entities to merge into."

    def read(memory: Memory) -> dict[str, Any]:
        entity = entity_view.entity_outline(memory.conn, project, name)
        return {**entity, "others": [n for n in entity_view.entity_names(memory.conn, project) if n != name]}

    return await call_memory(datasette, read, project=project)


async def rehearsed(datasette: Any, person: str, context: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    "What the change would return, and the ledger events it would write; all rolled back."
    curation, name, fields = context["curation"], context["entity"]["name"], context["fields"]

    def change(memory: Memory) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        since = entity_view.ledger_head_id(memory.conn)
        result = curation.change(memory, name, fields)
        return result, entity_view.events_since(memory.conn, memory.project, since)

    return await call_memory(datasette, lambda memory: memory.rehearse(change), write=True, project=context["project"], actor=person)


async def rehearse(datasette: Any, request: Any, person: str, context: dict[str, Any]) -> Response:
    "What the change would write, for the person to confirm; the form again, with the reason, if it cannot be made."
    try:
        result, events = await rehearsed(datasette, person, context)
    except (InvalidInput, NotFound) as e:
        return await render(datasette, request, "form", {**context, "error": str(e)}, status=400)
    return await render(datasette, request, "confirm", {**context, "result": result, "events": events})


async def apply(datasette: Any, request: Any, person: str, context: dict[str, Any]) -> Response:
    "Make the change, say what changed, and go to the entity that remains; if it cannot be made now, back to the confirmation."
    name, curation = context["entity"]["name"], context["curation"]
    try:
        result = await call_memory(
            datasette, lambda memory: curation.change(memory, name, context["fields"]), write=True, project=context["project"], actor=person
        )
    except (InvalidInput, NotFound) as e:
        datasette.add_message(request, stored(f"Not done: {e}", "plain"), datasette.ERROR)
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, context["fields"])))
    await datasette.track_event(MemoryCurateEvent(actor=request.actor, curation=context["curation_name"], entity=name))
    # Datasette shows the message as plain text: the names in it carry their marks as text
    datasette.add_message(request, stored(curation.message(name, context["fields"], result), "plain"), datasette.INFO)
    remains = result["entity"]["name"] if "entity" in result else name
    return Response.redirect(entity_path(datasette, context["project"], remains))


async def render(datasette: Any, request: Any, step: str, context: dict[str, Any], status: int = 200) -> Response:
    return await render_page(datasette, request, "memory_curate.html", "entity", {**context, "step": step}, status)
