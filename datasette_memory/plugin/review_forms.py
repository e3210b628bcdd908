"""A person's governance acts as forms: fill in, see what will change, confirm, see what changed.

``GET`` an act's URL for its form; a claim or fact the act no longer applies to
(approved meanwhile, say) gets a page saying so instead. Posting the form
(``step=confirm``) keeps its fields as a draft and redirects to the same URL
with ``?draft=``, where the act is rehearsed (it runs and is rolled back) to
show what it would change; confirming (``step=apply``) performs it and
redirects to the claim or fact with a message saying what changed. Every
step is POST-redirect-GET (:mod:`.drafts`), so Back and reload never send a
form twice. Every step needs a signed-in person holding ``memory-approve``;
a token never gets past the gate. Datasette refuses a cross-site POST before
it reaches here.
"""

from dataclasses import dataclass
from typing import Any

from datasette import Response, hookimpl
from datasette.events import Event

from ..core.errors import InvalidInput, MemoryStoreError
from ..governed.gate import Reviewer, reviewer_for_request
from . import drafts
from .acts import ENTRY, Act, applies_now, perform
from .connection import call_memory
from .pages import chosen_project, form_fields, known_project, known_projects, path_id, render_page, viewable_database
from .stored_text import stored
from .subjects import subject_entities
from .times import exact_time


@dataclass
class MemoryActEvent(Event):
    """A person performed a governance act through the forms."""

    name = "memory-act"
    act: str
    target: str


def form_values(posted: dict[str, str], act: Act) -> tuple[str, dict[str, Any]]:
    "``(step, arguments)`` from a posted form; empty optional fields are left out."
    arguments = {name: posted.get(name, "") for name in act.names("required")}
    arguments.update({name: posted[name] for name in act.names("optional") if posted.get(name, "").strip()})
    return posted.get("step", "confirm"), arguments


def draft_fields(posted: dict[str, str], act: Act) -> dict[str, str]:
    "What a draft keeps of a posted form: the act's fields, and the project a new fact is for."
    return {name: posted[name] for name in (*act.names("required"), *act.names("optional"), "project") if name in posted}


async def target_of(datasette: Any, request: Any, kind: str) -> tuple[str, int, dict[str, Any]]:
    "The project, id and current state of the claim or fact in the path."
    id = path_id(request)
    project = await call_memory(datasette, lambda memory: memory.governed.project_of(kind, id))
    item = await call_memory(
        datasette, lambda memory: memory.governed.claim(id) if kind == "claims" else memory.governed.fact(id), project=project
    )
    return project, id, item


@hookimpl
def register_events(datasette: Any) -> list[type[Event]]:
    return [MemoryActEvent]


async def act_page(datasette: Any, request: Any, act: Act) -> Response:
    "``/-/memory/{claims,facts}/<id>/<act>`` in a browser: the form, the confirmation, or the act itself."
    await viewable_database(datasette, request)
    reviewer = await reviewer_for_request(datasette, request)
    kind, act_name = request.url_vars["kind"], request.url_vars["act"]
    project, id, item = await target_of(datasette, request, kind)
    context = {"kind": kind, "act": act, "act_name": act_name, "item": item, "project": project, "arguments": {}}
    if request.method == "POST":
        return await posted(datasette, request, reviewer, act, project, (id,), context)
    if not applies_now(kind, act_name, item):
        return await render(datasette, request, "done", context)
    return await shown(datasette, request, reviewer, act, project, (id,), context)


async def record_fact_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/facts/new``: a person records a fact directly, through the same steps."
    await viewable_database(datasette, request)
    reviewer = await reviewer_for_request(datasette, request)
    projects = await known_projects(datasette)
    project = await chosen_project(datasette, request)
    context = {"kind": "facts", "act": ENTRY, "act_name": "record", "item": None, "project": project, "projects": projects, "arguments": {}}
    if request.method == "POST":
        return await posted(datasette, request, reviewer, ENTRY, project, (), context)
    return await shown(datasette, request, reviewer, ENTRY, project, (), context)


async def posted(
    datasette: Any, request: Any, reviewer: Reviewer, act: Act, project: str, args: tuple[Any, ...], context: dict[str, Any]
) -> Response:
    "A posted form: keep it and show what it will change (confirm), or perform the act (apply); either way, a redirect."
    fields = await form_fields(request)
    step, arguments = form_values(fields, act)
    if step != "apply":
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, draft_fields(fields, act))))
    return await apply(datasette, request, reviewer, act, project, args, {**context, "project": project, "arguments": arguments}, fields)


