"""Name keys: how a name is recognised however its words are written.

People write a name's words with hyphens, underscores, dots, spaces or in camelCase
(``checkout-api``, ``checkout_api``, ``checkout api``, ``checkoutApi``). A name's key
is its letters and digits, case folded, separators left out, so those four share one.
Migration m011 indexes entities and former names (aliases) by the same key, with only
ASCII letters lower-cased, as SQLite's ``lower()`` does; each run of a query's words is
looked up there as a key.
"""

import json
import re
import sqlite3
import string
from collections.abc import Iterable

from .migrations import name_key_sql

MAX_NAME_WORDS = 8  # the longest run of a query's words looked up as a name
MAX_KEY_SPELLINGS = 16  # most spellings of one run's letters other than ASCII looked up
NAME_WORD = re.compile(r"[^\W_]+")
ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
NAMES_BY_KEY = (
    f"SELECT id, name, name FROM entities INDEXED BY entities_by_name_key "
    f"WHERE project = ?1 AND {name_key_sql('name')} IN (SELECT value FROM json_each(?2)) "
    f"UNION ALL SELECT a.entity_id, a.alias, e.name FROM memory_aliases a INDEXED BY memory_aliases_by_key "
    f"JOIN entities e ON e.id = a.entity_id WHERE a.project = ?1 AND {name_key_sql('a.alias')} IN (SELECT value FROM json_each(?2))"
)


def name_key(text: str) -> str:
    "A name's letters and digits, case folded: names that differ only in separators and case share it."
    return "".join(NAME_WORD.findall(text)).casefold()


def index_key(words: Iterable[str]) -> str:
    "Words as one key the way m011's indexes hold a name: joined, ASCII letters lower-cased."
    return "".join(words).translate(ASCII_LOWER)


def index_keys(words: list[str]) -> set[str]:
    """
    The keys a name written with ``words`` may have in m011's indexes, which
    lower-case ASCII letters only: as written, and with each word holding other
    letters also written lower-case, capitalized and upper-case (``ünïcode`` may
    be stored as ``Ünïcode``), at most :data:`MAX_KEY_SPELLINGS` of them.
    """
    spellings = [""]
    for word in words:
        forms = list(dict.fromkeys([word, word.lower(), word[:1].upper() + word[1:].lower(), word.upper()])) if not word.isascii() else [word]
        spellings = [s + form for s in spellings for form in forms][:MAX_KEY_SPELLINGS]
    return {index_key([spelling]) for spelling in spellings}


def stored_key(name: str) -> str:
    "A stored name's key as m011's indexes hold it, when its only separators are ones they leave out."
    return index_key(NAME_WORD.findall(name))


def word_runs(words: int) -> list[tuple[int, int]]:
    "Each run of at most :data:`MAX_NAME_WORDS` of ``words`` words, ``(start, end)``: the ones that could be a name."
    return [(start, end) for start in range(words) for end in range(start + 1, min(words, start + MAX_NAME_WORDS) + 1)]


def names_by_key(conn: sqlite3.Connection, project: str, keys: Iterable[str]) -> list[tuple[int, str, str]]:
    """
    The project's entities with a name or former name whose index key is one of
    ``keys``: ``[(entity id, the name found, its current name)]``.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param keys: keys as :func:`index_key` makes them
    """
    return conn.execute(NAMES_BY_KEY, [project, json.dumps(list(keys))]).fetchall()


def every_name(conn: sqlite3.Connection, entity_ids: Iterable[int]) -> dict[int, list[str]]:
    "Each entity's current name, then its former names (aliases)."
    ids = json.dumps(sorted(set(entity_ids)))
    names: dict[int, list[str]] = {}
    rows = conn.execute(
        "SELECT id, name FROM entities WHERE id IN (SELECT value FROM json_each(?1)) "
        "UNION ALL SELECT entity_id, alias FROM (SELECT entity_id, alias FROM memory_aliases "
        "WHERE entity_id IN (SELECT value FROM json_each(?1)) ORDER BY id)",
        [ids],
    )
    for entity_id, name in rows:
        names.setdefault(entity_id, []).append(name)
    return names
