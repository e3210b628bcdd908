"""``read_graph``'s description says how big the graph is when it is big, so an agent reads it a page at a time."""

import logging
from collections.abc import Sequence
from typing import Any

from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import Tool

from datasette_memory import MemoryStoreError

from .bridge import Bridge

# read_graph's description names the graph's size from this many entities (more than one reply of text should hold),
# rounded down to 500, 1,000, 2,000, 5,000, 10,000...
BIG_GRAPH = 500


def size_floor(count: int) -> int | None:
    "The largest of 500, 1,000, 2,000, 5,000, 10,000... not above ``count``, or None below 500."
    floor, scale = None, 100
    while True:
        for size in (scale, 2 * scale, 5 * scale):
            if size > count:
                return floor
            if size >= BIG_GRAPH:
                floor = size
        scale *= 10


def big_graph_description(description: str, count: int) -> str:
    "``read_graph``'s official description, and if ``count`` entities is a big graph, how big and how to page it."
    floor = size_floor(count)
    if floor is None:
        return description
    return (f"{description}. When this tool list was made the graph held over {floor:,} entities, too many to read in "
            "one reply: pass limit (such as 100) to read it a page at a time, then each page's next_cursor as cursor")


class GraphSizeInToolList(Middleware):
    """
    ``read_graph``'s description says how big the graph is when it is big, so
    an agent reads it a page at a time. Clients keep a tool list for a session
    (some cache it with the prompt), so the count is rounded down to a step
    that changes rarely, the words say when it was counted, and a write sends
    no list-changed notification.

    :param bridge: where the graph is counted, in the server's project
    """

    def __init__(self, bridge: Bridge):
        self.bridge = bridge

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Sequence[Tool]:
        tools = await call_next(context)
        if self.bridge.backend is None or not any(tool.name == "read_graph" for tool in tools):
            return tools
        try:
            count = await self.bridge.read(None, lambda memory: memory.entity_count())
        except (MemoryStoreError, OSError, RuntimeError) as e:  # the list is still sent, with the official words
            logging.getLogger("mcp_bridge").debug("read_graph's size not counted: %s", e)
            return tools
        return [
            tool.model_copy(update={"description": big_graph_description(tool.description or "", count)})
            if tool.name == "read_graph" else tool
            for tool in tools
        ]

