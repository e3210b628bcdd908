"""The names of the Datasette actions only a signed-in person can hold; API tokens never carry them.

- ``memory-approve``: approve, reject and reopen claims; enter, supersede,
  invalidate and revalidate facts.
- ``memory-curate``: correct the graph: edit or delete an observation, rename
  or merge entities, delete a relation.

The plugin registers them; :mod:`.gate` checks them; ``serve --approver`` and
``serve --curator`` grant them. Kept apart from the gate so that granting them
needs no import of the gate.
"""

APPROVE_ACTION = "memory-approve"
CURATE_ACTION = "memory-curate"
