"""Results as CSV text with a ``#`` trailer, within the caps.

Every line the server adds starts with ``#``, and no data line can: each
value has its backslashes, line breaks and control characters escaped
(``\\\\``, ``\\n``, ``\\r``, ``\\xHH``, ``\\uHHHH``), so one value is never
more than one line, and a cell starting with ``#`` is quoted. A value cannot
forge a trailer or a status line.
"""

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

LINE_BREAKS = {0x0A: "\\n", 0x0D: "\\r", 0x85: "\\x85", 0x2028: "\\u2028", 0x2029: "\\u2029"}
ESCAPES = {
    ord("\\"): "\\\\",
    0x7F: "\\x7f",
    **{c: f"\\x{c:02x}" for c in range(0x20) if c != 0x09},
    **LINE_BREAKS,
}


def escape(text: str) -> str:
    "``text`` on one line: backslashes, line breaks and control characters escaped."
    return text.translate(ESCAPES)


def shown(value: object, max_chars: int) -> tuple[str | None, bool]:
    """
    A value as CSV shows it, and whether it was shortened.

    NULL is an empty cell, a blob is ``x'hex'``, text is escaped; anything
    longer than ``max_chars`` is cut and says how much is missing.

    :param value: a value from SQLite
    :param max_chars: the longest text shown
    """
    if value is None:
        return None, False
    if isinstance(value, bytes):
        text = "x'" + value.hex() + "'"
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = escape(str(value))
    if len(text) <= max_chars:
        return text, False
    return f"{text[:max_chars]}…[{len(text) - max_chars} more characters]", True


def cell(text: str | None) -> str:
    "One CSV cell: NULL empty, the empty string as ``\"\"``, quoted when it must be."
    if text is None:
        return ""
    if text == "" or text[0] in "# " or text[-1] == " " or any(c in text for c in ',"\t'):
        return '"' + text.replace('"', '""') + '"'
    return text


@dataclass
class CsvResult:
    """
    CSV lines gathered within a byte budget.

    :param max_bytes: the budget, header and every row included
    :param max_chars: the longest value shown in a cell
    """

    max_bytes: int
    max_chars: int
    lines: list[str] = field(default_factory=list)
    size: int = 0
    rows: int = 0
    shortened: int = 0

    def add(self, values: Iterable[object]) -> bool:
        "Add a line of values; False (and nothing added) if it would go over the budget."
        cells = []
        for value in values:
            text, cut = shown(value, self.max_chars)
            self.shortened += cut
            cells.append(cell(text))
        line = ",".join(cells)
        size = len(line.encode("utf-8")) + 1
        if self.size + size > self.max_bytes:
            return False
        self.lines.append(line)
        self.size += size
        return True

    def text(self, *trailers: str) -> str:
        "The CSV and its trailer lines."
        return "\n".join(self.lines + ["# " + t for t in trailers]) + "\n"


def plural(count: int, noun: str) -> str:
    "``1 row``, ``2 rows``, ``2 matches``."
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun}es" if noun.endswith(("ch", "s")) else f"{count} {noun}s"


def rows_to_csv(cursor: sqlite3.Cursor, limit: int, max_bytes: int, max_chars: int, noun: str = "row") -> tuple[CsvResult, str]:
    """
    Read up to ``limit`` rows of ``cursor`` into CSV within ``max_bytes``.

    :param cursor: an executed cursor with a result
    :param limit: most rows to return
    :param max_bytes: the byte budget, header included
    :param max_chars: the longest value shown in a cell
    :param noun: what a row is called in the trailer
    :return: ``(CsvResult, trailer text)``
    """
    result = CsvResult(max_bytes, max_chars)
    header = [d[0] for d in cursor.description]
    if not result.add(header):
        return result, (
            f"0 {noun}s (cut: the header alone is over the {max_bytes}-byte result limit; "
            "select fewer columns or give them shorter names)"
        )
    cut = None
    for values in iter(cursor.fetchone, None):
        if result.rows == limit:
            cut = f"the row limit of {limit} was reached and more rows exist; " + (
                "every change was made, only this list is cut"
                if noun == "returned row"
                else "narrow the query, page with LIMIT/OFFSET, or raise limit"
            )
            break
        if not result.add(values):
            cut = f"the {max_bytes}-byte result limit was reached; select fewer or shorter columns, or fewer rows"
            break
        result.rows += 1
    return result, trailer(result, noun, cut)


def trailer(result: CsvResult, noun: str, cut: str | None) -> str:
    "``N rows (complete)`` or ``N rows (cut: why)``, and how many values were shortened."
    text = f"{plural(result.rows, noun)} ({'cut: ' + cut if cut else 'complete'})"
    if result.shortened:
        text += f"; {plural(result.shortened, 'value')} shortened to {result.max_chars} characters"
    return text
