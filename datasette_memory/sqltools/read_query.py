"""read_query: one read-only statement, CSV back."""

from typing import Any

from ..core.validation import check_limit
from .csv_results import rows_to_csv
from .execute import Call, check_sql, classify
from .guard import READ


def read_query(call: Call, query: Any, limit: Any) -> str:
    """
    Run one SELECT, VALUES, EXPLAIN or read-only PRAGMA on a read-only connection.

    :param call: the call
    :param query: the statement
    :param limit: most rows to return, or None for the default
    :return: CSV with a ``# N rows`` trailer saying whether and why it was cut
    """
    limits = call.limits
    limit = limits.default_rows if limit is None else check_limit(limit, "limit", 1, limits.max_rows)
    query = check_sql(query, "query", limits)
    run = call.run(READ, query, classify(query, READ))
    cursor = run.execute()
    if cursor.description is None:
        run.done()
        call.record.outcome = "no result"
        return "# 0 rows (complete)\n"
    result, trailer = run.call(rows_to_csv, cursor, limit, limits.max_result_bytes, limits.max_cell_chars)
    run.done()
    call.record.outcome = trailer
    return result.text(trailer)
