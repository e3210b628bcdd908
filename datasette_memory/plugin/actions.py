"""The actions datasette-memory registers with Datasette's permission system: what only a person may do."""

from typing import Any

from datasette import hookimpl
from datasette.permissions import Action

from ..governed.person_actions import APPROVE_ACTION, CURATE_ACTION


@hookimpl(specname="register_actions")
def register_person_actions(datasette: Any) -> list[Action]:
    return [
        Action(
            name=APPROVE_ACTION,
            abbr="mapr",
            description=(
                "Approve, reject and reopen claims; enter, supersede, invalidate and revalidate facts. "
                "Only a signed-in person can use it: API tokens never carry it"
            ),
        ),
        Action(
            name=CURATE_ACTION,
            abbr="mcur",
            description=(
                "Correct memory's graph: edit or delete an observation, rename or merge entities, delete a relation. "
                "Only a signed-in person can use it: API tokens never carry it"
            ),
        ),
    ]
