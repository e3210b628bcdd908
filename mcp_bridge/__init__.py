"""The MCP server: thin tool definitions that call datasette_memory's core API."""
