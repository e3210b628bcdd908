"""Ledger tools: record events and checkpoints, resume, verify the chain."""

from datasette_memory.validation import MAX_OBSERVATION_BYTES, MAX_SUMMARY_BYTES

from .server import READ_ONLY, WRITES, BridgeTool


async def append_event(call, content, kind="note"):
    return await call.write(lambda memory: memory.append_event(content, kind))


async def checkpoint(call, summary):
    return await call.write(lambda memory: memory.checkpoint(summary))


async def get_resume_context(call, max_events=50):
    return await call.read(lambda memory: memory.resume_context(max_events))


async def verify_chain(call):
    return await call.read(lambda memory: memory.verify_chain().to_dict())


TOOLS = [
    BridgeTool(
        "append_event",
        "Append Event",
        "Record something you did or decided in the ledger, such as a decision and its reason.",
        {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": f"What happened (at most {MAX_OBSERVATION_BYTES} bytes)"},
                "kind": {"type": "string", "description": "A short label such as note, decision or bug (default note)"},
            },
            "required": ["content"],
        },
        WRITES,
        append_event,
    ),
    BridgeTool(
        "checkpoint",
        "Checkpoint",
        "Record a summary of the work so far and what comes next, anchored to the ledger head. "
        "The next session's get_resume_context starts from it.",
        {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": f"What was done and what is next (at most {MAX_SUMMARY_BYTES} bytes)"}
            },
            "required": ["summary"],
        },
        WRITES,
        checkpoint,
    ),
    BridgeTool(
        "get_resume_context",
        "Get Resume Context",
        "Call this first in every session: the latest checkpoint, the events since it (oldest first) and the ledger's status.",
        {
            "type": "object",
            "properties": {
                "max_events": {"type": "integer", "description": "Most events to return, 0 to 1000 (default 50)"}
            },
        },
        READ_ONLY,
        get_resume_context,
    ),
    BridgeTool(
        "verify_chain",
        "Verify Chain",
        "Check the ledger's hash chain: reports the first event that was edited, deleted or reordered.",
        {"type": "object", "properties": {}},
        READ_ONLY,
        verify_chain,
    ),
]
