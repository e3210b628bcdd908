"""The floor: a fastmcp server over stdio whose tools do nothing but return an empty graph."""

from fastmcp import FastMCP

server = FastMCP("floor")


@server.tool
def search_nodes(query: str) -> dict:
    return {"entities": [], "relations": []}


@server.tool
def open_nodes(names: list[str]) -> dict:
    return {"entities": [], "relations": []}


@server.tool
def add_observations(observations: list[dict]) -> dict:
    return {"results": []}


@server.tool
def create_entities(entities: list[dict]) -> dict:
    return {"entities": []}


if __name__ == "__main__":
    server.run(show_banner=False, log_level="WARNING")
