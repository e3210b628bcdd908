"""The official memory server's nine tools, on the core API.

Their names, titles, descriptions, annotations and schemas are the official
server's, byte for byte (:mod:`.official_schemas`), plus an optional
``project`` argument, on the three reads an optional ``as_of``, and on
``read_graph`` optional ``limit`` and ``cursor`` to read a big graph a page at a
time; their results are rendered as it renders them (:mod:`.graph_results`).
When the graph is big, the tool list says so in ``read_graph``'s description
(:mod:`.graph_size`).
"""

from typing import Any

from fastmcp.tools import ToolResult

from .bridge import Bridge
from .graph_results import built_result, graph_reply, page_result, rendered_dict, whole_graph
from .graph_size import GraphSizeInToolList
from .graph_text import text_of
from .official_schemas import OFFICIAL_TOOLS
from .tooling import DELETES, READ_ONLY, STORED_DATA_META, WRITES, bridge_tool, pretty

PROJECT_ARGUMENT = {
    "type": "string",
    "description": "The project to use; defaults to the server's project. A server started with --project cannot use another.",
}
AS_OF_ARGUMENT = {
    "type": ["string", "integer"],
    "description": "Read memory as it was at this moment: an event id (memory just after that event) or an ISO 8601 time. "
    "Omit for memory as it is now.",
}
PAGING_ARGUMENTS = {
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
        "description": "Read the graph a page at a time: at most this many entities and relations (1 to 1000; a page "
        "also stops before 100,000 bytes), entities first, then relations. The reply's last text says how many remain "
        "and gives next_cursor. Omit for the whole graph.",
    },
    "cursor": {
        "type": "string",
        "description": "The next_cursor of the page before (with the same project and as_of).",
    },
}


def official(hints: Any, as_of: bool = False, extra: dict[str, Any] | None = None) -> Any:
    """
    Declare one of the nine with the official server's title, description and
    schemas (the function's name is the tool's), plus ``project``, for a read
    ``as_of``, and the ``extra`` arguments given.
    """

    def declare(function: Any) -> Any:
        title, description, input_schema, output_schema = OFFICIAL_TOOLS[function.__name__]
        added = {"project": PROJECT_ARGUMENT, **({"as_of": AS_OF_ARGUMENT} if as_of else {}), **(extra or {})}
        schema = {**input_schema, "properties": {**input_schema.get("properties", {}), **added}}
        return bridge_tool(
            title, hints, description=description, input_schema=schema, output_schema=output_schema, profile="official"
        )(function)

    return declare


def wrapped(key: str, result: list[Any]) -> ToolResult:
    """
    A list result as the official server renders it: the text is the list, the
    structured content wraps it (the core's lists of strings and dicts, JSON-ready:
    built without fastmcp's JSON round trip of them).
    """
    return built_result([pretty(result)], {key: result}, STORED_DATA_META)


def success(message: str) -> ToolResult:
    return built_result([message], {"success": True, "message": message}, None)


@official(WRITES)
async def create_entities(bridge: Bridge, entities: list, project: str | None = None) -> ToolResult:
    return wrapped("entities", await bridge.write(project, lambda memory: memory.create_entities(entities)))


@official(WRITES)
async def create_relations(bridge: Bridge, relations: list, project: str | None = None) -> ToolResult:
    return wrapped("relations", await bridge.write(project, lambda memory: memory.create_relations(relations)))


@official(WRITES)
async def add_observations(bridge: Bridge, observations: list, project: str | None = None) -> ToolResult:
    return wrapped("results", await bridge.write(project, lambda memory: memory.add_observations(observations)))


@official(DELETES)
async def delete_entities(bridge: Bridge, entityNames: list, project: str | None = None) -> ToolResult:
    await bridge.write(project, lambda memory: memory.delete_entities(entityNames))
    return success("Entities deleted successfully")


@official(DELETES)
async def delete_observations(bridge: Bridge, deletions: list, project: str | None = None) -> ToolResult:
    await bridge.write(project, lambda memory: memory.delete_observations(deletions))
    return success("Observations deleted successfully")


@official(DELETES)
async def delete_relations(bridge: Bridge, relations: list, project: str | None = None) -> ToolResult:
    await bridge.write(project, lambda memory: memory.delete_relations(relations))
    return success("Relations deleted successfully")


@official(READ_ONLY, as_of=True, extra=PAGING_ARGUMENTS)
async def read_graph(
    bridge: Bridge, project: str | None = None, as_of: str | int | None = None, limit: int | None = None,
    cursor: str | None = None,
) -> ToolResult:
    if limit is None and cursor is None:
        return await graph_reply(bridge, project, lambda memory: whole_graph(memory, as_of))
    return page_result(await bridge.read(project, lambda memory: memory.read_graph_page(limit, cursor, as_of)))


@official(READ_ONLY, as_of=True)
async def search_nodes(bridge: Bridge, query: str, project: str | None = None, as_of: str | int | None = None) -> ToolResult:
    return await graph_reply(bridge, project, lambda memory: rendered_dict(memory.search_nodes(query, as_of)))


@official(READ_ONLY, as_of=True)
async def open_nodes(bridge: Bridge, names: list, project: str | None = None, as_of: str | int | None = None) -> ToolResult:
    return await graph_reply(bridge, project, lambda memory: rendered_dict(memory.open_nodes(names, as_of)))


TOOLS = [create_entities, create_relations, add_observations, delete_entities, delete_observations, delete_relations,
         read_graph, search_nodes, open_nodes]


async def knowledge_graph(bridge: Bridge) -> str:
    "The project's whole graph as JSON, as the official server's resource."
    rendered, _ = await bridge.read(None, lambda memory: whole_graph(memory, None))
    return text_of(rendered)


# uri: (name, description, reader)
RESOURCES = {
    "memory://knowledge-graph": ("Knowledge Graph", "The whole knowledge graph of the server's project", knowledge_graph),
}

MIDDLEWARE = [GraphSizeInToolList]
