"""One raw MCP message checked before the MCP SDK sees it, the same way over stdio and HTTP.

The SDK's own checks leave holes: over stdio a line it cannot read is handed to
the session, which answers nothing, so the client waits for ever; invalid UTF-8
is read as U+FFFD and stored. Here a message must be UTF-8, strict JSON (no lone
surrogate escapes, no NaN, nesting at most :data:`MAX_DEPTH` deep), a single
JSON-RPC message (MCP has no batches) and valid against ``mcp_types``' own
model. Anything else becomes a :class:`WireError`: a JSON-RPC error object
carrying the message's id when it can be read, which the door sends back.
"""

import json
import re
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR, JSONRPCMessage, jsonrpc_message_adapter
from pydantic import ValidationError

MAX_DEPTH = 64
# how much of a message's start is searched for its id when the whole cannot be read
ID_SEARCH_CHARS = 4096
EXAMPLE = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
# each kind of message: its shape, to show when it is malformed
SHAPES = {
    "JSONRPCRequest": '{"jsonrpc": "2.0", "id": <string or integer>, "method": <string>, "params": <object>}',
    "JSONRPCNotification": '{"jsonrpc": "2.0", "method": <string>, "params": <object>}',
    "JSONRPCResponse": '{"jsonrpc": "2.0", "id": <string or integer>, "result": <object>}',
    "JSONRPCError": '{"jsonrpc": "2.0", "id": <string, integer or null>, "error": {"code": <integer>, "message": <string>}}',
}

_STRING = r'"(?:[^"\\]|\\.)*"'
_SCALAR = rf'(?:{_STRING}|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)'
# the top-level object's leading members up to "id", all scalars, so "id" cannot be a nested object's
_LEADING_ID = re.compile(rf'\s*\{{(?:\s*{_STRING}\s*:\s*{_SCALAR}\s*,)*?\s*"id"\s*:\s*(-?\d+|{_STRING})\s*[,}}]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class WireError(Exception):
    """
    A message refused before it reached the session, as the JSON-RPC error to send back.

    :param code: the JSON-RPC error code (-32700 parse error, -32600 invalid request)
    :param message: what was wrong and what to send instead
    :param id: the refused message's id, or None when it cannot be read
    """

    def __init__(self, code: int, message: str, id: int | str | None = None):
        super().__init__(message)
        self.code, self.message, self.id = code, message, id

    def response(self) -> dict[str, Any]:
        "The JSON-RPC error object."
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}

    def to_bytes(self) -> bytes:
        "The error object as one line of JSON, without its newline."
        return json.dumps(self.response(), separators=(",", ":")).encode()


