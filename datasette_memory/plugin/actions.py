"""The actions datasette-memory registers with Datasette's permission system."""

from datasette import hookimpl
from datasette.permissions import Action

from ..governed.approve_action import APPROVE_ACTION


@hookimpl(specname="register_actions")
def register_governance_actions(datasette):
    return [
        Action(
            name=APPROVE_ACTION,
            abbr="mapr",
            description=(
                "Approve, reject and reopen claims; enter, supersede, invalidate and revalidate facts. "
                "Only a signed-in person can use it: API tokens never carry it"
            ),
        )
    ]
