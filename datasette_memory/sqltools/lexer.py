"""Just enough of SQLite's tokenizer to name what a statement is.

The authorizer (see :mod:`.guard`) is what refuses actions; the statement's
verb adds what the authorizer cannot see: statements such as ``VACUUM`` that
report nothing to it, and whether a DELETE is the statement itself or a
cascade of the INSERT it belongs to. The rules for whitespace and comments
are SQLite's, so a comment cannot hide a verb from one and show it to the other.
"""

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from .sql_errors import SqlRefused

WHITESPACE = " \t\n\f\r"
QUOTES = {"'": "'", '"': '"', "`": "`", "[": "]"}


@dataclass(frozen=True)
class Statement:
    """
    What a statement does, from its leading keywords.

    :param verb: SELECT, INSERT, CREATE, ... (for ``WITH``, the verb after the CTEs)
    :param object: for CREATE and DROP: TABLE, INDEX, VIEW, TRIGGER or VIRTUAL
    :param temp: CREATE TEMP / TEMPORARY
    :param explain: the statement is wrapped in EXPLAIN [QUERY PLAN]
    :param target: the table a data or schema change names (unquoted), if found
    """

    verb: str
    object: str | None = None
    temp: bool = False
    explain: bool = False
    target: str | None = None


def tokens(sql: str) -> Iterator[tuple[str, str]]:
    "Yield the significant tokens of ``sql`` as ``(kind, text)``: word, quoted, or punct."
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in WHITESPACE:
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif c in QUOTES:
            end = closing_quote(sql, i)
            yield "quoted", sql[i:end]
            i = end
        elif c.isalnum() or c == "_" or ord(c) >= 0x80:
            start = i
            while i < n and (sql[i].isalnum() or sql[i] in "_$" or ord(sql[i]) >= 0x80):
                i += 1
            yield "word", sql[start:i]
        else:
            yield "punct", c
            i += 1


def closing_quote(sql: str, start: int) -> int:
    "The index just past the quoted token starting at ``start``."
    close = QUOTES[sql[start]]
    i = start + 1
    while True:
        end = sql.find(close, i)
        if end < 0:
            return len(sql)
        if close != "]" and sql.startswith(close * 2, end):
            i = end + 2
            continue
        return end + 1


def statement(sql: str) -> Statement:
    """
    Name the statement ``sql`` makes.

    :param sql: one SQL statement
    :raises SqlRefused: if it has no statement in it
    """
    words = iter(tokens(sql))
    first = next_word(words)
    if first is None:
        raise SqlRefused("query: there is no SQL statement in it (only whitespace or comments)")
    found = classify(first, words)
    return dataclasses.replace(found, target=target(found, list(tokens(sql))))


def target(found: Statement, all_tokens: list[tuple[str, str]]) -> str | None:
    """
    The table a write or schema change names: after INTO, UPDATE [OR ...], FROM,
    TABLE, VIEW, INDEX ... ON, TRIGGER ... ON. Only for clearer refusals: the
    authorizer decides.
    """
    texts = [text.upper() if kind == "word" else None for kind, text in all_tokens]
    if found.verb not in texts:
        return None
    verb = texts.index(found.verb)
    start: int | None
    if found.verb == "UPDATE":
        start = verb + (3 if texts[verb + 1 : verb + 2] == ["OR"] else 1)
    elif found.verb == "CREATE" and found.object in ("INDEX", "TRIGGER"):
        start = after(texts, "ON", verb)
    elif found.verb in ("CREATE", "DROP"):
        start = after(texts, found.object, verb)
        while start is not None and texts[start : start + 1] and texts[start] in ("IF", "NOT", "EXISTS", "TABLE"):
            start += 1
    else:
        marker = {"INSERT": "INTO", "REPLACE": "INTO", "DELETE": "FROM", "ALTER": "TABLE"}.get(found.verb)
        start = after(texts, marker, verb) if marker else None
    return name_at(all_tokens, start)


def after(texts: list[str | None], word: str | None, start: int) -> int | None:
    "The index just past the first ``word`` at or after ``start``, or None."
    for i in range(start, len(texts)):
        if texts[i] == word:
            return i + 1
    return None


def name_at(all_tokens: list[tuple[str, str]], start: int | None) -> str | None:
    "The (possibly schema-qualified) name starting at token ``start``, unquoted."
    if start is None or start >= len(all_tokens):
        return None
    names = [unquote(all_tokens[start])]
    if start + 2 < len(all_tokens) and all_tokens[start + 1][1] == ".":
        names.append(unquote(all_tokens[start + 2]))
    return ".".join(names)


def unquote(token: tuple[str, str]) -> str:
    kind, text = token
    if kind != "quoted":
        return text
    close = QUOTES[text[0]]
    return text[1:-1].replace(close * 2, close) if close != "]" else text[1:-1]


def classify(first: str, words: Iterator[tuple[str, str]]) -> Statement:
    if first == "EXPLAIN":
        following = next_word(words)
        if following == "QUERY":
            next_word(words)  # PLAN
            following = next_word(words)
        inner = classify(following or "", words)
        return Statement(inner.verb, inner.object, inner.temp, explain=True)
    if first == "WITH":
        return Statement(verb_after_ctes(words))
    if first in ("CREATE", "DROP"):
        return create_or_drop(first, words)
    return Statement(first)


def create_or_drop(verb: str, words: Iterator[tuple[str, str]]) -> Statement:
    word = next_word(words)
    temp = word in ("TEMP", "TEMPORARY")
    if temp:
        word = next_word(words)
    if word == "UNIQUE":
        word = next_word(words)
    return Statement(verb, word, temp)


def next_word(words: Iterator[tuple[str, str]]) -> str | None:
    "The next token upper-cased (punctuation and quoted names too), or None at the end."
    for kind, text in words:
        return text.upper() if kind == "word" else text
    return None


def verb_after_ctes(words: Iterator[tuple[str, str]]) -> str:
    """
    Skip ``[RECURSIVE] name [(columns)] AS [NOT] [MATERIALIZED] (...)`` items and
    return the word after the last one: the statement's verb. Keywords such as
    REPLACE can name a CTE, so only the word after a closed CTE body counts.
    """
    depth, closed = 0, False
    for kind, text in words:
        if closed and text != "," and text.upper() != "AS":
            return text.upper() if kind == "word" else text
        closed = False
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
            closed = depth == 0
    return "WITH"
