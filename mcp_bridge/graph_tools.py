"""The official memory server's nine tools, on the core API."""

from .schemas import OFFICIAL_TOOLS
from .server import DELETES, READ_ONLY, WRITES, BridgeTool, pretty


def wrapped(key: str):
    "Render a list result as the official server does: text is the list, structured content wraps it."
    return lambda result: (pretty(result), {key: result})


def success(message: str):
    return lambda result: (message, {"success": True, "message": message})


def graph(result):
    return pretty(result), result


async def create_entities(call, entities):
    return await call.write(lambda memory: memory.create_entities(entities))


async def create_relations(call, relations):
    return await call.write(lambda memory: memory.create_relations(relations))


async def add_observations(call, observations):
    return await call.write(lambda memory: memory.add_observations(observations))


async def delete_entities(call, entityNames):
    return await call.write(lambda memory: memory.delete_entities(entityNames))


async def delete_observations(call, deletions):
    return await call.write(lambda memory: memory.delete_observations(deletions))


async def delete_relations(call, relations):
    return await call.write(lambda memory: memory.delete_relations(relations))


async def read_graph(call):
    return await call.read(lambda memory: memory.read_graph())


async def search_nodes(call, query):
    return await call.read(lambda memory: memory.search_nodes(query))


async def open_nodes(call, names):
    return await call.read(lambda memory: memory.open_nodes(names))


def official(name, handler, annotations, render) -> BridgeTool:
    title, description, input_schema, output_schema = OFFICIAL_TOOLS[name]
    return BridgeTool(name, title, description, input_schema, annotations, handler, output_schema, render)


TOOLS = [
    official("create_entities", create_entities, WRITES, wrapped("entities")),
    official("create_relations", create_relations, WRITES, wrapped("relations")),
    official("add_observations", add_observations, WRITES, wrapped("results")),
    official("delete_entities", delete_entities, DELETES, success("Entities deleted successfully")),
    official("delete_observations", delete_observations, DELETES, success("Observations deleted successfully")),
    official("delete_relations", delete_relations, DELETES, success("Relations deleted successfully")),
    official("read_graph", read_graph, READ_ONLY, graph),
    official("search_nodes", search_nodes, READ_ONLY, graph),
    official("open_nodes", open_nodes, READ_ONLY, graph),
]


async def knowledge_graph(call):
    "The project's whole graph as JSON, as the official server's resource."
    return pretty(await call.read(lambda memory: memory.read_graph()))


# uri: (name, description, reader)
RESOURCES = {
    "memory://knowledge-graph": ("Knowledge Graph", "The whole knowledge graph of the server's project", knowledge_graph),
}
