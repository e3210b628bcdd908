"""The official memory server's tool schemas, as it sends them (draft-07 JSON Schema)."""

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
STRING = {"type": "string"}


def described(description: str, schema=STRING) -> dict:
    return {**schema, "description": description}


def array(items: dict, description: str | None = None) -> dict:
    schema = {"type": "array", "items": items}
    return {**schema, "description": description} if description else schema


def obj(properties: dict, closed: bool = False, required=None) -> dict:
    schema = {"type": "object", "properties": properties, "required": list(properties if required is None else required)}
    return {**schema, "additionalProperties": False} if closed else schema


def root(properties: dict, closed: bool = False, required=None) -> dict:
    return {"$schema": DRAFT_07, **obj(properties, closed, required)}


ENTITY = {
    "name": described("The name of the entity"),
    "entityType": described("The type of the entity"),
    "observations": array(STRING, "An array of observation contents associated with the entity"),
}
RELATION = {
    "from": described("The name of the entity where the relation starts"),
    "to": described("The name of the entity where the relation ends"),
    "relationType": described("The type of the relation"),
}
GRAPH_OUTPUT = root({"entities": array(obj(ENTITY, True)), "relations": array(obj(RELATION, True))}, True)
SUCCESS_OUTPUT = root({"success": {"type": "boolean"}, "message": STRING}, True)

# name: (title, description, input schema, output schema)
OFFICIAL_TOOLS = {
    "create_entities": (
        "Create Entities",
        "Create multiple new entities in the knowledge graph",
        root({"entities": array(obj(ENTITY))}),
        root({"entities": array(obj(ENTITY, True))}, True),
    ),
    "create_relations": (
        "Create Relations",
        "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice",
        root({"relations": array(obj(RELATION))}),
        root({"relations": array(obj(RELATION, True))}, True),
    ),
    "add_observations": (
        "Add Observations",
        "Add new observations to existing entities in the knowledge graph",
        root(
            {
                "observations": array(
                    obj(
                        {
                            "entityName": described("The name of the entity to add the observations to"),
                            "contents": array(STRING, "An array of observation contents to add"),
                        }
                    )
                )
            }
        ),
        root({"results": array(obj({"entityName": STRING, "addedObservations": array(STRING)}, True))}, True),
    ),
    "delete_entities": (
        "Delete Entities",
        "Delete multiple entities and their associated relations from the knowledge graph",
        root({"entityNames": array(STRING, "An array of entity names to delete")}),
        SUCCESS_OUTPUT,
    ),
    "delete_observations": (
        "Delete Observations",
        "Delete specific observations from entities in the knowledge graph",
        root(
            {
                "deletions": array(
                    obj(
                        {
                            "entityName": described("The name of the entity containing the observations"),
                            "observations": array(STRING, "An array of observations to delete"),
                        }
                    )
                )
            }
        ),
        SUCCESS_OUTPUT,
    ),
    "delete_relations": (
        "Delete Relations",
        "Delete multiple relations from the knowledge graph",
        root({"relations": array(obj(RELATION), "An array of relations to delete")}),
        SUCCESS_OUTPUT,
    ),
    "read_graph": (
        "Read Graph",
        "Read the entire knowledge graph",
        {"$schema": DRAFT_07, "type": "object", "properties": {}},
        GRAPH_OUTPUT,
    ),
    "search_nodes": (
        "Search Nodes",
        "Search for nodes in the knowledge graph based on a query",
        root({"query": described("The search query to match against entity names, types, and observation content")}),
        GRAPH_OUTPUT,
    ),
    "open_nodes": (
        "Open Nodes",
        "Open specific nodes in the knowledge graph by their names",
        root({"names": array(STRING, "An array of entity names to retrieve")}),
        GRAPH_OUTPUT,
    ),
}
