"""``/-/memory/ledger``: one project's ledger as a timeline, with its activity chart; and its JSON twin.

The filters are query-string parameters (``project``, ``entity``, ``kind``, ``text``,
``actor``, ``origin``, ``from``, ``to``), the page is chosen by an event-id cursor
(``before``) and its size by ``limit``. The queries are the core's
(:mod:`datasette_memory.core.timeline`); this module reads the request and
remembers, between requests, the day counts: the ledger is append-only, so
only events appended since the last look are counted again. The chain's status
is the overview's, which checks it whole.
"""

import collections
import dataclasses
import weakref
from typing import Any

from datasette import Response, hookimpl
from markupsafe import Markup

from ..core import timeline
from ..governed.gate import holds
from ..governed.person_actions import APPROVE_ACTION
from .activity_chart import activity_svg
from .connection import call_memory
from .error_pages import handled
from .pages import chosen_project, int_arg, known_projects, respond, viewable_database, wants_json

FILTERS = ("entity", "kind", "actor", "origin", "from", "to", "text")
DAY_COUNTS_KEPT = 32  # filter combinations whose day counts are kept, most recently used
# per Datasette: the day counts by filters
_day_counts: "weakref.WeakKeyDictionary[Any, collections.OrderedDict[Any, timeline.DayCounts]]" = weakref.WeakKeyDictionary()


async def ledger_page(datasette: Any, request: Any) -> Response:
    "``/-/memory/ledger`` and ``/-/memory/ledger.json``: the timeline the query string asks for."
    await viewable_database(datasette, request)
    project = await chosen_project(datasette, request)
    given = {name: request.args.get(name) or None for name in FILTERS}
    chosen = timeline.filters(project, given["entity"], given["kind"], given["actor"], given["from"], given["to"], given["text"],
                              given["origin"])
    before = int_arg(request, "before", 0) if request.args.get("before") is not None else None
    limit = int_arg(request, "limit", timeline.DEFAULT_PAGE)
    data = await read_timeline(datasette, chosen, before, limit)
    data.update(project=project, projects=await known_projects(datasette), filters={**given, "before": before, "limit": limit})
    if not wants_json(request):
        data["chart"] = Markup(activity_svg(data["activity"], project))  # activity_svg escapes every text it draws
        data["may_redact"] = await holds(datasette, request, APPROVE_ACTION)
    return await respond(datasette, request, "ledger", "memory_ledger.html", data)


async def read_timeline(datasette: Any, chosen: timeline.Filters, before: int | None, limit: int) -> dict[str, Any]:
    "The page of events and the day counts, carried on from what this Datasette counted before."
    counts = _day_counts.setdefault(datasette, collections.OrderedDict())
    counted = dataclasses.replace(chosen, kind=None, actor=None, text=None)  # the day counts leave these to be picked out of them

    def read(memory: Any) -> dict[str, Any]:
        return {
            **timeline.events_page(memory.conn, chosen, before, limit),
            "activity": timeline.activity(memory.conn, chosen, known=counts.get(counted)),
            "origins": timeline.origin_choices(memory.conn),
        }

    data = await call_memory(datasette, read, project=chosen.project)
    data["activity"] = remember_counts(counts, counted, *data["activity"])
    return data


def remember_counts(counts: "collections.OrderedDict[Any, timeline.DayCounts]", key: Any, activity: dict[str, Any],
                    day_counts: timeline.DayCounts | None) -> dict[str, Any]:
    "Keep ``day_counts`` under ``key`` for the next request (the least recently used go); ``activity`` as it was."
    if day_counts is not None:
        counts[key] = day_counts
        counts.move_to_end(key)
        while len(counts) > DAY_COUNTS_KEPT:
            counts.popitem(last=False)
    return activity


@hookimpl(specname="register_routes")
def register_ledger_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [(r"^/-/memory/ledger(\.(?P<format>json))?$", handled(ledger_page))]
