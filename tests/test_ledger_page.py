"""``/-/memory/ledger``: the ledger as a timeline, its filters, its pages, its chart, and its JSON twin.

Every test writes through the core into a real file and reads through Datasette's
client. Events on past days are written with the ledger's clock turned back
(``at_day``): the core writes them, in order, as it would have then.
"""

import datetime
import re
import sqlite3
from urllib.parse import quote

import pytest
from datasette.app import Datasette

from datasette_memory import Memory
from datasette_memory.core import ledger, timeline
from datasette_memory.plugin.activity_chart import activity_svg

from .governance import issue_reviewer

TODAY = datetime.datetime.now(datetime.timezone.utc).date()


@pytest.fixture
def open_memory(db_path, lexical):
    "Open the file as ``actor`` in ``session`` and ``project``; closed at the end."
    opened = []

    def open_(actor="agent-a", session="s1", project="payments"):
        memory = Memory.open(db_path, project=project, actor=actor, session=session, config=lexical)
        opened.append(memory)
        return memory

    yield open_
    for memory in opened:
        memory.close()


@pytest.fixture
def at_day(monkeypatch):
    "Turn the ledger's clock to noon, ``days_ago`` days ago (None: now again)."

    def turn(days_ago):
        if days_ago is None:
            monkeypatch.undo()
            return
        moment = datetime.datetime.combine(TODAY - datetime.timedelta(days=days_ago), datetime.time(12), datetime.timezone.utc)
        monkeypatch.setattr(ledger, "now", lambda: moment.isoformat(timespec="microseconds"))

    return turn


async def served(db_path, **kwargs):
    datasette = Datasette([str(db_path)], **kwargs)
    await datasette.invoke_startup()
    return datasette


