"""The names of the Datasette actions datasette-memory registers."""

# Approve, reject and reopen claims; enter, supersede, invalidate and revalidate facts
APPROVE_ACTION = "memory-approve"
