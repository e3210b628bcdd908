"""Asking once for a checkpoint (Stop): when the session changed memory and recorded none, the agent is asked to.

The session's changes are the project's events since the session started (its
oldest ``session_start`` event; the MCP server does not know the agent's session
id, so its writes are tied to the session by time), after the newest checkpoint
and after this hook last asked, leaving out the hooks' own bookkeeping and
whatever was not done in an agent's session: a person's edits and reviews in
Datasette (and a command run by hand) are recorded with no session, and are
theirs to account for, not the agent's. If there
are any, the hook prints Claude Code's and Codex's documented ``{"decision":
"block", "reason": ...}``, which keeps the agent going with the reason as its
next instruction, and records that it asked. It never asks twice in a row: not
while the agent is already going on because a Stop hook asked
(``stop_hook_active``), and not again until memory changes after the last time
it asked (the ledger remembers).
"""

from typing import Any

from ..core import event_reads
from ..core.hook_kinds import CHECKPOINT_REMINDER, HOOK_KINDS, SESSION_START
from ..memory import Memory
from .payloads import Payload
from .shape import block_output

REASON = (
    "datasette-memory: this session changed memory ({changes}) and recorded no checkpoint. Before you stop, call the "
    "memory server's checkpoint tool once, with a short summary of what was done and what comes next, so the next "
    "session can pick up from it. If nothing here is worth keeping, just stop."
)


def changes_to_checkpoint(memory: Memory, session: str | None) -> int:
    """
    How many changes to memory (up to a cap) the session made that no checkpoint, and no earlier reminder, covers:
    those recorded in a session (its MCP server's), not a person's in Datasette.

    :param memory: memory, scoped to the project
    :param session: the agent's session id, or None
    """
    conn, project = memory.conn, memory.project
    started = event_reads.event_of_kind(conn, project, SESSION_START, session, newest=False) if session else None
    checkpoint = event_reads.event_of_kind(conn, project, "checkpoint")
    asked = event_reads.event_of_kind(conn, project, CHECKPOINT_REMINDER, session)  # with no session id: anyone's
    since = max((event["id"] for event in (started, checkpoint, asked) if event is not None), default=0)
    return event_reads.count_after(conn, project, since, HOOK_KINDS, in_sessions_only=True)


def stop_output(memory: Memory, payload: Payload) -> dict[str, Any] | None:
    """
    The Stop output asking for a checkpoint, recorded in the ledger; None to let the agent stop.

    :param memory: memory, scoped to the project and opened with the payload's session id
    :param payload: the Stop payload
    """
    if payload.stop_hook_active:
        return None
    changes = changes_to_checkpoint(memory, payload.session_id)
    if not changes:
        return None
    counted = f"{changes}{'+' if changes >= event_reads.COUNT_CAP else ''} change{'s' if changes != 1 else ''}"
    memory.append_event(f"asked the agent to record a checkpoint: {counted} since the last one", kind=CHECKPOINT_REMINDER)
    return block_output(REASON.format(changes=counted))
