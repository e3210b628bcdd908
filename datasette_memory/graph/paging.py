"""The graph a page at a time: consecutive slices of what reading it whole returns, its entities and then its relations.

A page holds at most ``limit`` items (entities and relations counted together)
and stops before its items pass :data:`PAGE_BUDGET` bytes of JSON (it always
holds one). Its cursor is the position after its last item: which list, and the
id of that item's row. Writes between pages therefore never repeat an item nor
skip one that was there throughout; an entity created meanwhile comes on a later
page unless the reading has already passed the entities. The past (``as_of``)
cannot change, so it is paged by position in the replayed graph, and its
cursors name their moment.
"""

import base64
import binascii
import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from ..core.budget import json_bytes
from ..core.errors import InvalidInput
from ..core.validation import check_limit
from .parsing import RELATION_FIELDS
from .reads import count_after, entity_rows, relation_rows

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
PAGE_BUDGET = 100_000
PARTS = ("entities", "relations")
CURSOR_VERSION = 1
START_AGAIN = "pass the next_cursor a page of this read returned, or leave cursor out to start at the first page"


class Page:
    """
    A page being filled: its items, their bytes, and where it ends.

    :param limit: the most items it may hold
    """

    def __init__(self, limit: int):
        self.items: dict[str, list[Any]] = {part: [] for part in PARTS}
        self.room, self.used, self.full = limit, 0, False
        self.cut: str | None = None
        self.position: dict[str, int] = {}

    def take(self, part: str, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
        "Add ``(position, item)`` rows of ``part`` until the page is full."
        for position, item in rows:
            if self.room == 0:
                self.full, self.cut = True, "limit"
                return
            size = json_bytes(item)
            if self.used + size > PAGE_BUDGET and self.used:
                self.full, self.cut = True, "budget"
                return
            self.items[part].append(item)
            self.used, self.room = self.used + size, self.room - 1
            self.position[part] = position
        self.full = self.full or self.room == 0

    def result(self, project: str, moment: int | None, at: tuple[str, int], remaining: dict[str, int]) -> dict[str, Any]:
        """
        ``{entities, relations, page}``: the items, and what the page returned, what remains and the next cursor.

        :param at: the position after the page's last item, ``(part, position)``
        :param remaining: how many entities and relations come after it
        """
        more = any(remaining.values())
        return {
            **self.items,
            "page": {
                "returned": {part: len(items) for part, items in self.items.items()},
                "remaining": remaining,
                "next_cursor": encode_cursor(project, *at, moment) if more else None,
                "ended_by": (self.cut or "limit") if more else "end of graph",
            },
        }


def read_page(conn: sqlite3.Connection, project: str, limit: Any, cursor: Any) -> dict[str, Any]:
    """
    One page of ``project``'s graph as it is now: ``{entities, relations, page}``.

    :param limit: the most entities and relations in the page; None for :data:`DEFAULT_LIMIT`
    :param cursor: the ``next_cursor`` of the page before; None for the first page
    """
    page = Page(page_limit(limit))
    part, after = decode_cursor(cursor, project, None)
    entities_after = after if part == "entities" else None  # None once the reading has passed the entities
    relations_after = after if part == "relations" else 0
    if entities_after is not None:
        rows = entity_rows(conn, project, entities_after, page.room)
        page.take("entities", ((id, entity(name, kind, obs)) for id, name, kind, obs in rows))
        entities_after = page.position.get("entities", entities_after)
    if not page.full:
        page.take("relations", ((id, dict(zip(RELATION_FIELDS, row))) for id, *row in relation_rows(conn, project, relations_after, page.room)))
    if "relations" in page.position:
        entities_after, relations_after = None, page.position["relations"]
    remaining = {
        "entities": count_after(conn, project, "entities", entities_after) if entities_after is not None else 0,
        "relations": count_after(conn, project, "relations", relations_after),
    }
    at = ("entities", entities_after) if entities_after is not None else ("relations", relations_after)
    return page.result(project, None, at, remaining)


def page_of(graph: dict[str, list[Any]], project: str, moment: int, limit: Any, cursor: Any) -> dict[str, Any]:
    """
    One page of a graph read whole (memory as of event ``moment``), by position in its lists.

    :param graph: ``{entities, relations}``
    :param limit: the most entities and relations in the page; None for :data:`DEFAULT_LIMIT`
    :param cursor: the ``next_cursor`` of the page before; None for the first page
    """
    page = Page(page_limit(limit))
    part, after = decode_cursor(cursor, project, moment)
    at = (part, after)
    for name in PARTS[PARTS.index(part):]:
        start = after if name == part else 0
        page.take(name, enumerate(graph[name][start:], start + 1))
        at = (name, page.position.get(name, start))
        if page.full:
            break
    ends = {"entities": len(graph["entities"]) if at[0] == "relations" else at[1], "relations": at[1] if at[0] == "relations" else 0}
    return page.result(project, moment, at, {name: max(0, len(graph[name]) - ends[name]) for name in PARTS})


def entity(name: str, entity_type: str, observations: list[str]) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": observations}


def page_limit(limit: Any) -> int:
    return DEFAULT_LIMIT if limit is None else check_limit(limit, "limit", 1, MAX_LIMIT)


def encode_cursor(project: str, part: str, position: int, moment: int | None) -> str:
    "An opaque cursor: the read's project and moment, and the position after the last item returned."
    payload = json.dumps([CURSOR_VERSION, project, part, position, moment], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_cursor(cursor: Any, project: str, moment: int | None) -> tuple[str, int]:
    """
    Where a page starts: ``(part, position after which it starts)``; the first page for None.

    :raises InvalidInput: for a cursor no page of this read returned
    """
    if cursor is None:
        return "entities", 0
    if not isinstance(cursor, str):
        raise InvalidInput(f"cursor: must be a string, got {type(cursor).__name__}; {START_AGAIN}")
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        value = None
    if not (
        isinstance(value, list) and len(value) == 5 and value[0] == CURSOR_VERSION and isinstance(value[1], str)
        and value[2] in PARTS and isinstance(value[3], int) and value[3] >= 0 and (value[4] is None or isinstance(value[4], int))
    ):
        raise InvalidInput(f"cursor: {cursor[:60]!r} is not a cursor read_graph returned; {START_AGAIN}")
    _, paged, part, position, paged_moment = value
    if paged != project:
        raise InvalidInput(f"cursor: it pages project {paged!r}, not {project!r}; use it with project {paged!r}, or {START_AGAIN}")
    if paged_moment != moment:
        raise InvalidInput(f"cursor: it pages {moment_words(paged_moment)}, not {moment_words(moment)}; "
                           f"give the as_of it was made with, or {START_AGAIN}")
    return part, position


def moment_words(moment: int | None) -> str:
    return "memory as it is now" if moment is None else f"memory as of event {moment}"
