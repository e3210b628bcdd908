"""Ledger tools: record events and checkpoints, resume, verify the chain."""

from typing import Annotated

from fastmcp.tools import ToolResult
from pydantic import Field

from datasette_memory.core.checkpoints import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
from datasette_memory.core.validation import MAX_OBSERVATION_BYTES, MAX_SUMMARY_BYTES

from .bridge import Bridge
from .tooling import READ_ONLY, WRITES, Project, bridge_tool, json_result


@bridge_tool("Append Event", WRITES)
async def append_event(
    bridge: Bridge,
    content: Annotated[str, Field(description=f"What happened (at most {MAX_OBSERVATION_BYTES} bytes)")],
    kind: Annotated[str, Field(description="A short label such as note, decision or bug")] = "note",
    project: Project = None,
) -> ToolResult:
    "Record something you did or decided in the ledger, such as a decision and its reason."
    return json_result(await bridge.write(project, lambda memory: memory.append_event(content, kind)))


@bridge_tool("Checkpoint", WRITES)
async def checkpoint(
    bridge: Bridge,
    summary: Annotated[str, Field(description=f"What was done and what is next (at most {MAX_SUMMARY_BYTES} bytes)")],
    project: Project = None,
) -> ToolResult:
    """
    Record a summary of the work so far and what comes next, anchored to the ledger head.
    The next session's get_resume_context starts from it.
    """
    return json_result(await bridge.write(project, lambda memory: memory.checkpoint(summary)))


@bridge_tool("Get Resume Context", READ_ONLY)
async def get_resume_context(
    bridge: Bridge,
    max_events: Annotated[int, Field(description="Most events to return, 0 to 1000")] = 50,
    budget: Annotated[int, Field(description=f"Most bytes of the whole result, {MIN_BUDGET} to {MAX_BUDGET}")] = DEFAULT_BUDGET,
    project: Project = None,
) -> ToolResult:
    """
    Call this first in every session: the latest checkpoint, the newest events since it that fit in
    the byte budget (oldest first), the ledger checked from the checkpoint to its head, warnings,
    and an accounting of what was left out (the hooks' tool activity is only counted, as left_out_by_kind).
    """
    return json_result(await bridge.read(project, lambda memory: memory.resume_context(max_events, budget)))


@bridge_tool("Verify Chain", READ_ONLY)
async def verify_chain(bridge: Bridge, project: Project = None) -> ToolResult:
    """
    Check the hash chains, and the file against the head witness and the last verify: reports an event edited,
    deleted or reordered, or a ledger rewound or rewritten since (ok stays false until a person acknowledges it).
    """
    return json_result(await bridge.read(project, lambda memory: memory.chain_checks()))


TOOLS = [append_event, checkpoint, get_resume_context, verify_chain]
