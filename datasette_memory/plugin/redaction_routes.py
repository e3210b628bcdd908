"""``/-/memory/redact``: a person removes a stored text (a leaked secret) from every copy memory keeps.

Reached from an observation on the entity page (``?project=&name=&index=``) or
from an event on the ledger timeline (``?event=``). ``GET`` shows what is stored
there and the form: the text to remove (a whole observation, or the part of it
that is the secret), a reason, and whether to delete the older snapshots that
still hold it. Posting the form (``step=confirm``) keeps it as a draft and
redirects here with ``?draft=``, which says what the redaction will change;
confirming (``step=apply``) makes it as that person
(:meth:`~datasette_memory.memory.Memory.redact`) and goes back where the person
came from with a message saying what changed and what still holds the text.
Every step is POST-redirect-GET (:mod:`.drafts`) and needs a signed-in person
holding ``memory-approve``; a token never gets past the gate. The page has no
JSON twin: a redaction is a person's act.
"""

import json
from typing import Any
from urllib.parse import quote, urlencode

from datasette import Response, hookimpl

from ..core import redacted
from ..core.errors import InvalidInput, NotFound
from ..history import redaction
from ..governed.gate import reviewer_for_request
from ..memory import Memory
from . import drafts
from .connection import call_memory
from .curation_forms import entity_path
from .error_pages import handled
from .pages import chosen_project, form_fields, render_page, viewable_database, wants_json
from .review_forms import MemoryActEvent
from .stored_text import stored

FIELDS = ("text", "reason", "delete_older")


async def subject(datasette: Any, request: Any) -> dict[str, Any]:
    """
    What the person redacts from: ``{project, target, kind, texts, back}``, an
    entity's observations (``?name=``) or an event's strings (``?event=``).
    """
    event = request.args.get("event") or ""
    if event:
        if not event.isdigit():
            raise InvalidInput(f"event: must be a ledger event's number, got {event[:40]!r}")

        def read_event(memory: Memory) -> tuple[Any, ...] | None:
            return memory.conn.execute("SELECT project, kind, target, old, new FROM events WHERE id = ?", [int(event)]).fetchone()

        row = await call_memory(datasette, read_event)
        if row is None:
            raise NotFound(f"event: the ledger has no event {event}")
        project, kind, target, old, new = row
        texts = [text for value in (old, new) if value for text in dict.fromkeys(redacted.strings(json.loads(value)))
                 if text not in (target, kind)]
        back = datasette.urls.path("/-/memory/ledger") + f"?before={int(event) + 1}#event-{event}"
        return {"project": project, "target": f"event {event}", "kind": kind, "name": target, "texts": texts, "back": back,
                "event": int(event)}
    project = await chosen_project(datasette, request)
    name = request.args.get("name") or ""
    if not name:
        raise InvalidInput("say what to redact from: ?name= (an entity, from its page) or ?event= (from the ledger timeline)")

    def read_entity(memory: Memory) -> list[str] | None:
        entity = memory.conn.execute("SELECT id FROM entities WHERE project = ? AND name = ?", [project, name]).fetchone()
        if entity is None:
            return None
        return [row[0] for row in memory.conn.execute("SELECT content FROM observations WHERE entity_id = ? ORDER BY id", [entity[0]])]

    texts = await call_memory(datasette, read_entity, project=project)
    if texts is None:
        raise NotFound(f"name: project {project} has no entity {name}")
    return {"project": project, "target": name, "kind": None, "name": name, "texts": texts,
            "back": entity_path(datasette, project, name), "event": None}


def first_fields(request: Any, about: dict[str, Any]) -> dict[str, str]:
    "The form at first: the observation the entity page's link names (``?index=``) as the text to remove."
    index = request.args.get("index", "")
    texts = about["texts"]
    chosen = texts[int(index)] if index.isdigit() and int(index) < len(texts) else ""
    return {"text": chosen, "reason": "", "delete_older": ""}


def masked(text: str) -> str:
    "The text to remove, as the confirmation shows it: its start and its length, not the secret whole."
    return f"{text[:4]}… ({len(text):,} characters)" if len(text) > 8 else f"{len(text)} characters"