async def ledger_json(datasette, query="project=payments", **kwargs):
    response = await datasette.client.get(f"/-/memory/ledger.json?{query}", **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def events_of(data):
    "Every event on a page, newest first, checkpoints included."
    return [event for entry in data["timeline"] for event in (entry["events"] if entry["type"] == "group" else [entry["event"]])]


def ids_of(data):
    return [event["id"] for event in events_of(data)]


def stored_events(db_path, project="payments"):
    "The oracle: the project's events as the file holds them, newest first."
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    rows = [dict(row) for row in conn.execute("SELECT * FROM events WHERE project = ? ORDER BY id DESC", [project])]
    conn.close()
    return rows


@pytest.fixture
def graph(open_memory):
    "Two agents working on one graph in turns, a checkpoint, a note in another project."
    a, b = open_memory("agent-a", "s1"), open_memory("agent-b", "s2")
    a.create_entities([entity("auth", "service", "listens on port 8443"), entity("db", "database"), entity("cache", "service")])
    b.create_relations([{"from": "auth", "to": "db", "relationType": "reads"}, {"from": "cache", "to": "auth", "relationType": "fronts"}])
    a.add_observations([{"entityName": "db", "contents": ["postgres 15"]}])
    a.checkpoint("wired auth to db")
    b.update_observation("auth", "listens on port 8443", "listens on port 9443 behind the proxy")
    b.append_event("moved auth behind the proxy", "decision")
    open_memory("agent-c", None, "mobile").append_event("a note elsewhere")
    return a, b


def entity(name, entity_type, *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


async def test_the_page_is_in_the_navigation(db_path, graph):
    datasette = await served(db_path)
    response = await datasette.client.get("/-/memory/ledger?project=payments")
    assert response.status_code == 200
    assert re.search(r'<a href="/-/memory/ledger" aria-current="page">Ledger</a>', response.text)
    assert "<h1>Ledger</h1>" in response.text


async def test_events_newest_first_grouped_by_session_and_actor(db_path, open_memory):
    a, b = open_memory("agent-a", "s1"), open_memory("agent-b", "s2")
    a.append_event("a1")
    a.append_event("a2")
    b.append_event("b1")
    a.append_event("a3")
    b.append_event("b2")
    b.append_event("b3")
    data = await ledger_json(await served(db_path))
    assert [event["new"] for event in events_of(data)] == ["b3", "b2", "a3", "b1", "a2", "a1"]
    assert ids_of(data) == sorted(ids_of(data), reverse=True)
    groups = [(g["actor"], g["session"], g["count"], [e["new"] for e in g["events"]]) for g in data["timeline"]]
    assert groups == [
        ("agent-b", "s2", 2, ["b3", "b2"]),
        ("agent-a", "s1", 1, ["a3"]),
        ("agent-b", "s2", 1, ["b1"]),
        ("agent-a", "s1", 2, ["a2", "a1"]),
    ]
    first = data["timeline"][0]
    assert (first["newest"], first["oldest"]) == (first["events"][0]["ts"], first["events"][-1]["ts"])


async def test_a_session_change_by_one_actor_starts_a_group(db_path, open_memory):
    open_memory("agent-a", "s1").append_event("one")
    open_memory("agent-a", "s2").append_event("two")
    open_memory("agent-a", None).append_event("three")
    data = await ledger_json(await served(db_path))
    assert [(g["session"], g["count"]) for g in data["timeline"]] == [(None, 1), ("s2", 1), ("s1", 1)]


async def test_the_page_shows_each_group_with_its_header(db_path, graph):
    html = (await (await served(db_path)).client.get("/-/memory/ledger?project=payments")).text
    assert html.count('class="memory-session"') == 4  # b, (checkpoint), a, b, a
    assert re.search(r"<strong><bdi>agent-b</bdi></strong>\s*<span class=\"memory-meta\">session <code><bdi>s2</bdi></code>", html)
    assert "2 events" in html


@pytest.mark.parametrize(
    "query, keep",
    [
        ("entity=auth", lambda e: e["target"] == "auth" or (e["kind"] == "create_relation" and "auth" in e["target"])),
        ("entity=db", lambda e: e["target"] == "db" or e["target"] == '["auth", "reads", "db"]'),
        ("kind=create_entity", lambda e: e["kind"] == "create_entity"),
        ("actor=agent-b", lambda e: e["actor"] == "agent-b"),
        ("actor=agent-b&kind=create_relation", lambda e: e["actor"] == "agent-b" and e["kind"] == "create_relation"),
        ("entity=auth&actor=agent-a", lambda e: e["target"] == "auth" and e["actor"] == "agent-a"),
        (f"from={TODAY}&to={TODAY}", lambda e: True),
        (f"from={TODAY + datetime.timedelta(days=1)}", lambda e: False),
        (f"to={TODAY - datetime.timedelta(days=1)}", lambda e: False),
        ("kind=no-such-kind", lambda e: False),
        # words in the target or the values, ignoring case: how a person finds the hooks' activity
        ("text=READS", lambda e: "reads" in " ".join(str(e[c] or "") for c in ("target", "new", "old")).lower()),
        ("text=auth&kind=create_relation", lambda e: e["kind"] == "create_relation" and "auth" in e["target"]),
        ("text=no+such+words", lambda e: False),
    ],
)
async def test_each_filter_narrows_exactly(db_path, graph, query, keep):
    data = await ledger_json(await served(db_path), f"project=payments&{query}")
    assert ids_of(data) == [e["id"] for e in stored_events(db_path) if keep(e)]


async def test_the_project_filter(db_path, graph):
    datasette = await served(db_path)
    mobile = await ledger_json(datasette, "project=mobile")
    assert [e["new"] for e in events_of(mobile)] == ["a note elsewhere"]
    payments = await ledger_json(datasette)
    assert "a note elsewhere" not in [e["new"] for e in events_of(payments)]
    assert mobile["projects"] == payments["projects"] == ["default", "mobile", "payments"]


async def test_a_time_filter_to_the_microsecond(db_path, graph):
    events = stored_events(db_path)
    middle = events[3]
    datasette = await served(db_path)
    up_to = await ledger_json(datasette, f"project=payments&to={middle['ts'].replace('+', '%2B')}")
    assert ids_of(up_to) == [e["id"] for e in events if e["ts"] <= middle["ts"]]
    since = await ledger_json(datasette, f"project=payments&from={middle['ts'].replace('+', '%2B')}")
    assert ids_of(since) == [e["id"] for e in events if e["ts"] >= middle["ts"]]


async def test_days_filter_and_chart(db_path, open_memory, at_day):
    memory = open_memory()
    for days_ago in (20, 5, 5, 2):
        at_day(days_ago)
        memory.append_event(f"{days_ago} days ago", "note" if days_ago != 2 else "decision")
    at_day(None)
    memory.append_event("today")
    datasette = await served(db_path)
    day = lambda n: (TODAY - datetime.timedelta(days=n)).isoformat()  # noqa: E731
    narrowed = await ledger_json(datasette, f"project=payments&from={day(5)}&to={day(2)}")
    assert [e["new"] for e in events_of(narrowed)] == ["2 days ago", "5 days ago", "5 days ago"]
    assert narrowed["activity"]["first_day"] == day(5) and narrowed["activity"]["last_day"] == day(2)
    assert [(d["day"], d["counts"]) for d in narrowed["activity"]["days"]] == [(day(5), {"note": 2}), (day(2), {"decision": 1})]
    whole = await ledger_json(datasette)
    assert whole["activity"]["first_day"] == day(20) and whole["activity"]["last_day"] == TODAY.isoformat()
    assert whole["activity"]["total"] == 5 and whole["activity"]["kinds"] == ["note", "decision"]
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert html.count('<g class="memory-bar"') == 4  # four days with events, in a range of 21


async def test_the_chart_counts_at_most_the_last_90_days(db_path, open_memory, at_day):
    memory = open_memory()
    for days_ago in (120, 89, 0):
        at_day(days_ago)
        memory.append_event(f"{days_ago} days ago")
    at_day(None)
    datasette = await served(db_path)
    activity = (await ledger_json(datasette))["activity"]
    assert activity["limited"] and activity["total"] == 2
    assert activity["first_day"] == (TODAY - datetime.timedelta(days=89)).isoformat()
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert "only the last 90 days of the range are charted" in html
    older = (await ledger_json(datasette, f"project=payments&to={TODAY - datetime.timedelta(days=100)}"))["activity"]
    assert not older["limited"] and older["total"] == 1


async def test_the_chart_has_one_bar_per_day_and_is_the_same_for_the_same_data(db_path, graph):
    datasette = await served(db_path)
    pages = [(await datasette.client.get("/-/memory/ledger?project=payments")).text for _ in range(2)]
    charts = [re.search(r"<svg[^>]*class=\"memory-chart\".*?</svg>", page, re.S).group(0) for page in pages]
    assert charts[0] == charts[1]
    assert charts[0].count('<g class="memory-bar"') == 1
    assert "<title>" in charts[0] and 'class="memory-legend"' in charts[0]
    assert "<script" not in charts[0]


async def test_day_counts_carry_on_from_what_was_counted(db_path, open_memory, at_day):
    "Each request counts only what was appended since the last; the result is what counting afresh gives."
    memory = open_memory()
    at_day(3)
    memory.append_event("three days ago")
    at_day(None)
    memory.append_event("today")
    datasette = await served(db_path)
    for query in ("project=payments", "project=payments&kind=note", "project=payments&actor=agent-a&entity=x"):
        await ledger_json(datasette, query)
    memory.append_event("later today", "decision")  # after the counted ones, on a day already counted
    for query in ("project=payments", "project=payments&kind=note", "project=payments&actor=agent-a&entity=x"):
        carried = (await ledger_json(datasette, query))["activity"]
        afresh = (await ledger_json(await served(db_path), query))["activity"]
        assert carried == afresh
    assert carried["days"] == []  # no event is about entity x
    whole = (await ledger_json(datasette))["activity"]
    assert [(d["day"], d["counts"]) for d in whole["days"]] == [
        ((TODAY - datetime.timedelta(days=3)).isoformat(), {"note": 1}),
        (TODAY.isoformat(), {"decision": 1, "note": 1}),
    ]


def test_the_chart_is_drawn_from_the_counts_alone():
    activity = {
        "first_day": "2025-03-01",
        "last_day": "2025-03-05",
        "days": [
            {"day": "2025-03-01", "total": 3, "counts": {"note": 2, "<b>odd</b>": 1}},
            {"day": "2025-03-04", "total": 1, "counts": {"note": 1}},
            {"day": "2025-03-05", "total": 7, "counts": {"decision": 7}},
        ],
        "kinds": ["decision", "note", "<b>odd</b>"],
    }
    svg = activity_svg(activity, "a & b")
    assert svg == activity_svg(activity, "a & b")
    assert svg.count('<g class="memory-bar"') == 3
    assert svg.count("<rect") == 4 + 3  # a segment per day and kind, a swatch per kind
    assert "<title>2025-03-01: &lt;b&gt;odd&lt;/b&gt; 1 of 3</title>" in svg
    assert "<b>" not in svg and "a &amp; b" in svg
    assert "day (UTC), 2025-03-01 to 2025-03-05" in svg
    assert activity_svg({**activity, "days": []}, "p") == ""


@pytest.mark.parametrize("limit", [1, 3, 4])
async def test_pages_follow_each_other_without_overlap_or_gap(db_path, graph, limit):
    datasette = await served(db_path)
    expected = [e["id"] for e in stored_events(db_path)]
    pages, query = [], f"project=payments&limit={limit}"
    while True:
        page = await ledger_json(datasette, query)
        pages.append(page)
        if page["older"] is None:
            break
        query = f"project=payments&limit={limit}&before={page['older']['before']}"
    assert [i for page in pages for i in ids_of(page)] == expected
    assert all(len(ids_of(page)) == limit for page in pages[:-1])
    assert pages[0]["newer"] is None
    for above, below in zip(pages, pages[1:]):
        newer = below["newer"]["before"]
        back = await ledger_json(datasette, f"project=payments&limit={limit}" + ("" if newer is None else f"&before={newer}"))
        assert ids_of(back) == ids_of(above)


async def test_pages_of_a_filtered_timeline(db_path, graph):
    datasette = await served(db_path)
    first = await ledger_json(datasette, "project=payments&entity=auth&limit=2")
    second = await ledger_json(datasette, f"project=payments&entity=auth&limit=2&before={first['older']['before']}")
    everything = await ledger_json(datasette, "project=payments&entity=auth")
    assert ids_of(first) + ids_of(second) == ids_of(everything)[:4]
    html = (await datasette.client.get("/-/memory/ledger?project=payments&entity=auth&limit=2")).text
    assert f"?project=payments&amp;entity=auth&amp;limit=2&amp;before={first['older']['before']}\">older" in html


async def test_an_edited_observation_shows_its_word_diff(db_path, graph):
    datasette = await served(db_path)
    data = await ledger_json(datasette, "project=payments&kind=update_observation")
    [edit] = events_of(data)
    assert edit["old"] == "listens on port 8443" and edit["new"] == "listens on port 9443 behind the proxy"
    assert edit["diff"] == [["equal", "listens on port "], ["delete", "8443"], ["insert", "9443 behind the proxy"]]
    html = (await datasette.client.get("/-/memory/ledger?project=payments&kind=update_observation")).text
    assert re.search(r'class="memory-diff[^"]*"><bdi>listens on port </bdi><del><bdi>8443</bdi></del><ins><bdi>9443 behind the proxy</bdi></ins></div>', html)


@pytest.mark.parametrize(
    "old, new, pieces",
    [
        ("a b c", "x y z", [("delete", "a b c"), ("insert", "x y z")]),
        ("keep this", "keep this", [("equal", "keep this")]),
        ("", "new text", [("insert", "new text")]),
        ("the quick fox", "the slow fox", [("equal", "the "), ("delete", "quick"), ("insert", "slow"), ("equal", " fox")]),
        ("port 8443.", "port 9443.", [("equal", "port "), ("delete", "8443"), ("insert", "9443"), ("equal", ".")]),
        ("naïve café", "naïve bistro", [("equal", "naïve "), ("delete", "café"), ("insert", "bistro")]),
    ],
)
def test_word_diff(old, new, pieces):
    diff = timeline.word_diff(old, new)
    assert diff == pieces
    assert "".join(text for op, text in diff if op != "insert") == old
    assert "".join(text for op, text in diff if op != "delete") == new


def test_a_huge_text_change_is_shown_whole():
    old, new = "word " * 4000, "other " * 4000
    assert timeline.word_diff(old, new) == [("delete", old), ("insert", new)]


async def test_long_values_are_cut_on_the_page_and_whole_in_json(db_path, open_memory):
    memory = open_memory()
    long = "start " + "x" * 5000 + " end"
    memory.create_entities([entity("big", "thing", long)])
    memory.update_observation("big", long, long.replace("start", "begin"))
    datasette = await served(db_path)
    data = await ledger_json(datasette, "project=payments&kind=update_observation")
    assert events_of(data)[0]["new"] == long.replace("start", "begin")
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert "x" * 5000 not in html and "x" * 200 + "…" in html


async def test_checkpoints_are_milestones_at_their_place(db_path, graph):
    datasette = await served(db_path)
    data = await ledger_json(datasette)
    types = [entry["type"] for entry in data["timeline"]]
    assert types == ["group", "checkpoint", "group", "group", "group"]
    milestone = data["timeline"][1]
    assert milestone["summary"] == "wired auth to db" and milestone["checkpoint_id"] == 1
    assert milestone["event"]["kind"] == "checkpoint" and (milestone["actor"], milestone["session"]) == ("agent-a", "s1")
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert re.search(r'class="memory-milestone".*?Checkpoint #1.*?wired auth to db', html, re.S)
    assert html.index("memory-milestone") < html.index("postgres 15")  # the checkpoint came after it, so shows above


async def test_what_an_event_was_about_is_linked(db_path, graph, open_memory):
    memory = graph[0]
    claim = memory.governed.propose_claim("auth", "port", "9443")["claim"]
    fact = memory.governed.approve_claim(issue_reviewer(), claim["id"], "checked the config")["fact"]
    datasette = await served(db_path)
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert '<a href="/-/memory/entity?project=payments&amp;name=auth"><bdi>auth</bdi></a>' in html
    assert f'<a href="/-/memory/claims/{claim["id"]}">claim #{claim["id"]}</a>' in html
    assert f'<a href="/-/memory/facts/{fact["id"]}">fact #{fact["id"]}</a>' in html
    relation = events_of(await ledger_json(datasette, "project=payments&kind=create_relation"))[-1]
    assert relation["about"] == [{"type": "entity", "name": "auth"}, {"type": "text", "text": " reads "}, {"type": "entity", "name": "db"}]
    approval = events_of(await ledger_json(datasette, "project=payments&kind=approve_claim"))[0]
    assert {"field": "status", "old": "candidate", "new": "approved"} in approval["changes"]


async def test_a_rename_is_found_under_either_name(db_path, graph):
    graph[0].rename_entity("db", "ledger-db")
    datasette = await served(db_path)
    [rename] = events_of(await ledger_json(datasette, "project=payments&entity=ledger-db"))
    assert rename["kind"] == "rename_entity"
    assert [p.get("name") for p in rename["about"]] == ["db", None, "ledger-db"]
    assert rename["changes"] == [{"field": "relations", "old": None, "new": "1 moved with it"}]
    under_old = events_of(await ledger_json(datasette, "project=payments&entity=db"))
    assert under_old[0]["id"] == rename["id"] and len(under_old) == 4


@pytest.mark.parametrize(
    "query, field",
    [
        ("from=yesterday", "from"),
        ("to=2025-13-01", "to"),
        ("from=2025-03-02&to=2025-03-01", "to"),
        ("before=x", "before"),
        ("limit=0", "limit"),
        ("limit=many", "limit"),
    ],
)
async def test_bad_parameters_name_the_field(db_path, graph, query, field):
    datasette = await served(db_path)
    response = await datasette.client.get(f"/-/memory/ledger.json?project=payments&{query}")
    assert response.status_code == 400
    assert response.json()["field"] == field and response.json()["ok"] is False
    page = await datasette.client.get(f"/-/memory/ledger?project=payments&{query}")
    assert page.status_code == 400 and "text/html" in page.headers["content-type"]
    assert f'<p class="message-error"><bdi>{field}:' in page.text


async def test_an_unknown_project_lists_the_known_ones(db_path, graph):
    datasette = await served(db_path)
    response = await datasette.client.get("/-/memory/ledger.json?project=nope")
    assert response.status_code == 404
    assert "'nope'" in response.json()["error"] and "default, mobile, payments" in response.json()["error"]
    page = await datasette.client.get("/-/memory/ledger?project=nope")
    assert page.status_code == 404 and "default, mobile, payments" in page.text


async def test_the_default_project_is_shown_without_one(db_path, open_memory):
    open_memory(project="default").append_event("in the default project")
    data = await ledger_json(await served(db_path), "")
    assert data["project"] == "default" and [e["new"] for e in events_of(data)] == ["in the default project"]


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "\"quoted\" & 'single' <b>bold</b>"])
async def test_stored_text_is_shown_escaped(db_path, open_memory, text):
    memory = open_memory()
    memory.create_entities([entity(text, "thing", text)])
    memory.update_observation(text, text, text + " edited")
    memory.append_event(text, kind=text[:40])
    memory.checkpoint(text)
    html = (await (await served(db_path)).client.get("/-/memory/ledger?project=payments")).text
    assert "<script>alert" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html or "&lt;b&gt;bold&lt;/b&gt;" in html


