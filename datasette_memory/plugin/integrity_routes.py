"""``/-/memory/integrity``: the file against the records kept beside it, and a person's acknowledgement of what they found.

``GET`` shows (and ``.json`` gives) what the head witness and the last clean
check say of the file, with every divergence the witness recorded: those
waiting for a person first, then those acknowledged (by whom, when and why).
A signed-in person holding ``memory-approve`` acknowledges the waiting ones
with a reason, as the review forms do an act: posting the form
(``step=confirm``) keeps it as a draft and redirects here with ``?draft=``,
which shows what will be acknowledged; confirming (``step=apply``) records it
and comes back here with a message. Every step is POST-redirect-GET
(:mod:`.drafts`). A token never gets past the gate.
"""

from typing import Any

from datasette import Response, hookimpl

from ..core.errors import InvalidInput, MemoryStoreError
from ..core.evidence import state
from ..governed.gate import holds, reviewer_for_request
from ..governed.person_actions import APPROVE_ACTION
from . import drafts
from .connection import call_memory
from .error_pages import handled
from .pages import form_fields, render_page, respond, viewable_database, wants_json
from .review_forms import MemoryActEvent
from .stored_text import stored


async def integrity_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/integrity``: the report, the divergences, and the acknowledgement form for a person who may act."
    db = await viewable_database(datasette, request)
    data = {**(await db.execute_fn(state)), "can_acknowledge": await holds(datasette, request, APPROVE_ACTION)}
    if request.method != "POST":
        if drafts.asked(request) and not wants_json(request):
            return await confirmation(datasette, request, data)
        return await respond(datasette, request, "integrity", "memory_integrity.html", data)
    if wants_json(request):
        raise InvalidInput("a divergence is acknowledged by a person on the page's form: POST /-/memory/integrity, "
                           "signed in to Datasette; the JSON twin only reads")
    reviewer = await reviewer_for_request(datasette, request)
    posted = await form_fields(request)
    reason = posted.get("reason", "")
    if posted.get("step", "confirm") != "apply":
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, {"reason": reason})))
    try:
        result = await call_memory(datasette, lambda memory: memory.acknowledge_divergences(reviewer, reason), write=True,
                                   actor=reviewer.actor)
    except MemoryStoreError as e:
        datasette.add_message(request, stored(f"Not done: {e}", "plain"), datasette.ERROR)
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, {"reason": reason})))
    count = len(result["acknowledged"])
    await datasette.track_event(MemoryActEvent(actor=request.actor, act="acknowledge", target=f"event:{result['event']['id']}"))
    datasette.add_message(request, f"Acknowledged {count} divergence{'s' if count != 1 else ''}, recorded as ledger event "
                          f"#{result['event']['id']}; later checks compare the file as it is now.", datasette.INFO)
    return Response.redirect(datasette.urls.path("/-/memory/integrity"))


async def confirmation(datasette: Any, request: Any, data: dict[str, Any]) -> Response:
    "``?draft=``: what will be acknowledged, for a person who may; the page as it is, saying why, when nothing can be."
    await reviewer_for_request(datasette, request)
    fields = drafts.kept(datasette, request)
    if fields is None:
        return await render(datasette, request, {**data, "notice": "That confirmation is no longer kept (the server restarted "
                                                 "since): fill in the form again."})
    reason = fields.get("reason", "")
    if not data["waiting"]:
        return await render(datasette, request, {**data, "notice": "No divergence waits for a person now: there is nothing to acknowledge."})
    if not reason.strip():
        return await render(datasette, request, {**data, "reason": reason, "error": "reason: say why, for whoever reads the ledger later"}, 400)
    return await render(datasette, request, {**data, "reason": reason, "step": "confirm"})


async def render(datasette: Any, request: Any, context: dict[str, Any], status: int = 200) -> Response:
    return await render_page(datasette, request, "memory_integrity.html", "integrity", context, status)


@hookimpl(specname="register_routes")
def register_integrity_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory/integrity(\.(?P<format>json))?$", handled(integrity_page))]
