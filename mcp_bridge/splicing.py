"""Graph results written to stdio straight from their rendered pieces, past the MCP SDK's copies.

On its way to the wire a tool's result is copied several times: fastmcp's
``ToolResult`` round-trips structured content through JSON, the SDK's runner
dumps the result to dicts, then validates and dumps it again for the protocol
version, and the transport serializes it. For ``read_graph`` of 100,000
entities that was most of 4.3 s and 720 MB. So over stdio a graph result goes
through the SDK as placeholders (a text and a structured content holding
nothing), while its rendered text (:mod:`.graph_text`) waits here under the
request's id; the transport writes the reply carrying that id with the text's
pieces where the placeholders are: escaped as a JSON string for the text, and
without line breaks for the structured content (the official text is the
graph's JSON, indented), so the graph is rendered once. A reply that is an error, a cancelled request and
the session's end let the pieces go. A door that sets no :data:`SPLICES` (HTTP,
an in-process client) gets the result whole.
"""

import json
import threading
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCResponse

from .graph_text import RenderedGraph

TEXT_PLACEHOLDER = "datasette-memory: the graph's text follows"
STRUCTURED_PLACEHOLDER = {"datasette-memory": "the graph follows"}
# the placeholders as the SDK writes them in a reply's line
TEXT_MARK = json.dumps(TEXT_PLACEHOLDER).encode()
STRUCTURED_MARK = json.dumps(STRUCTURED_PLACEHOLDER, separators=(",", ":")).encode()


class Splices:
    """Rendered graphs waiting for their replies to be written, by request id."""

    def __init__(self) -> None:
        self.waiting: dict[str, RenderedGraph] = {}
        self.lock = threading.Lock()

    def defer(self, request_id: str, graph: RenderedGraph) -> None:
        "Keep ``graph`` until the reply to request ``request_id`` is written."
        with self.lock:
            self.waiting[request_id] = graph

    def forget(self, request_id: Any) -> None:
        "Let go of a request's graph: it was cancelled, so no reply will carry it."
        with self.lock:
            self.waiting.pop(str(request_id), None)

    def clear(self) -> None:
        with self.lock:
            self.waiting.clear()

    def heard(self, message: Any) -> None:
        "Notice a message from the client: a cancellation lets its request's graph go."
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled" and self.waiting:
            self.forget((message.params or {}).get("requestId"))

    def pieces(self, message: Any, line: bytes) -> Iterable[bytes]:
        "The bytes to write for ``message``, which the SDK serialized as ``line``: the line, or it spliced with its graph."
        if not self.waiting or not isinstance(message, (JSONRPCResponse, JSONRPCError)) or message.id is None:
            return (line,)
        with self.lock:
            graph = self.waiting.pop(str(message.id), None)
        if graph is None or isinstance(message, JSONRPCError):
            return (line,)
        return spliced(line, graph)


def spliced(line: bytes, graph: RenderedGraph) -> Iterator[bytes]:
    "``line`` with its placeholders replaced by ``graph``'s text (as a JSON string) and structured content."
    marks = sorted(found(line, graph), key=lambda item: item[0])
    written = 0
    for at, mark, parts in marks:
        yield line[written:at]
        yield from parts
        written = at + len(mark)
    yield line[written:]


def found(line: bytes, graph: RenderedGraph) -> list[tuple[int, bytes, Iterator[bytes]]]:
    "Where each placeholder is in ``line``, with the bytes that replace it (a protocol version may have dropped one)."
    replacements = ((TEXT_MARK, text_string(graph.text)), (STRUCTURED_MARK, structured_json(graph.text)))
    return [(at, mark, parts) for mark, parts in replacements if (at := line.find(mark)) >= 0]


def structured_json(pieces: list[str]) -> Iterator[bytes]:
    "The text as the structured content's JSON, on one line: its line breaks are all layout (one in a string is escaped)."
    for piece in pieces:
        yield piece.encode().replace(b"\n", b"")


def text_string(pieces: list[str]) -> Iterator[bytes]:
    """
    The text as a JSON string, in quotes. Its only characters a JSON string
    must escape are quotes, backslashes and the layout's line breaks (every
    other control character is escaped already, inside the strings it
    renders), so three byte replacements escape it: three times as fast as
    the string encoder.
    """
    yield b'"'
    for piece in pieces:
        yield piece.encode().replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
    yield b'"'


SPLICES: ContextVar[Splices | None] = ContextVar("datasette-memory splices", default=None)