@pytest.mark.parametrize("path", ["/-/memory/ledger", "/-/memory/ledger.json"])
async def test_reading_needs_view_database(db_path, graph, path):
    datasette = await served(db_path, config={"databases": {"memory": {"allow": {"id": "alice"}}}})
    refused = await datasette.client.get(f"{path}?project=payments")
    assert refused.status_code == 403
    assert "view-database" in (refused.json()["error"] if path.endswith(".json") else refused.text)
    assert (await datasette.client.get(f"{path}?project=payments", actor={"id": "alice"})).status_code == 200
    assert (await datasette.client.get(f"{path}?project=nope")).status_code == 403  # no hint of which projects exist


@pytest.mark.parametrize("filters", [{}, {"entity": "auth", "kind": "create_relation", "actor": "agent-b", "since": str(TODAY), "until": str(TODAY),
                                      "text": "Reads"}])
def test_every_query_walks_the_project_index_from_a_cursor(db_path, graph, filters):
    "What the page runs, traced and explained: each read of events seeks a project index (by id, or by kind and id); none uses OFFSET."
    conn = graph[0].conn
    statements = []
    conn.set_trace_callback(statements.append)
    chosen = timeline.filters("payments", **filters)
    timeline.events_page(conn, chosen, before=5, limit=2)
    timeline.activity(conn, chosen)
    conn.set_trace_callback(None)
    reads = [s for s in statements if "FROM events" in s]
    assert len(reads) == 6  # the page, the page above it, the range's two ends, the newest id, the counts
    for statement in reads:
        plan = " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}"))
        assert re.search(r"USING (COVERING )?INDEX events_by_(project|kind) \(project=\?", plan), (statement, plan)
        assert "OFFSET" not in statement.upper()


@pytest.mark.parametrize("name", ["foo/bar", "a & b=c", "naïve ☃", "quote's \"x\"", "claim:1", "payments"])
async def test_awkward_entity_names_filter_and_link(db_path, open_memory, name):
    memory = open_memory()
    memory.create_entities([entity(name, "thing", "first"), entity("other", "thing")])
    memory.create_relations([{"from": "other", "to": name, "relationType": "uses"}])
    memory.append_event("a note in the project")
    datasette = await served(db_path)
    data = await ledger_json(datasette, f"project=payments&entity={quote(name)}")
    assert [e["kind"] for e in events_of(data)] == ["create_relation", "create_entity"]
    assert data["filters"]["entity"] == name
    html = (await datasette.client.get("/-/memory/ledger?project=payments")).text
    assert f'href="/-/memory/entity?project=payments&amp;name={quote(name, safe="/")}"' in html
