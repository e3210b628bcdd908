"""The foundation every other package builds on: the file, its schema, the ledger, input checks and errors.

Nothing here knows about the graph, claims, search or SQL tools, and nothing
here imports a door (Datasette, MCP, the CLI).
"""
