"""The name of the Datasette action a person needs for every governance act.

Approve, reject and reopen claims; enter, supersede, invalidate and revalidate
facts. The plugin registers it; :mod:`.gate` checks it; ``serve --approver``
grants it. Kept apart from the gate so that granting it needs no import of the gate.
"""

APPROVE_ACTION = "memory-approve"