async def redact_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/redact``: the form, the confirmation, or the redaction itself."
    await viewable_database(datasette, request)
    if wants_json(request):
        raise InvalidInput("a redaction is a person's act, on the form at /-/memory/redact (signed in to Datasette); "
                           "it has no JSON twin")
    reviewer = await reviewer_for_request(datasette, request)
    about = await subject(datasette, request)
    context = {"about": about, "project": about["project"]}
    if request.method == "POST":
        posted = await form_fields(request)
        fields = {name: posted.get(name, "") for name in FIELDS}
        if posted.get("step") != "apply":
            return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, fields)))
        return await apply(datasette, request, reviewer, about, fields)
    fields = drafts.kept(datasette, request)
    if fields is None:
        gone = "That confirmation is no longer kept (the server restarted since): fill in the form again." if drafts.asked(request) else None
        return await render(datasette, request, {**context, "step": "form", "fields": first_fields(request, about), "notice": gone})
    try:
        redaction.checked_arguments(fields["text"], fields["reason"])

        def look(memory: Memory) -> dict[str, Any]:
            return {**redaction.preview(memory.conn, about["project"], fields["text"]),
                    "older_copies": redaction.older_copies(memory.conn, memory.config.snapshot_dir, fields["text"], delete=False),
                    "shared": memory.conn.execute("SELECT 1 FROM memory_sync_projects WHERE project = ?",
                                                  [about["project"]]).fetchone() is not None}

        found = await call_memory(datasette, look, project=about["project"])
    except InvalidInput as e:
        return await render(datasette, request, {**context, "step": "form", "fields": fields, "error": str(e)}, 400)
    return await render(datasette, request, {**context, "step": "confirm", "fields": fields, "found": found,
                                             "shown_text": masked(fields["text"]), "form_url": drafts.form_url(request)})


async def apply(datasette: Any, request: Any, reviewer: Any, about: dict[str, Any], fields: dict[str, str]) -> Response:
    "Redact, say what changed and what still holds the text, and go back where the person came from."
    try:
        done = await call_memory(
            datasette,
            lambda memory: memory.redact(reviewer, fields["text"], fields["reason"], about["target"],
                                         delete_older_copies=fields["delete_older"] == "on"),
            write=True, project=about["project"], actor=reviewer.actor,
        )
    except InvalidInput as e:
        datasette.add_message(request, stored(f"Not done: {e}", "plain"), datasette.ERROR)
        return Response.redirect(drafts.draft_url(request, drafts.keep(datasette, request, fields)))
    await datasette.track_event(MemoryActEvent(actor=request.actor, act="redact", target=f"event:{done['event']}"))
    datasette.add_message(request, stored(said(done), "plain"), datasette.INFO)
    back = about["back"]
    if about["event"] is None:
        return Response.redirect(back)
    return Response.redirect(datasette.urls.path("/-/memory/ledger") + "?" + urlencode({"kind": redacted.KIND}, quote_via=quote))


def said(done: dict[str, Any]) -> str:
    "What a redaction changed, in a few sentences for the page's message."
    replaced = done["replaced"]
    parts = [f"Redacted, recorded as ledger event #{done['event']}: the text is gone from {replaced['observations']} "
             f"observation{'s' if replaced['observations'] != 1 else ''}, {replaced['records']} record"
             f"{'s' if replaced['records'] != 1 else ''} of claims, facts and checkpoints, {replaced['events']} event"
             f"{'s' if replaced['events'] != 1 else ''} of this machine and {replaced['foreign_events']} that other machines sent, "
             "and from the search indexes; the file was rewritten so no free page keeps it."]
    if done["embedded"] is not None:
        parts.append(f"{done['embedded']} entit{'ies' if done['embedded'] != 1 else 'y'} re-embedded.")
    if done["file"]["replicating"]:
        parts.append("The file is being replicated: Litestream checkpoints its log, and the replica keeps copies from before; "
                     "datasette-memory redactions lists them, and deletes them with replication stopped.")
    elif not done["file"]["log_truncated"]:
        parts.append("The write-ahead log could not be truncated while a reader held it: it is rewritten by the next checkpoint.")
    copies = done["older_copies"]
    if copies:
        deleted = [c for c in copies if c["deleted"]]
        kept = [c for c in copies if not c["deleted"]]
        if deleted:
            parts.append(f"Deleted {len(deleted)} older snapshot{'s' if len(deleted) != 1 else ''} that held it.")
        if kept:
            parts.append(f"{len(kept)} older snapshot{'s' if len(kept) != 1 else ''} still hold{'s' if len(kept) == 1 else ''} it: "
                         + ", ".join(c["path"] for c in kept) + ".")
    for place in done["remaining"]:
        parts.append(f"Still in {place['table']} ({place['column']}): {place['rows']} row{'s' if place['rows'] != 1 else ''}, "
                     "records a redaction does not rewrite.")
    parts.append("If the project is shared, each peer applies the redaction when it next syncs.")
    return " ".join(parts)


async def render(datasette: Any, request: Any, context: dict[str, Any], status: int = 200) -> Response:
    return await render_page(datasette, request, "memory_redact.html", "ledger", context, status)


@hookimpl(specname="register_routes")
def register_redaction_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory/redact$", handled(redact_page))]
