"""Names are the strongest evidence: the entities a query names, by their names or former names (aliases).

Names are compared by key (:mod:`~datasette_memory.core.name_keys`), so ``checkout-api``,
``checkout_api``, ``checkout api`` and ``checkoutApi`` name the same entity. A query
names an entity at one of three levels:

3. it is the name (``checkout_api``, ``checkoutApi``);
2. its content is the name: it holds the whole name, and the name holds every one of
   its content terms (``what is checkout-api?``);
1. it holds the whole name among other words (``does checkout api call orders?``).

A named entity is a match whatever the coverage rule says about the rest of the query
(its words may be in every other entity's observations), and ranks above every entity
the query does not name (:mod:`.ranking`). A query holding only part of a name
(``postgres`` of ``postgres-primary``) does not name it: the coverage rule decides, as
for any other words. Names are found by index lookups: each run of the query's words
that holds a content term (or is the whole query), as a key (m011).
"""

import sqlite3
from dataclasses import dataclass, field

from ..core.name_keys import NAME_WORD, index_keys, name_key, names_by_key, stored_key, word_runs
from .terms import content_terms


@dataclass
class NameMatch:
    """How a query names one entity: the level, what to say about it, and the query's content terms the name accounts for."""

    level: int  # 3: the query is the name; 2: its content is; 1: it holds the name among other words
    said: str
    terms: set[str] = field(default_factory=set)


def said(level: int, name: str, current: str) -> str:
    "Why a name makes the entity a match, in words: the name itself, or the former name it was found by."
    which = "its name" if name == current else f"its former name {name}"
    if level == 3:
        return f"the query is {which}"
    if level == 2:
        return "the query names it" if name == current else f"the query names it by its former name {name}"
    return f"the query holds {which}"


def runs(query: str, terms: list[str]) -> dict[str, set[str]]:
    """
    Each run of the query's words that could be a name, as an index key, with
    the content terms it holds: a run needs a content term, unless it is the whole query.
    """
    found = NAME_WORD.findall(query)
    wanted = set(terms)
    each = [set(content_terms(word)) & wanted for word in found]  # the content term each word is, if any
    keys: dict[str, set[str]] = {}
    for start, end in word_runs(len(found)):
        held = set().union(*each[start:end])
        if held or end - start == len(found):
            for key in index_keys(found[start:end]):
                keys.setdefault(key, set()).update(held)
    return keys


def named_entities(conn: sqlite3.Connection, project: str, query: str, terms: list[str]) -> dict[int, NameMatch]:
    """
    The entities ``query`` names, by entity id, each at its highest level.

    :param conn: a connection to the memory file
    :param project: the project scope
    :param query: the query as written
    :param terms: its content terms (:func:`~.terms.content_terms`)
    """
    named: dict[int, NameMatch] = {}
    whole = name_key(query)
    keys = runs(query, terms)
    for entity_id, name, current in names_by_key(conn, project, keys):
        held = keys.get(stored_key(name), set())
        level = 3 if name_key(name) == whole else 2 if set(terms) <= held else 1
        note(named, entity_id, NameMatch(level, said(level, name, current), held))
    return named


def note(named: dict[int, NameMatch], entity_id: int, match: NameMatch) -> None:
    "Keep an entity's strongest name match, with the terms of every match."
    kept = named.get(entity_id)
    if kept is None or match.level > kept.level:
        named[entity_id] = match
        if kept is not None:
            match.terms |= kept.terms
    else:
        kept.terms |= match.terms
