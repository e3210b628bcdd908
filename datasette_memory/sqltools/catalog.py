"""list_tables, describe_table and get_schema: what is in the file, as CSV.

Schema text written by the agent (names, CREATE statements, descriptions)
goes through the same CSV escaping as query results, so it cannot forge a
trailer line either.
"""

from collections.abc import Iterable
from typing import Any

from ..core.errors import InvalidInput
from .csv_results import CsvResult, escape as escaped, plural
from .execute import Call
from .names import GLOBAL_TABLES, fold, is_memory, quote

TYPES = {"table": "table", "virtual": "virtual table", "view": "view"}
AUDIT_OBJECTS = frozenset({"sql_audit", "sql_views", "query_errors"})


def objects(call: Call, include_system: bool = False) -> list[tuple[str, str, str, str | None, str | None]]:
    "``[(name, type, access, description, sql)]`` for the main schema, system objects only if asked."
    conn = call.conn
    kinds = {row[1]: row[2] for row in conn.execute("PRAGMA main.table_list")}
    descriptions = dict(conn.execute("SELECT name, description FROM main.sql_views"))
    found = []
    for type, name, sql in conn.execute("SELECT type, name, sql FROM main.sqlite_master ORDER BY type = 'index', type = 'trigger', name"):
        kind = kinds.get(name, type)
        system = is_system(name, type, kind)
        if system and not include_system:
            continue
        found.append((name, TYPES.get(kind, kind), access(call, name, type, system), descriptions.get(name), sql))
    return found


def is_system(name: str, type: str, kind: str) -> bool:
    "SQLite's bookkeeping, search-index shadow tables, and memory's own indexes and triggers."
    return (
        fold(name).startswith(("sqlite_", "_sqlite"))
        or kind == "shadow"
        or (is_memory(name) and type in ("index", "trigger"))
    )


def access(call: Call, name: str, type: str, system: bool) -> str:
    "What the SQL tools may do with an object."
    if type in ("index", "trigger"):
        return "memory's own" if is_memory(name) else "yours (destructive_query drops it)"
    if not is_memory(name):
        if system:
            return "read-only (SQLite's own)"
        return "read (saved view)" if type == "view" else "read and write"
    pinned = call.agent.pinned
    folded = fold(name)
    if pinned is not None and type == "table" and folded not in call.agent.scope_views | GLOBAL_TABLES:
        return f"not readable by a bridge pinned to project {pinned!r}"
    rows = f", project {pinned!r} rows only" if pinned is not None and folded in call.agent.scope_views else ""
    if folded in AUDIT_OBJECTS:
        return f"read-only (the SQL audit log{rows})"
    return f"read-only (memory{rows}): change it with the memory tools"


def list_tables(call: Call) -> str:
    "Tables and views as CSV: ``name,type,access``."
    result = CsvResult(call.limits.max_result_bytes, call.limits.max_cell_chars)
    result.add(["name", "type", "access"])
    found = [o for o in objects(call) if o[1] != "index" and o[1] != "trigger"]
    return finish(result, [(n, t, a) for n, t, a, _, _ in found], "table")


def get_schema(call: Call, include_system: Any) -> str:
    "Every object as CSV: ``type,name,access,description,sql``."
    if not isinstance(include_system, bool):
        raise InvalidInput("include_system: must be true or false")
    result = CsvResult(call.limits.max_result_bytes, call.limits.max_cell_chars)
    result.add(["type", "name", "access", "description", "sql"])
    rows = [(t, n, a, d, s) for n, t, a, d, s in objects(call, include_system)]
    return finish(result, rows, "object")


def describe_table(call: Call, table: Any) -> str:
    "One table's or view's columns as CSV, then its description, access and indexes."
    if not isinstance(table, str) or not table:
        raise InvalidInput("table: must be a non-empty string")
    found = [o for o in objects(call, include_system=True) if fold(o[0]) == fold(table) and o[1] not in ("index", "trigger")]
    if not found:
        raise InvalidInput(f"table: there is no table or view named {table!r}; list_tables shows them")
    name, type, access_text, description, _ = found[0]
    columns = call.conn.execute(f"PRAGMA main.table_xinfo({quote(name)})").fetchall()
    result = CsvResult(call.limits.max_result_bytes, call.limits.max_cell_chars)
    result.add(["column", "type", "not_null", "default", "primary_key"])
    rows = [(c[1], c[2], c[3], c[4], c[5]) for c in columns if c[6] in (0, 2, 3)]
    lines = [f"{type} {escaped(name)}: {access_text}"]
    if description:
        lines.append(f"description: {escaped(description)}")
    for index in call.conn.execute(f"PRAGMA main.index_list({quote(name)})").fetchall():
        lines.append(f"index {escaped(index[1])}{' (unique)' if index[2] else ''}")
    return finish(result, rows, "column", lines)


def finish(result: CsvResult, rows: Iterable[tuple[object, ...]], noun: str, lines: Iterable[str] = ()) -> str:
    "Add rows within the budget; the trailer says if any were left out."
    cut = None
    for row in rows:
        if not result.add(row):
            cut = f"the {result.max_bytes}-byte result limit was reached"
            break
        result.rows += 1
    trailer = f"{plural(result.rows, noun)} ({'cut: ' + cut if cut else 'complete'})"
    return result.text(trailer, *lines)
