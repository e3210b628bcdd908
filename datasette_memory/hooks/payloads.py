"""What a hook receives: the JSON object Claude Code and Codex write on its stdin, read into one shape.

Both agents send the same fields for the events used here (their hook
documentation, and Codex's ``codex-rs/hooks/schema/generated/*.command.input.schema.json``):
``session_id``, ``cwd`` and ``hook_event_name`` on every event; ``source``
(startup, resume, clear or compact) on SessionStart; ``prompt`` on
UserPromptSubmit; ``tool_name``, ``tool_input`` and ``tool_response`` on
PostToolUse (Claude Code sends a failed call as PostToolUseFailure, with ``error``
instead of ``tool_response``); ``stop_hook_active`` on Stop. Fields this package
does not use are ignored, and so is a missing field it can do without.

Text inside ``<private>...</private>`` is hidden from the whole payload, read as
one text (:mod:`.private`), before any field is taken from it: every hook reads
the same payload, without it.
"""

import dataclasses
import json
import pathlib
from typing import Any

from .private import without_private

SESSION_START = "SessionStart"
PROMPT = "UserPromptSubmit"
TOOL = "PostToolUse"
TOOL_FAILURE = "PostToolUseFailure"
STOP = "Stop"
SOURCES = ("startup", "resume", "clear", "compact")
MAX_STDIN_BYTES = 64 * 1024 * 1024  # a tool's whole output can be in it
MAX_SESSION_CHARS = 200


class HookInputError(ValueError):
    """Stdin did not hold a hook payload this command can use."""


@dataclasses.dataclass(frozen=True)
class Payload:
    """
    One hook event, as the agent sent it.

    :param event: ``hook_event_name``, or None when the payload does not say
    :param session_id: the agent's session (Codex: thread) id, or None
    :param cwd: the session's working folder, or None
    :param source: why a session started: startup, resume, clear or compact (SessionStart)
    :param prompt: what the user typed (UserPromptSubmit)
    :param tool_name: the tool that ran (PostToolUse)
    :param tool_input: its arguments
    :param tool_response: what it returned
    :param error: why it failed (PostToolUseFailure)
    :param stop_hook_active: whether the agent is already continuing because a Stop hook asked (Stop)
    """

    event: str | None = None
    session_id: str | None = None
    cwd: pathlib.Path | None = None
    source: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_response: Any = None
    error: str | None = None
    stop_hook_active: bool = False


def read_payload(data: bytes, events: tuple[str, ...]) -> Payload:
    """
    The payload in ``data``, a hook's whole stdin.

    :param data: the bytes read from stdin
    :param events: the events this command handles; a payload naming another is refused
    :raises HookInputError: saying what was wrong with stdin
    """
    if len(data) > MAX_STDIN_BYTES:
        raise HookInputError(f"stdin holds {len(data):,} bytes, over the limit of {MAX_STDIN_BYTES:,}")
    if not data.strip():
        raise HookInputError("stdin was empty; the agent passes the hook's event as a JSON object there")
    try:
        found = json.loads(data)
    except ValueError as e:  # UnicodeDecodeError included
        raise HookInputError(f"stdin is not JSON ({e}); the agent passes the hook's event as a JSON object there")
    if not isinstance(found, dict):
        raise HookInputError(f"stdin holds a JSON {type(found).__name__}, not the JSON object of a hook event")
    found = without_private(found)
    event = text_field(found, "hook_event_name") or None  # a name hidden by a span says nothing
    if event is not None and event not in events:
        raise HookInputError(f"stdin holds a {event} event; this command handles {' and '.join(events)}")
    return Payload(
        event=event,
        session_id=session_field(found),
        cwd=pathlib.Path(found["cwd"]) if text_field(found, "cwd") else None,
        source=text_field(found, "source"),
        prompt=text_field(found, "prompt"),
        tool_name=text_field(found, "tool_name"),
        tool_input=found.get("tool_input"),
        tool_response=found.get("tool_response"),
        error=text_field(found, "error"),
        stop_hook_active=found.get("stop_hook_active") is True,
    )


def text_field(found: dict[str, Any], name: str) -> str | None:
    "Field ``name`` if it is a string, else None; a field of another type is refused."
    value = found.get(name)
    if value is None or isinstance(value, str):
        return value
    raise HookInputError(f"{name}: must be a string, got {type(value).__name__}")


def session_field(found: dict[str, Any]) -> str | None:
    "The session id, if there is a usable one."
    session = text_field(found, "session_id")
    if not session or not session.strip() or "\x00" in session:
        return None
    if len(session) > MAX_SESSION_CHARS:
        raise HookInputError(f"session_id: {len(session)} characters is over the limit of {MAX_SESSION_CHARS}")
    return session
