"""The knowledge graph: entities, observations and relations in a project, as the official memory server has them."""
