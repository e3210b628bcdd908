"""The official memory server's nine tools, on the core API.

Their names, titles, descriptions, annotations and schemas are the official
server's, byte for byte (:mod:`.official_schemas`), plus an optional
``project`` argument and, on the three reads, an optional ``as_of``; their
results are rendered as it renders them.
"""

from typing import Any

from fastmcp.tools import ToolResult

from .bridge import Bridge
from .official_schemas import OFFICIAL_TOOLS
from .tooling import DELETES, READ_ONLY, STORED_DATA_META, WRITES, bridge_tool, pretty, text_result

PROJECT_ARGUMENT = {
    "type": "string",
    "description": "The project to use; defaults to the server's project. A server started with --project cannot use another.",
}
AS_OF_ARGUMENT = {
    "type": ["string", "integer"],
    "description": "Read memory as it was at this moment: an event id (memory just after that event) or an ISO 8601 time. "
    "Omit for memory as it is now.",
}


def official(hints: Any, as_of: bool = False) -> Any:
    """
    Declare one of the nine with the official server's title, description and
    schemas (the function's name is the tool's), plus ``project`` and, for a
    read, ``as_of``.
    """

    def declare(function: Any) -> Any:
        title, description, input_schema, output_schema = OFFICIAL_TOOLS[function.__name__]
        extra = {"project": PROJECT_ARGUMENT, **({"as_of": AS_OF_ARGUMENT} if as_of else {})}
        schema = {**input_schema, "properties": {**input_schema.get("properties", {}), **extra}}
        return bridge_tool(
            title, hints, description=description, input_schema=schema, output_schema=output_schema, profile="official"
        )(function)

    return declare


def wrapped(key: str, result: list[Any]) -> ToolResult:
    "A list result as the official server renders it: the text is the list, the structured content wraps it."
    return text_result(pretty(result), {key: result}, STORED_DATA_META)


def graph(result: dict[str, Any]) -> ToolResult:
    "A graph result as the official server renders it: pretty JSON text, the graph as structured content."
    return text_result(pretty(result), result, STORED_DATA_META)


def success(message: str) -> ToolResult:
    return text_result(message, {"success": True, "message": message})


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


@official(READ_ONLY, as_of=True)
async def read_graph(bridge: Bridge, project: str | None = None, as_of: str | int | None = None) -> ToolResult:
    return graph(await bridge.read(project, lambda memory: memory.read_graph(as_of)))


@official(READ_ONLY, as_of=True)
async def search_nodes(bridge: Bridge, query: str, project: str | None = None, as_of: str | int | None = None) -> ToolResult:
    return graph(await bridge.read(project, lambda memory: memory.search_nodes(query, as_of)))


@official(READ_ONLY, as_of=True)
async def open_nodes(bridge: Bridge, names: list, project: str | None = None, as_of: str | int | None = None) -> ToolResult:
    return graph(await bridge.read(project, lambda memory: memory.open_nodes(names, as_of)))


TOOLS = [create_entities, create_relations, add_observations, delete_entities, delete_observations, delete_relations,
         read_graph, search_nodes, open_nodes]


async def knowledge_graph(bridge: Bridge) -> str:
    "The project's whole graph as JSON, as the official server's resource."
    return pretty(await bridge.read(None, lambda memory: memory.read_graph()))


# uri: (name, description, reader)
RESOURCES = {
    "memory://knowledge-graph": ("Knowledge Graph", "The whole knowledge graph of the server's project", knowledge_graph),
}
