"""The ledger event kinds the hooks write.

They are the agent's bookkeeping, not memory: the session-start context sums
them up apart, leaves them out of "what happened since the checkpoint", and the
stop hook does not count them as changes to memory.
"""

SESSION_START = "session_start"  # a session started, resumed, was cleared or compacted: ties its id to the ledger
ACTIVITY = "activity"  # one tool call the agent made (hook tool)
CHECKPOINT_REMINDER = "checkpoint_reminder"  # the stop hook asked the agent for a checkpoint
HOOK_KINDS = (SESSION_START, ACTIVITY, CHECKPOINT_REMINDER)
