"""The ledger event kinds the hooks write (``datasette_memory.hooks``).

They are the agent's bookkeeping, not memory: the session-start context sums
them up apart, every resume context (the MCP tool and prompt included) leaves
them out of "what happened since the checkpoint" and counts them apart, and
the stop hook does not count them as changes to memory.
"""

SESSION_START = "session_start"  # a session started, resumed, was cleared or compacted: ties its id to the ledger
ACTIVITY = "activity"  # one tool call the agent made (hook tool)
CHECKPOINT_REMINDER = "checkpoint_reminder"  # the stop hook asked the agent for a checkpoint
HOOK_KINDS = (SESSION_START, ACTIVITY, CHECKPOINT_REMINDER)
