"""The graph reads' results: the official text and structure, built whole or spliced into a stdio reply, and pages.

A whole graph is rendered from its rows in the read's thread (:mod:`.graph_text`).
Over stdio its pieces then wait for the reply, which the transport writes with
them where the result's placeholders are (:mod:`.splicing`); through another door
the result is built whole. Either way it skips fastmcp's check of a
``ToolResult``, which sends the structured content through JSON and back: one
more copy of the whole graph.
"""

from collections.abc import Callable
from typing import Any

from fastmcp.server.dependencies import get_context
from fastmcp.tools import ToolResult
from mcp_types import TextContent

from datasette_memory import Memory

from .bridge import Bridge
from .graph_text import RenderedGraph, render, render_dict, structured_of, text_of
from .splicing import SPLICES, STRUCTURED_PLACEHOLDER, TEXT_PLACEHOLDER
from .tooling import STORED_DATA_META, pretty

PAGE_META = "datasette-memory/page"


async def graph_reply(bridge: Bridge, project: str | None, read: Callable[[Memory], tuple[RenderedGraph, Any]]) -> ToolResult:
    """
    A graph result as the official server renders it: its pretty JSON as the
    text, the graph as structured content. ``read(memory)`` renders it in the
    read's thread, returning the graph as objects too if it has them.
    """
    rendered, structured = await bridge.read(project, read)
    splices, request_id = SPLICES.get(), current_request_id()
    if splices is not None and request_id is not None:
        splices.defer(request_id, rendered)
        return built_result([TEXT_PLACEHOLDER], STRUCTURED_PLACEHOLDER, STORED_DATA_META)
    return built_result([text_of(rendered)], structured_of(rendered) if structured is None else structured, STORED_DATA_META)


def built_result(texts: list[str], structured: dict[str, Any], meta: dict[str, Any] | None) -> ToolResult:
    """
    A result of JSON-ready parts, built without fastmcp's check: a ``ToolResult``
    sends its structured content through JSON and back, a copy of the whole graph.
    """
    content = [TextContent(type="text", text=text) for text in texts]
    return ToolResult.model_construct(content=content, structured_content=structured, meta=meta, is_error=False)


def current_request_id() -> str | None:
    "The id of the request being answered, if a session is answering one."
    try:
        return get_context().request_id
    except RuntimeError:
        return None


def rendered_dict(graph: dict[str, Any]) -> tuple[RenderedGraph, Any]:
    return render_dict(graph), graph


def whole_graph(memory: Memory, as_of: Any) -> tuple[RenderedGraph, Any]:
    "The whole graph rendered from its rows, a batch at a time, never held as objects."
    if as_of is not None:
        return rendered_dict(memory.read_graph(as_of))
    return render(*memory.graph_rows()), None


def page_result(page: dict[str, Any]) -> ToolResult:
    """
    A page of the graph: the official text of its entities and relations, then
    a second text saying what it returned, what remains and the next cursor;
    the structured content is the page's graph, and the metadata the page's account.
    """
    graph = {"entities": page["entities"], "relations": page["relations"]}
    texts = [text_of(render_dict(graph)), pretty({"page": page["page"]})]
    return built_result(texts, graph, {**STORED_DATA_META, PAGE_META: page["page"]})
