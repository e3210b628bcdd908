"""The review pages: the queue of pending claims, one claim, one fact, each with its JSON twin.

Reading them needs ``view-database``; the links to act on a claim or fact
appear for a signed-in person Datasette says holds ``memory-approve`` (never
for a token), and the forms
themselves check again (:mod:`.review_forms`).
"""

from typing import Any

from datasette import Response, hookimpl

from ..core.errors import NotFound
from ..governed.gate import holds
from ..governed.person_actions import APPROVE_ACTION
from . import review_forms
from .acts import ACTS, applies_now
from .connection import call_memory
from .error_pages import handled
from .pages import chosen_project, int_arg, known_projects, respond, viewable_database
from .subjects import subject_entities


async def review_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/review``: the project's pending claims with what each contradicts, and the facts that hold now."
    await viewable_database(datasette, request)
    project = await chosen_project(datasette, request)
    limit = int_arg(request, "limit", 100)

    def read(memory: Any) -> dict[str, Any]:
        return {**memory.governed.review_queue(limit), "facts": memory.governed.facts_now()}

    data = {"project": project, "projects": await known_projects(datasette), **(await call_memory(datasette, read, project=project))}
    data["entities"] = await subject_entities(datasette, project, [item["subject"] for item in data["claims"] + data["facts"]])
    return await respond(datasette, request, "review", "memory_review.html", {**data, "may_approve": await holds(datasette, request, APPROVE_ACTION)})


async def item_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/claims/<id>`` and ``/-/memory/facts/<id>``: one claim or fact whole, and the acts on it."
    await viewable_database(datasette, request)
    kind = request.url_vars["kind"]
    project, id, item = await review_forms.target_of(datasette, request, kind)
    acts = [name for (k, name) in ACTS if k == kind and applies_now(kind, name, item)]
    data = {"kind": kind, "project": project, kind[:-1]: item, "acts": acts, "may_approve": await holds(datasette, request, APPROVE_ACTION),
            "entities": await subject_entities(datasette, project, [item["subject"]])}
    if kind == "facts":
        data["provenance"] = await call_memory(datasette, lambda memory: fact_provenance(memory, id), project=project)
    return await respond(datasette, request, "review", f"memory_{kind[:-1]}.html", data)


def fact_provenance(memory: Any, id: int) -> dict[str, Any] | None:
    "Who recorded fact ``id`` and why, the claim and evidence approved, each change to its validity; None if the ledger does not say."
    try:
        return memory.provenance(fact=id)
    except NotFound:
        return None


@hookimpl(specname="register_routes")
def register_review_routes(datasette: Any) -> list[tuple[str, Any]]:
    routes = [
        (r"^/-/memory/review(\.(?P<format>json))?$", review_page),
        (r"^/-/memory/facts/new$", review_forms.record_fact_page),
        (r"^/-/memory/(?P<kind>claims|facts)/(?P<id>[^/]+?)(\.(?P<format>json))?$", item_page),
    ]
    return [(pattern, handled(view)) for pattern, view in routes]

