"""A person's governance acts, as the JSON API and the review forms both perform them.

Each act is a method of the governed tier taking a
:class:`~datasette_memory.governed.gate.Reviewer` first, which only
:func:`~datasette_memory.governed.gate.reviewer_for_request` issues: a signed-in
person holding ``memory-approve``, never a token. :func:`perform` runs it as
that person on Datasette's write thread; with ``rehearse`` it runs it in a
transaction that is rolled back, so a person can see what it will change first.
"""

from dataclasses import dataclass
from typing import Any

from ..core.errors import NotFound
from ..governed.gate import Reviewer
from .connection import call_memory
from .pages import shown


@dataclass(frozen=True)
class Field:
    """One field an act takes, as a form shows it."""

    name: str
    label: str
    help: str = ""
    multiline: bool = False


RATIONALE = Field("rationale", "Rationale", "Why: kept in the ledger, shown to whoever reads this later", multiline=True)
TIME_HELP = "ISO 8601, such as 2025-03-01 or 2025-03-01T09:30:00Z (UTC if no offset)"


@dataclass(frozen=True)
class Act:
    """
    One governance act.

    :param method: the governed tier's method
    :param verb: what the form's button says
    :param required: fields it needs
    :param optional: fields it may take
    """

    method: str
    verb: str
    required: tuple[Field, ...]
    optional: tuple[Field, ...] = ()

    def names(self, part: str) -> tuple[str, ...]:
        return tuple(f.name for f in getattr(self, part))


ACTS = {
    ("claims", "approve"): Act("approve_claim", "Approve", (RATIONALE,), (Field("valid_from", "Valid from", "When the fact starts to hold; default the claim's time, else now. " + TIME_HELP),)),
    ("claims", "reject"): Act("reject_claim", "Reject", (RATIONALE,)),
    ("claims", "reopen"): Act("reopen_claim", "Reopen", (RATIONALE,)),
    ("facts", "supersede"): Act("supersede_fact", "Supersede", (Field("object", "New value", "What holds instead"), RATIONALE), (Field("effective", "Effective", "When the new value starts to hold; default now. " + TIME_HELP),)),
    ("facts", "invalidate"): Act("invalidate_fact", "Invalidate", (RATIONALE,), (Field("effective", "Effective", "When it stops holding; default now, a future time schedules it. " + TIME_HELP),)),
    ("facts", "revalidate"): Act("revalidate_fact", "Revalidate", (RATIONALE,)),
}
ENTRY = Act(
    "record_fact",
    "Record",
    (Field("subject", "Subject", "What it is about, such as auth-service"), Field("predicate", "Predicate", "The property, such as 'uses database'"),
     Field("object", "Value", "Such as 'postgres 16'"), RATIONALE),
    (Field("valid_from", "Valid from", "Default now. " + TIME_HELP), Field("valid_to", "Valid to", "Default no end. " + TIME_HELP)),
)


def applies_now(kind: str, act: str, item: dict[str, Any]) -> bool:
    "Whether ``act`` applies to the claim or fact as it stands (the core checks again)."
    if kind == "claims":
        return item["status"] == ("rejected" if act == "reopen" else "candidate")
    return (item["valid_to"] is not None) == (act == "revalidate")


def act_for(kind: str, name: str) -> Act:
    "The act ``name`` on ``kind``, or :class:`NotFound` listing the acts there are."
    if (kind, name) not in ACTS:
        acts = ", ".join(a for k, a in ACTS if k == kind)
        raise NotFound(f"{kind} have no act {shown(name)}; the acts are {acts}")
    return ACTS[(kind, name)]


async def perform(
    datasette: Any, reviewer: Reviewer, act: Act, project: str, args: tuple[Any, ...], arguments: dict[str, Any], rehearse: bool = False
) -> dict[str, Any]:
    """
    Run ``act`` as ``reviewer`` on Datasette's write thread.

    :param args: the claim or fact id, for acts on one
    :param arguments: the act's fields
    :param rehearse: run it in a transaction that is rolled back: what it would change, nothing written
    """

    def run(memory: Any) -> dict[str, Any]:
        return getattr(memory.governed, act.method)(reviewer, *args, **arguments)

    function = (lambda memory: memory.rehearse(run)) if rehearse else run
    return await call_memory(datasette, function, write=True, project=project, actor=reviewer.actor)
