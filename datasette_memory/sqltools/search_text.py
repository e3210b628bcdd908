"""search_text: SQL narrows the rows, a regular expression matches inside values.

The limits are never part of the SQL: ``where`` goes inside parentheses on
lines of its own, and rows, bytes and matches are counted here as rows
arrive. A ``where`` that ends in ``--`` or ``/*`` therefore swallows the
closing parenthesis and fails to compile, and one that escapes the
parentheses can change which rows come back but not how many are read.
"""

from typing import Any

from ..core.errors import InvalidInput
from ..core.validation import check_limit
from .csv_results import CsvResult, plural, trailer
from .execute import Call, check_sql, classify
from .guard import READ
from .lexer import Statement
from .names import fold, quote
from .regex import check_pattern, find_matches


def check_flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{field}: must be true or false")
    return value


def readable_columns(call: Call, table: str) -> list[str]:
    "The columns ``SELECT *`` gives, checked by the guard (so a pinned bridge's rules apply)."
    sql = f"SELECT * FROM {quote(table)} LIMIT 0"
    run = call.run(READ, sql, classify(sql, READ))
    cursor = run.execute()
    run.done()
    return [d[0] for d in cursor.description]


def check_table(call: Call, table: Any) -> str:
    "A table or view in the file (not SQLite's own), by its stored name."
    if not isinstance(table, str) or not table or "\x00" in table:
        raise InvalidInput("table: must be a non-empty string naming a table or view")
    row = call.conn.execute(
        "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE", [table]
    ).fetchone()
    if row is None or fold(row[0]).startswith("sqlite_"):
        raise InvalidInput(f"table: there is no table or view named {table!r}; list_tables shows them")
    return row[0]


def has_rowid(call: Call, table: str) -> bool:
    row = call.conn.execute("SELECT type, sql FROM main.sqlite_master WHERE name = ?", [table]).fetchone()
    return row[0] == "table" and "WITHOUT ROWID" not in (row[1] or "").upper()


def pick_columns(table: str, available: list[str], columns: Any) -> list[str]:
    "The columns to search, each checked against the table: all of them by default."
    if columns is None:
        return available
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise InvalidInput("columns: must be a non-empty list of column names, or left out to search every column")
    return [column_named(table, available, name, "columns") for name in columns]


def column_named(table: str, available: list[str], name: str, field: str) -> str:
    "The stored spelling of column ``name``, or an error listing the columns."
    for column in available:
        if fold(column) == fold(name):
            return column
    raise InvalidInput(f"{field}: {table} has no column {name!r}; its columns are {', '.join(available)}")


def pick_key(call: Call, table: str, available: list[str], key_column: Any) -> tuple[str, str]:
    "The SQL for the key of each row and its name: rowid for tables by default, else the first column."
    if key_column is None:
        return ("rowid", "rowid") if has_rowid(call, table) else (quote(available[0]), available[0])
    if not isinstance(key_column, str):
        raise InvalidInput("key_column: must be a column name")
    if fold(key_column) == "rowid" and "rowid" not in map(fold, available) and has_rowid(call, table):
        return "rowid", "rowid"
    name = column_named(table, available, key_column, "key_column")
    return quote(name), name


def search_text(
    call: Call,
    table: Any,
    pattern: Any,
    columns: Any,
    where: Any,
    key_column: Any,
    limit: Any,
    ignore_case: Any,
    fixed_strings: Any,
    context_chars: Any,
    engine: str,
) -> str:
    """
    Find ``pattern`` inside the values of ``table``'s rows that ``where`` selects.

    :return: CSV ``key,column,match,snippet`` with a ``# N matches`` trailer
    """
    limits = call.limits
    limit = check_limit(limit, "limit", 1, limits.max_rows)
    context_chars = check_limit(context_chars, "context_chars", 0, limits.max_context_chars)
    ignore_case = check_flag(ignore_case, "ignore_case")
    fixed_strings = check_flag(fixed_strings, "fixed_strings")
    pattern = check_pattern(pattern, fixed_strings, ignore_case, limits.max_pattern_chars)
    table = check_table(call, table)
    available = readable_columns(call, table)
    columns = pick_columns(table, available, columns)
    key, key_name = pick_key(call, table, available, key_column)
    sql = f"SELECT {key}, {', '.join(quote(c) for c in columns)} FROM {quote(table)}"
    if where is not None:
        sql += f" WHERE (\n{check_sql(where, 'where', limits)}\n)"
    keys, places, values, scan_cut = scan(call, sql, classify(sql, READ), columns)
    matches = find_matches(values, pattern, ignore_case, fixed_strings, limit + 1, call.deadline.remaining(), engine) if values else []
    return render(call, matches, keys, places, values, limit, context_chars, scan_cut, key_name)


def scan(call: Call, sql: str, found: Statement, columns: list[str]) -> tuple[list[Any], list[tuple[int, str]], list[str], str | None]:
    "Read rows within the scan caps: ``(keys, (row, column) per value, values, why the scan stopped)``."
    limits = call.limits
    run = call.run(READ, sql, found)
    cursor = run.execute()
    keys: list[Any]
    keys, places, values, size, cut = [], [], [], 0, None
    for row in iter(lambda: run.call(cursor.fetchone), None):
        if len(keys) == limits.max_scan_rows:
            cut = f"the scan limit of {limits.max_scan_rows} rows was reached; narrow the rows with where"
            break
        keys.append(row[0])
        for column, value in zip(columns, row[1:]):
            if isinstance(value, (str, int, float)):
                text = str(value)
                size += len(text.encode("utf-8", "replace"))
                places.append((len(keys) - 1, column))
                values.append(text)
        if size > limits.max_scan_bytes:
            cut = f"the scan limit of {limits.max_scan_bytes} bytes was reached; narrow the rows with where"
            break
    cursor.close()
    run.done()
    return keys, places, values, cut


def render(
    call: Call,
    matches: list[tuple[int, int, int]],
    keys: list[Any],
    places: list[tuple[int, str]],
    values: list[str],
    limit: int,
    context_chars: int,
    scan_cut: str | None,
    key_name: str,
) -> str:
    limits = call.limits
    result = CsvResult(limits.max_result_bytes, limits.max_cell_chars)
    result.add([key_name, "column", "match", "snippet"])
    cut = scan_cut
    for number, (index, start, end) in enumerate(matches):
        if number == limit:
            cut = f"the match limit of {limit} was reached and more matches exist; raise limit or narrow the search"
            break
        row, column = places[index]
        value = values[index]
        before = ("…" if start > context_chars else "") + value[max(0, start - context_chars) : start]
        after = value[end : end + context_chars] + ("…" if end + context_chars < len(value) else "")
        if not result.add([keys[row], column, value[start:end], before + value[start:end] + after]):
            cut = f"the {limits.max_result_bytes}-byte result limit was reached"
            break
        result.rows += 1
    text = trailer(result, "match", cut) + f"; {plural(len(keys), 'row')} scanned"
    call.record.outcome = text
    return result.text(text)