def check_message(raw: bytes) -> JSONRPCMessage:
    """
    One raw message as the JSON-RPC message it holds, or :class:`WireError` saying why not.

    :param raw: the message's bytes (one stdio line without its newline, or one HTTP body)
    :raises WireError: for anything but a single valid JSON-RPC message
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise WireError(
            PARSE_ERROR,
            f"Parse error: the message is not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start}); "
            "send JSON text encoded in UTF-8",
            readable_id(raw[: e.start].decode("utf-8")),
        )
    value = parse_json(text)
    if isinstance(value, list):
        raise WireError(
            INVALID_REQUEST,
            "Invalid request: a JSON array (a JSON-RPC batch) is not accepted: MCP's current protocol has no batches; "
            "send each message as a JSON object of its own",
        )
    if not isinstance(value, dict):
        raise WireError(
            INVALID_REQUEST,
            f"Invalid request: a JSON-RPC message is a JSON object, not {json_kind(value)}; send one such as {EXAMPLE}",
        )
    return checked_message(value)


def parse_json(text: str) -> Any:
    "``text`` as strict JSON, or :class:`WireError` naming what is wrong with it."
    try:
        value = json.loads(text, parse_constant=refuse_constant)
    except json.JSONDecodeError as e:
        raise WireError(
            PARSE_ERROR,
            f"Parse error: the message is not JSON ({e.msg} at line {e.lineno} column {e.colno}); "
            f"send one JSON-RPC message as a JSON object, such as {EXAMPLE}",
            readable_id(text),
        )
    except RecursionError:
        raise too_deep(readable_id(text))
    except WireError as e:  # from refuse_constant, which cannot see the text
        e.id = readable_id(text)
        raise
    except ValueError as e:  # Python's own limits, such as an integer of more than 4,300 digits
        raise WireError(
            PARSE_ERROR, f"Parse error: the message cannot be read ({e}); send numbers of at most a few dozen digits",
            readable_id(text),
        )
    # a text with no more openers than the cap cannot nest deeper than it: most messages skip the walk
    if text.count("[") + text.count("{") > MAX_DEPTH and nesting_depth(value) > MAX_DEPTH:
        raise too_deep(message_id(value))
    if _SURROGATE_ESCAPE.search(text) and has_lone_surrogate(value):
        raise WireError(
            PARSE_ERROR,
            "Parse error: the message holds a lone surrogate escape (such as \\ud800), which is not a character; "
            "send characters as UTF-8, or escape one beyond U+FFFF as a surrogate pair",
            message_id(value),
        )
    return value


def refuse_constant(name: str) -> Any:
    raise WireError(PARSE_ERROR, f"Parse error: {name} is not JSON; send numbers as finite decimal values")


def too_deep(id: int | str | None) -> WireError:
    return WireError(
        PARSE_ERROR, f"Parse error: the message nests arrays and objects more than {MAX_DEPTH} deep; send flatter data", id
    )


def nesting_depth(value: Any) -> int:
    "How deep arrays and objects nest in ``value`` (a scalar is 0 deep, ``[]`` 1)."
    if not isinstance(value, (dict, list)):
        return 0
    deepest, pending = 0, [(value, 1)]
    while pending:  # containers only: a scalar adds no depth
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def has_lone_surrogate(value: Any) -> bool:
    "Whether any string in ``value``, keys included, holds a surrogate code point on its own."
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
    return False


def checked_message(value: dict[str, Any]) -> JSONRPCMessage:
    "A JSON object as a JSON-RPC message, or :class:`WireError` naming the field that is wrong."
    id = message_id(value)
    if not {"method", "result", "error"} & set(value):
        raise WireError(
            INVALID_REQUEST,
            "Invalid request: the object is not a JSON-RPC message: it has no method (a request or notification) "
            f"and no result or error (a response); send a request such as {EXAMPLE}",
            id,
        )
    if "method" in value and "id" in value and id is None:
        raise WireError(
            INVALID_REQUEST,
            f"Invalid request: id: must be a string or an integer, not {json_kind(value['id'])}; "
            "send a request with one, or a notification (which gets no answer) with no id at all",
        )
    try:
        return jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as e:
        kind = message_kind(value)
        raise WireError(INVALID_REQUEST, f"Invalid request: {field_problems(kind, e)}; send {SHAPES[kind]}", id)


def message_kind(value: dict[str, Any]) -> str:
    "The kind of JSON-RPC message an object means to be, by its keys."
    if "method" in value:
        return "JSONRPCRequest" if "id" in value else "JSONRPCNotification"
    return "JSONRPCError" if "error" in value else "JSONRPCResponse"


def field_problems(kind: str, error: ValidationError) -> str:
    "The fields wrong for ``kind`` of message, from the validation of the union of every kind."
    problems = [e for e in error.errors() if e["loc"][:1] == (kind,)] or error.errors()
    return "; ".join(f"{'.'.join(str(part) for part in p['loc'][1:]) or 'message'}: {p['msg']}" for p in problems[:3])


def message_id(value: Any) -> int | str | None:
    "The id of a parsed message, if it has one a reply can carry (a string or an integer)."
    id = value.get("id") if isinstance(value, dict) else None
    if isinstance(id, str) or (isinstance(id, int) and not isinstance(id, bool)):
        return id
    return None


def readable_id(text: str) -> int | str | None:
    """
    The id of a message that cannot be parsed whole, when the start of its text
    shows it plainly: ``"id"`` among the top-level object's leading members,
    every one before it a plain value.

    :param text: the message's text, or as much of its start as was read
    """
    match = _LEADING_ID.match(text[:ID_SEARCH_CHARS])
    if match is None:
        return None
    try:
        id = json.loads(match.group(1))
    except ValueError:
        return None
    return message_id({"id": id}) if not has_lone_surrogate(id) else None


def too_large(size: int | None, cap: int, start: bytes) -> WireError:
    """
    The error for a message over the cap on one request's bytes.

    :param size: the message's size in bytes, or None if it was not read to its end
    :param cap: the cap, in bytes
    :param start: as much of the message's start as was read, for its id
    """
    stated = f"{size:,} bytes, " if size is not None else ""
    return WireError(
        INVALID_REQUEST,
        f"Invalid request: the request is {stated}over this server's cap of {cap:,} bytes on one request; "
        "split the work into smaller calls (create_entities takes up to 1,000 entities a call), "
        "or start the server with a larger --max-request-bytes",
        readable_id(start[:ID_SEARCH_CHARS].decode("utf-8", errors="ignore")),
    )


def json_kind(value: Any) -> str:
    "How JSON names the type of a parsed value."
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
