"""The official memory server's nine tools, on the core API.

Their names, titles, descriptions, annotations and schemas are the official
server's, byte for byte (:mod:`.official_schemas`), plus one optional
``project`` argument; their results are rendered as it renders them.
"""

from typing import Any

from fastmcp.tools import ToolResult

from .bridge import Bridge
from .official_schemas import OFFICIAL_TOOLS
from .tooling import DELETES, READ_ONLY, WRITES, bridge_tool, json_result, pretty, text_result

PROJECT_ARGUMENT = {
    "type": "string",
    "description": "The project to use; defaults to the server's project. A server started with --project cannot use another.",
}


def official(hints: Any) -> Any:
    "Declare one of the nine with the official server's title, description and schemas (the function's name is the tool's)."

    def declare(function: Any) -> Any:
        title, description, input_schema, output_schema = OFFICIAL_TOOLS[function.__name__]
        schema = {**input_schema, "properties": {**input_schema.get("properties", {}), "project": PROJECT_ARGUMENT}}
        return bridge_tool(title, hints, description=description, input_schema=schema, output_schema=output_schema)(function)

    return declare


def wrapped(key: str, result: list[Any]) -> ToolResult:
    "A list result as the official server renders it: the text is the list, the structured content wraps it."
    return text_result(pretty(result), {key: result})


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


@official(READ_ONLY)
async def read_graph(bridge: Bridge, project: str | None = None) -> ToolResult:
    return json_result(await bridge.read(project, lambda memory: memory.read_graph()))


@official(READ_ONLY)
async def search_nodes(bridge: Bridge, query: str, project: str | None = None) -> ToolResult:
    return json_result(await bridge.read(project, lambda memory: memory.search_nodes(query)))


@official(READ_ONLY)
async def open_nodes(bridge: Bridge, names: list, project: str | None = None) -> ToolResult:
    return json_result(await bridge.read(project, lambda memory: memory.open_nodes(names)))


TOOLS = [create_entities, create_relations, add_observations, delete_entities, delete_observations, delete_relations,
         read_graph, search_nodes, open_nodes]


async def knowledge_graph(bridge: Bridge) -> str:
    "The project's whole graph as JSON, as the official server's resource."
    return pretty(await bridge.read(None, lambda memory: memory.read_graph()))


# uri: (name, description, reader)
RESOURCES = {
    "memory://knowledge-graph": ("Knowledge Graph", "The whole knowledge graph of the server's project", knowledge_graph),
}
