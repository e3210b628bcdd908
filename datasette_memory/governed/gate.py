"""The human gate: the one way to get a :class:`Reviewer`.

Every person-only act (approve, reject and reopen a claim; record, supersede,
invalidate and revalidate a fact) takes a Reviewer as its first argument and
refuses anything that :func:`reviewer_for_request` did not issue. That function
issues one only when, for a request Datasette authenticated:

- the actor is a person signed in to Datasette, not an API token (no ``token``
  or ``_r`` key on the actor, and no bearer token on the request),
  because an agent's token must never carry the right to decide what is fact;
- Datasette says the actor holds the registered action ``memory-approve``.

There is no argument, default or mode that skips these checks, and no door but
Datasette's has a request to pass in: MCP tools, SQL tools and the CLI cannot
reach a person-only act by accident.
"""

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import MemoryStoreError
from ..core.ledger import Caller
from .person_actions import APPROVE_ACTION


class Permissions(Protocol):
    """What the gate asks of Datasette: whether an actor holds an action."""

    async def allowed(self, *, action: str, actor: dict[str, Any] | None) -> bool: ...


class AuthenticatedRequest(Protocol):
    """What the gate reads of a Datasette request: who it is, and how they authenticated."""

    actor: dict[str, Any] | None
    headers: Mapping[str, str]



class ReviewRequired(MemoryStoreError, PermissionError):
    """A person-only act was attempted without a person holding the approve action; nothing was written."""


@dataclass(frozen=True, eq=False)
class Reviewer:
    """
    A person allowed to govern memory, for one request. Only
    :func:`reviewer_for_request` issues working ones.

    :param actor: the person's Datasette actor id, recorded in the ledger
    """

    actor: str

    @property
    def caller(self) -> Caller:
        "Who the ledger records as acting."
        return Caller(self.actor, None)


_ISSUED: "weakref.WeakSet[Reviewer]" = weakref.WeakSet()


def token_problem(request: AuthenticatedRequest, actor: dict[str, Any], action: str) -> str | None:
    "Why this request's actor is not a signed-in person who could hold ``action``, or None if it is."
    if not actor or actor.get("id") in (None, ""):
        return "no one is signed in"
    if "token" in actor or "_r" in actor:
        return f"actor {actor['id']!r} authenticated with an API token, and tokens never carry {action}"
    if request.headers.get("authorization", "").lower().startswith("bearer "):
        return f"the request carries a bearer token, and tokens never carry {action}"
    return None


async def person_holding(datasette: Permissions, request: AuthenticatedRequest, action: str) -> str:
    """
    The id of the signed-in person making ``request``, if Datasette says they hold ``action``.

    :param datasette: the Datasette instance serving the memory file
    :param request: the request asking for a person-only act
    :param action: ``memory-approve`` or ``memory-curate``
    :raises ReviewRequired: naming what is missing
    """
    actor = request.actor or {}
    problem = token_problem(request, actor, action)
    if problem is None and not await datasette.allowed(action=action, actor=actor):
        problem = f"actor {actor['id']!r} does not hold {action}"
    if problem:
        raise ReviewRequired(
            f"{problem}. This needs a person signed in to Datasette who holds {action} "
            "(grant it under permissions in datasette.yaml, or with serve --approver / --curator); "
            "agents can only propose claims and use their tools"
        )
    return str(actor["id"])


async def holds(datasette: Permissions, request: AuthenticatedRequest, action: str) -> bool:
    "Whether :func:`person_holding` would let ``request`` do ``action``: what a page asks before it offers the act."
    try:
        await person_holding(datasette, request, action)
    except ReviewRequired:
        return False
    return True


async def reviewer_for_request(datasette: Permissions, request: AuthenticatedRequest) -> Reviewer:
    """
    The signed-in person making ``request``, if Datasette says they hold ``memory-approve``.

    :param datasette: the Datasette instance serving the memory file
    :param request: the request asking for a person-only act
    :raises ReviewRequired: naming what is missing; nothing is issued
    """
    reviewer = Reviewer(await person_holding(datasette, request, APPROVE_ACTION))
    _ISSUED.add(reviewer)
    return reviewer


def require_reviewer(reviewer: object) -> Reviewer:
    """
    ``reviewer``, if :func:`reviewer_for_request` issued it in this process.

    :param reviewer: what the caller passed as proof
    :raises ReviewRequired: for anything else, including a hand-made Reviewer
    """
    if not isinstance(reviewer, Reviewer) or reviewer not in _ISSUED:
        raise ReviewRequired(
            "this act needs a Reviewer issued by datasette_memory.governed.gate.reviewer_for_request, "
            f"which checks for a person holding {APPROVE_ACTION} in Datasette; agents can only propose claims"
        )
    return reviewer
