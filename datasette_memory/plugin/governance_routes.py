"""JSON endpoints for the governed tier, under ``/-/memory``.

Reads (claims, facts, contradictions, context packs) need ``view-database`` on
the memory database, like the rest of Datasette's JSON API, so scripts can use
API tokens. Governance acts need a :class:`~datasette_memory.governed.gate.Reviewer`:
a signed-in person holding ``memory-approve``, never a token.
"""

import json

from datasette import Response, hookimpl

from ..core.errors import InvalidInput, NotFound
from ..core.validation import DEFAULT_PROJECT, type_name
from ..governed.gate import reviewer_for_request
from .connection import call_memory
from .json_api import int_arg, json_errors, read_memory

# (kind, act): (Memory method, required body fields, optional body fields)
ACTS = {
    ("claims", "approve"): ("approve_claim", ("rationale",), ("valid_from",)),
    ("claims", "reject"): ("reject_claim", ("rationale",), ()),
    ("claims", "reopen"): ("reopen_claim", ("rationale",), ()),
    ("facts", "supersede"): ("supersede_fact", ("object", "rationale"), ("effective",)),
    ("facts", "invalidate"): ("invalidate_fact", ("rationale",), ("effective",)),
    ("facts", "revalidate"): ("revalidate_fact", ("rationale",), ()),
}
ENTRY = ("record_fact", ("subject", "predicate", "object", "rationale"), ("valid_from", "valid_to"))
MAX_ID = 2**63 - 1


async def body_arguments(request, required: tuple, optional: tuple) -> dict:
    "The JSON object posted, checked against the fields an act takes."
    try:
        body = json.loads(await request.post_body() or b"null")
    except ValueError:
        raise InvalidInput("body: is not valid JSON; send a JSON object such as {\"rationale\": \"...\"}")
    if not isinstance(body, dict):
        raise InvalidInput(f"body: must be a JSON object, got {type_name(body)}")
    allowed = required + optional + ("project",)
    for name in body:
        if name not in allowed:
            raise InvalidInput(f"{name}: unknown field; this act takes {', '.join(allowed)}")
    for name in required:
        if name not in body:
            raise InvalidInput(f"{name}: required field is missing")
    return body


def path_id(request) -> int:
    value = int(request.url_vars["id"])
    if value > MAX_ID:
        raise NotFound(f"no claim or fact has id {value}")
    return value


def method_not_allowed(request, allowed: str):
    if request.method != allowed:
        return Response.json({"ok": False, "error": f"use {allowed} for this endpoint"}, status=405)


async def perform(datasette, request, required: tuple, optional: tuple, method: str, status: int = 200) -> Response:
    """
    Check for a person holding memory-approve first (403), then the body (400),
    then run ``method`` on Datasette's write thread as that person.
    """
    reviewer = await reviewer_for_request(datasette, request)
    arguments = await body_arguments(request, required, optional)
    args = (path_id(request),) if "id" in request.url_vars else ()
    project = arguments.pop("project", None) or request.args.get("project") or DEFAULT_PROJECT
    result = await call_memory(
        datasette,
        lambda memory: getattr(memory.governed, method)(reviewer, *args, **arguments),
        write=True,
        project=project,
        actor=reviewer.actor,
    )
    return Response.json({"ok": True, **result}, status=status)


@json_errors
async def governance_act(datasette, request):
    "``POST /-/memory/{claims,facts}/<id>/<act>``: a person's governance act on one claim or fact."
    if problem := method_not_allowed(request, "POST"):
        return problem
    kind, act = request.url_vars["kind"], request.url_vars["act"]
    if (kind, act) not in ACTS:
        acts = ", ".join(a for k, a in ACTS if k == kind)
        raise NotFound(f"{kind} have no act {act!r}; the acts are {acts}")
    method, required, optional = ACTS[(kind, act)]
    return await perform(datasette, request, required, optional, method)


@json_errors
async def enter_fact(datasette, request):
    "``POST /-/memory/facts``: a person enters a fact directly."
    if problem := method_not_allowed(request, "POST"):
        return problem
    method, required, optional = ENTRY
    return await perform(datasette, request, required, optional, method, status=201)


@json_errors
async def claims_json(datasette, request):
    "``GET /-/memory/claims.json?status=&project=&limit=``"
    status, limit = request.args.get("status"), int_arg(request, "limit", 100)
    found = await read_memory(datasette, request, lambda memory: memory.governed.list_claims(status, limit))
    return Response.json({"ok": True, "claims": found})


@json_errors
async def facts_json(datasette, request):
    "``GET /-/memory/facts.json?subject=&predicate=&as_of_valid=&as_of_recorded=&project=``"
    names = ("subject", "predicate", "as_of_valid", "as_of_recorded")
    arguments = {name: request.args.get(name) for name in names}
    return Response.json({"ok": True, **(await read_memory(datasette, request, lambda memory: memory.governed.get_facts(**arguments)))})


@json_errors
async def contradictions_json(datasette, request):
    "``GET /-/memory/contradictions.json?project=``"
    found = await read_memory(datasette, request, lambda memory: memory.governed.contradictions())
    return Response.json({"ok": True, "contradictions": found})


@json_errors
async def context_pack_json(datasette, request):
    "``GET /-/memory/context-pack.json?q=&budget=&include_proposed=&project=``"
    query, budget = request.args.get("q", ""), int_arg(request, "budget", 4000)
    include_proposed = request.args.get("include_proposed", "1") not in ("0", "false", "no")
    pack = await read_memory(datasette, request, lambda memory: memory.governed.build_context_pack(query, budget, include_proposed))
    return Response.json({"ok": True, **pack})


@hookimpl(specname="register_routes")
def register_governance_routes(datasette):
    return [
        (r"^/-/memory/(?P<kind>claims|facts)/(?P<id>\d+)/(?P<act>[a-z]+)$", governance_act),
        (r"^/-/memory/facts$", enter_fact),
        (r"^/-/memory/claims\.json$", claims_json),
        (r"^/-/memory/facts\.json$", facts_json),
        (r"^/-/memory/contradictions\.json$", contradictions_json),
        (r"^/-/memory/context-pack\.json$", context_pack_json),
    ]
