"""A person's governance acts as forms: fill in, see what will change, confirm, see what changed.

``GET`` an act's URL for its form. Posting the form (``step=confirm``)
rehearses the act (it runs and is rolled back) and shows what it would
change; confirming (``step=apply``) performs it and redirects to the claim
or fact with a message saying what changed. Every step needs a signed-in
person holding ``memory-approve``; a token never gets past the gate.
Datasette refuses a cross-site POST before it reaches here.
"""

from dataclasses import dataclass
from typing import Any

from datasette import Response, hookimpl
from datasette.events import Event

from ..core.errors import InvalidInput, MemoryStoreError
from ..governed.gate import Reviewer, reviewer_for_request
from .acts import ENTRY, Act, perform
from .connection import call_memory
from .pages import form_fields, known_project, known_projects, path_id, render_page, viewable_database
from .stored_text import stored


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
    kind = request.url_vars["kind"]
    project, id, item = await target_of(datasette, request, kind)
    context = {"kind": kind, "act": act, "act_name": request.url_vars["act"], "item": item, "project": project, "arguments": {}}
    if request.method != "POST":
        return await render(datasette, request, "form", context)
    step, arguments = form_values(await form_fields(request), act)
    return await advance(datasette, request, reviewer, act, step, project, (id,), {**context, "arguments": arguments})


async def record_fact_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/facts/new``: a person records a fact directly, through the same steps."
    await viewable_database(datasette, request)
    reviewer = await reviewer_for_request(datasette, request)
    projects = await known_projects(datasette)
    project = request.args.get("project") or projects[0]
    context = {"kind": "facts", "act": ENTRY, "act_name": "record", "item": None, "project": project, "projects": projects, "arguments": {}}
    if request.method != "POST":
        return await render(datasette, request, "form", context)
    posted = await form_fields(request)
    step, arguments = form_values(posted, ENTRY)
    project = await known_project(datasette, posted.get("project") or project, InvalidInput)
    return await advance(datasette, request, reviewer, ENTRY, step, project, (), {**context, "project": project, "arguments": arguments})


async def advance(
    datasette: Any, request: Any, reviewer: Reviewer, act: Act, step: str, project: str, args: tuple[Any, ...], context: dict[str, Any]
) -> Response:
    "Rehearse and show what will change (confirm), or perform it and go to the result (apply)."
    rehearse = step != "apply"
    try:
        result = await perform(datasette, reviewer, act, project, args, context["arguments"], rehearse=rehearse)
    except InvalidInput as e:
        return await render(datasette, request, "form", {**context, "error": str(e)}, status=400)
    except MemoryStoreError as e:  # changed meanwhile: another person acted first
        return await render(datasette, request, "form", {**context, "error": str(e)}, status=409)
    if rehearse:
        return await render(datasette, request, "confirm", {**context, "result": result})
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
        return f"Claim #{result['claim']['id']} approved: fact #{fact['id']} holds from {fact['valid_from']} ({statement(fact)})."
    if act in ("reject", "reopen"):
        status = "rejected: its value cannot be proposed again unless a person reopens it" if act == "reject" else "a candidate again"
        return f"Claim #{result['claim']['id']} is {status}."
    if act == "supersede":
        return f"Fact #{result['superseded']['id']} superseded from {fact['valid_from']} by fact #{fact['id']} ({statement(fact)})."
    if act == "invalidate":
        return f"Fact #{fact['id']} stops holding at {fact['valid_to']}."
    if act == "revalidate":
        return f"Fact #{fact['id']} holds again, with no end."
    return f"Fact #{fact['id']} recorded: {statement(fact)}, from {fact['valid_from']}."


async def render(datasette: Any, request: Any, step: str, context: dict[str, Any], status: int = 200) -> Response:
    return await render_page(datasette, request, "memory_act.html", "review", {**context, "step": step}, status)
