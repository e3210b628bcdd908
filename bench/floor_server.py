"""The floor: a fastmcp server over stdio whose tools (the official server's nine) do nothing but return an empty result."""

from fastmcp import FastMCP

server = FastMCP("floor")


@server.tool
def create_entities(entities: list[dict]) -> dict:
    return {"entities": []}


@server.tool
def create_relations(relations: list[dict]) -> dict:
    return {"relations": []}


@server.tool
def add_observations(observations: list[dict]) -> dict:
    return {"results": []}


@server.tool
def delete_entities(entityNames: list[str]) -> dict:
    return {"success": True}


@server.tool
def delete_observations(deletions: list[dict]) -> dict:
    return {"success": True}


@server.tool
def delete_relations(relations: list[dict]) -> dict:
    return {"success": True}


@server.tool
def read_graph() -> dict:
    return {"entities": [], "relations": []}


@server.tool
def search_nodes(query: str) -> dict:
    return {"entities": [], "relations": []}


@server.tool
def open_nodes(names: list[str]) -> dict:
    return {"entities": [], "relations": []}


if __name__ == "__main__":
    server.run(show_banner=False, log_level="WARNING")
