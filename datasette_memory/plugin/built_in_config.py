"""Memory's stored queries, descriptions and table options, given to any Datasette serving the memory file.

They live in ``datasette.yaml`` and ``metadata.yml`` at the top of the tree
(inside the package in a wheel). ``datasette-memory serve`` passes them as its
configuration; plain ``datasette`` does not read them, so at startup this module
adds them through Datasette's own API: each stored query with
``datasette.add_query`` (trusted, as configured queries are, so reading one needs
view-query and not execute-sql, and no one can edit it through the pages), the
database, table and column descriptions with ``set_*_metadata``, and each table's
facets, sort order and hidden flag into the table configuration. What the
Datasette's own configuration or metadata already says for the memory database
wins: nothing here replaces a query, a description or a table option it set.
"""

from typing import Any

from .resources import datasette_config


async def provide_built_in_config(datasette: Any, database: str) -> None:
    """
    Give ``datasette`` memory's stored queries, descriptions and table options for ``database``.

    :param datasette: the Datasette instance, at startup
    :param database: the memory database's name
    """
    built_in = datasette_config("datasette.yaml", database)["databases"][database]
    await add_stored_queries(datasette, database, built_in.get("queries", {}))
    add_table_options(datasette, database, built_in.get("tables", {}))
    described = datasette_config("metadata.yml", database).get("databases", {}).get(database, {})
    await add_descriptions(datasette, database, described)


async def add_stored_queries(datasette: Any, database: str, queries: dict[str, Any]) -> None:
    "Each built-in stored query that the configuration does not already give under its name."
    for name, query in queries.items():
        if await datasette.get_query(database, name) is not None:
            continue
        await datasette.add_query(
            database, name, query["sql"], title=query.get("title"), description=query.get("description"),
            is_trusted=True, source="plugin", replace=False,
        )


def add_table_options(datasette: Any, database: str, tables: dict[str, Any]) -> None:
    "Facets, sort order and hidden flags into the table configuration, under what the configuration already says."
    if datasette.config is None:
        datasette.config = {}
    configured = datasette.config.setdefault("databases", {}).setdefault(database, {}).setdefault("tables", {})
    for table, options in tables.items():
        table_config = configured.setdefault(table, {})
        for key, value in options.items():
            table_config.setdefault(key, value)


async def add_descriptions(datasette: Any, database: str, described: dict[str, Any]) -> None:
    "The database's, tables' and columns' descriptions, where the metadata gives none."
    if not await datasette.get_database_metadata(database):
        for key, value in described.items():
            if key != "tables":
                await datasette.set_database_metadata(database, key, str(value))
    for table, table_metadata in described.get("tables", {}).items():
        if not await datasette.get_resource_metadata(database, table):
            for key, value in table_metadata.items():
                if key != "columns":
                    await datasette.set_resource_metadata(database, table, key, str(value))
        for column, description in table_metadata.get("columns", {}).items():
            if not (await datasette.get_column_metadata(database, table, column)).get("description"):
                await datasette.set_column_metadata(database, table, column, "description", description)
