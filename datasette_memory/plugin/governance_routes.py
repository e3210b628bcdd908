"""The governed tier's JSON API, under ``/-/memory``: reads for scripts, acts for a signed-in person.

Reads (claims, facts, contradictions, context packs) need ``view-database`` on
the memory database, like the rest of Datasette's JSON API, so scripts can use
API tokens. Acts take a JSON body and need a signed-in person holding
``memory-approve``, never a token (see :mod:`.acts`). The same act URLs serve
people's forms (:mod:`.review_forms`) when a browser asks for them.
"""

import json
from typing import Any

from datasette import Response, hookimpl

from ..core.errors import InvalidInput
from ..core.validation import DEFAULT_PROJECT, type_name
from ..governed.gate import reviewer_for_request
from . import review_forms
from .acts import ENTRY, Act, act_for, perform
from .error_pages import WrongMethod, for_a_person, handled
from .pages import int_arg, path_id, read_memory


async def body_arguments(request: Any, act: Act) -> dict[str, Any]:
    "The JSON object posted, checked against the fields the act takes."
    try:
        body = json.loads(await request.post_body() or b"null")
    except ValueError:
        raise InvalidInput("body: is not valid JSON; send a JSON object such as {\"rationale\": \"...\"}")
    if not isinstance(body, dict):
        raise InvalidInput(f"body: must be a JSON object, got {type_name(body)}")
    allowed = act.names("required") + act.names("optional") + ("project",)
    for name in body:
        if name not in allowed:
            raise InvalidInput(f"{name}: unknown field; this act takes {', '.join(allowed)}")
    for name in act.names("required"):
        if name not in body:
            raise InvalidInput(f"{name}: required field is missing")
    return body


async def json_act(datasette: Any, request: Any, act: Act, args: tuple[Any, ...], status: int = 200) -> Response:
    """
    Check for a person holding memory-approve first (403), then the body (400),
    then perform the act as that person.
    """
    reviewer = await reviewer_for_request(datasette, request)
    arguments = await body_arguments(request, act)
    project = arguments.pop("project", None) or request.args.get("project") or DEFAULT_PROJECT
    return Response.json({"ok": True, **(await perform(datasette, reviewer, act, project, args, arguments))}, status=status)


def method_not_allowed(form: str) -> WrongMethod:
    "The error for a GET where the JSON API takes a POST: a person is pointed to the form that does the same."
    return WrongMethod(f"this endpoint takes a POST with a JSON body; a person does the same with the form at {form}")


async def governance_act(datasette: Any, request: Any) -> Response:
    "``/-/memory/{claims,facts}/<id>/<act>``: a person's act on one claim or fact; a form in a browser."
    act = act_for(request.url_vars["kind"], request.url_vars["act"])
    if for_a_person(request):
        return await review_forms.act_page(datasette, request, act)
    if request.method != "POST":
        raise method_not_allowed(request.path)
    return await json_act(datasette, request, act, (path_id(request),))


async def enter_fact(datasette: Any, request: Any) -> Response:
    "``POST /-/memory/facts``: a person enters a fact directly."
    if request.method != "POST":
        raise method_not_allowed(datasette.urls.path("/-/memory/facts/new"))
    return await json_act(datasette, request, ENTRY, (), status=201)


async def claims_json(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/claims.json?status=&project=&limit=``"
    status, limit = request.args.get("status"), int_arg(request, "limit", 100)
    found = await read_memory(datasette, request, lambda memory: memory.governed.list_claims(status, limit))
    return Response.json({"ok": True, "claims": found})


async def facts_json(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/facts.json?subject=&predicate=&as_of_valid=&as_of_recorded=&project=``"
    names = ("subject", "predicate", "as_of_valid", "as_of_recorded")
    arguments = {name: request.args.get(name) for name in names}
    return Response.json({"ok": True, **(await read_memory(datasette, request, lambda memory: memory.governed.get_facts(**arguments)))})


async def contradictions_json(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/contradictions.json?project=``"
    found = await read_memory(datasette, request, lambda memory: memory.governed.contradictions())
    return Response.json({"ok": True, "contradictions": found})


async def context_pack_json(datasette: Any, request: Any) -> Response:
    "``GET /-/memory/context-pack.json?q=&budget=&include_proposed=&project=``"
    query, budget = request.args.get("q", ""), int_arg(request, "budget", 4000)
    include_proposed = request.args.get("include_proposed", "1") not in ("0", "false", "no")
    pack = await read_memory(datasette, request, lambda memory: memory.governed.build_context_pack(query, budget, include_proposed))
    return Response.json({"ok": True, **pack})


@hookimpl(specname="register_routes")
def register_governance_routes(datasette: Any) -> list[tuple[str, Any]]:
    routes = [
        (r"^/-/memory/(?P<kind>claims|facts)/(?P<id>[^/]+)/(?P<act>[^/]+)$", governance_act),
        (r"^/-/memory/facts$", enter_fact),
        (r"^/-/memory/claims\.json$", claims_json),
        (r"^/-/memory/facts\.json$", facts_json),
        (r"^/-/memory/contradictions\.json$", contradictions_json),
        (r"^/-/memory/context-pack\.json$", context_pack_json),
    ]
    return [(pattern, handled(view)) for pattern, view in routes]