async def shown(
    datasette: Any, request: Any, reviewer: Reviewer, act: Act, project: str, args: tuple[Any, ...], context: dict[str, Any]
) -> Response:
    "The form, or (for a draft) what the act would change now, rehearsed."
    fields = drafts.kept(datasette, request)
    if fields is None:
        gone = "That confirmation is no longer kept (the server restarted since): fill in the form again." if drafts.asked(request) else None
        return await render(datasette, request, "form", {**context, "notice": gone})
    _, arguments = form_values(fields, act)
    context = {**context, "arguments": arguments, "form_url": drafts.form_url(request)}
    try:
        if context["item"] is None:
            project = await known_project(datasette, fields.get("project") or project, InvalidInput)
            context["project"] = project
        result = await perform(datasette, reviewer, act, project, args, arguments, rehearse=True)
    except InvalidInput as e:
        return await render(datasette, request, "form", {**context, "error": str(e)}, status=400)
    except MemoryStoreError as e:  # changed meanwhile: another person acted first
        return await render(datasette, request, "form", {**context, "error": str(e)}, status=409)
    return await render(datasette, request, "confirm", {**context, "result": result})


async def apply(
    datasette: Any, request: Any, reviewer: Reviewer, act: Act, project: str, args: tuple[Any, ...], context: dict[str, Any],
    fields: dict[str, str],
) -> Response:
    "Perform the act and go to what changed; if it cannot be done now, back to its confirmation, which says why."
    try:
        if context["item"] is None:  # a new fact goes into a project that exists
            project = await known_project(datasette, fields.get("project") or project, InvalidInput)
            context = {**context, "project": project}
        result = await perform(datasette, reviewer, act, project, args, context["arguments"])
    except MemoryStoreError as e:
        datasette.add_message(request, stored(f"Not done: {e}", "plain"), datasette.ERROR)
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, draft_fields(fields, act))))
    await datasette.track_event(MemoryActEvent(actor=request.actor, act=context["act_name"], target=target_name(context, result)))
    # Datasette shows the message as plain text: the statement in it carries its marks as text
    datasette.add_message(request, stored(what_changed(context["act_name"], result), "plain"), datasette.INFO)
    return Response.redirect(result_path(datasette, context, result))


def target_name(context: dict[str, Any], result: dict[str, Any]) -> str:
    "``claim:3`` or ``fact:5``: what the act was on (for a new fact, the fact made)."
    if context["item"] is not None:
        return f"{context['kind'][:-1]}:{context['item']['id']}"
    return f"fact:{result['fact']['id']}"


def result_path(datasette: Any, context: dict[str, Any], result: dict[str, Any]) -> str:
    "Where a person sees what changed: the claim, or the fact the act made or changed."
    if context["kind"] == "claims":
        return datasette.urls.path(f"/-/memory/claims/{context['item']['id']}")
    return datasette.urls.path(f"/-/memory/facts/{result['fact']['id']}")


def statement(item: dict[str, Any]) -> str:
    return f"{item['subject']} · {item['predicate']} · {item['object']}"


def what_changed(act: str, result: dict[str, Any]) -> str:
    "One line for the message after an act."
    fact = result.get("fact")
    if act == "approve":
        return f"Claim #{result['claim']['id']} approved: fact #{fact['id']} holds from {exact_time(fact['valid_from'])} ({statement(fact)})."
    if act in ("reject", "reopen"):
        status = "rejected: its value cannot be proposed again unless a person reopens it" if act == "reject" else "a candidate again"
        return f"Claim #{result['claim']['id']} is {status}."
    if act == "supersede":
        return f"Fact #{result['superseded']['id']} superseded from {exact_time(fact['valid_from'])} by fact #{fact['id']} ({statement(fact)})."
    if act == "invalidate":
        return f"Fact #{fact['id']} stops holding at {exact_time(fact['valid_to'])}."
    if act == "revalidate":
        return f"Fact #{fact['id']} holds again, with no end."
    return f"Fact #{fact['id']} recorded: {statement(fact)}, from {exact_time(fact['valid_from'])}."


async def render(datasette: Any, request: Any, step: str, context: dict[str, Any], status: int = 200) -> Response:
    "The act's page at ``step`` (form, confirm, done), its statements' subjects linked to their entities."
    shown = [context["item"], (context.get("result") or {}).get("fact")]
    entities = await subject_entities(datasette, context["project"], [s["subject"] for s in shown if s])
    return await render_page(datasette, request, "memory_act.html", "review", {**context, "step": step, "entities": entities}, status)
