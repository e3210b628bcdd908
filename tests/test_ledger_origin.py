"""Where each ledger event came from: this machine, or a sync that applied other machines' events here.

Two laptops of the three-laptop fixture pass a bundle back and forth; the ledger
timeline of one is read through the core, through Datasette's JSON twin, and in
Chromium (its origin filter used by clicking, and at phone width). The browser
test comes last: sync Playwright's loop, open for the module, would stop the async ones.
"""

import pathlib
import re

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Memory
from datasette_memory.core import timeline
from datasette_memory.core.errors import InvalidInput
from datasette_memory.sync.bundle import make_bundle, sync_bundle
from datasette_memory.sync.exchange import apply_pending
from datasette_memory.sync.shared import share

from .serving import serving
from .test_sync import open_peer

PEER = "bundle team.bundle"
SHOTS = pathlib.Path("/tmp/shots")


def machine_of(memory):
    return memory.conn.execute("SELECT value FROM memory_meta WHERE key = 'machine_id'").fetchone()[0]


@pytest.fixture
def exchanged(laptops, tmp_path):
    """
    Laptop a and laptop b, each having made its own events and applied the other's
    through one bundle: b's ledger holds its own two events and three echoes of a's.
    """
    a, b, _ = laptops
    bundle = tmp_path / "team.bundle"
    a.create_entities([{"name": "checkout-api", "entityType": "service", "observations": ["written on a"]}])
    b.create_entities([{"name": "redis", "entityType": "cache", "observations": ["written on b"]}])
    make_bundle(a, bundle)
    sync_bundle(b, bundle)  # b applies checkout-api
    sync_bundle(a, bundle)  # a applies redis
    a.add_observations([{"entityName": "redis", "contents": ["a says: evicts at 2 GB"]}])
    a.delete_observations([{"entityName": "checkout-api", "observations": ["written on a"]}])
    sync_bundle(a, bundle)
    sync_bundle(b, bundle)  # b applies both
    b.add_observations([{"entityName": "checkout-api", "contents": ["b says: owned by payments"]}])
    return a, b


def events_of(page):
    return [event for entry in page["timeline"] for event in entry.get("events", [entry.get("event")])]


def test_each_event_says_whether_it_was_made_here_or_applied_from_another_machine(exchanged):
    a, b = exchanged
    events = events_of(timeline.events_page(b.conn, timeline.filters("team")))
    shown = [(e["kind"], e["target"], e["origin"]["type"], e["origin"]["peer"]) for e in events]
    assert shown == [
        ("add_observation", "checkout-api", "here", None),
        ("add_observation", "redis", "sync", PEER),
        ("delete_observation", "checkout-api", "sync", PEER),
        ("create_entity", "checkout-api", "sync", PEER),
        ("create_entity", "redis", "here", None),
    ]
    assert {e["origin"]["machine"] for e in events} == {machine_of(b)}  # an echo carries b's clock
    # each echo names the event of a that made the same change, as b received it
    held = {(m, c): r for m, c, r in b.conn.execute("SELECT machine, clock, received_at FROM memory_sync_events")}
    for event in events:
        sources = event["origin"]["sources"]
        if event["origin"]["type"] == "here":
            assert sources == []
            continue
        [source] = sources
        assert source["machine"] == machine_of(a) and source["actor"] == "tester" and source["received_from"] == PEER
        assert source["received_at"] == held[(source["machine"], source["clock"])]
        made_on_a = a.conn.execute("SELECT kind, target FROM events WHERE machine = ? AND clock = ?",
                                   [source["machine"], source["clock"]]).fetchone()
        assert made_on_a == (event["kind"], event["target"])


def test_the_origin_filter_picks_own_events_echoes_or_one_peers(exchanged):
    _, b = exchanged

    def kinds(origin):
        return [(e["kind"], e["target"]) for e in events_of(timeline.events_page(b.conn, timeline.filters("team", origin=origin)))]

    assert kinds("here") == [("add_observation", "checkout-api"), ("create_entity", "redis")]
    assert kinds("sync") == kinds(f"sync:{PEER}") == [
        ("add_observation", "redis"), ("delete_observation", "checkout-api"), ("create_entity", "checkout-api")]
    assert kinds("sync:http://hub.example") == []
    assert timeline.origin_choices(b.conn) == {"machine": machine_of(b), "peers": [PEER]}
    activity, _ = timeline.activity(b.conn, timeline.filters("team", origin="here"))
    assert activity["total"] == 2



def test_only_the_newest_arrivals_of_a_kind_are_searched_for_what_an_echo_applied(exchanged, monkeypatch):
    "Beyond them an echo names only the sync that wrote it: a page never reads every event held."
    _, b = exchanged
    monkeypatch.setattr(timeline, "SOURCES_SCANNED", 1)
    events = events_of(timeline.events_page(b.conn, timeline.filters("team", origin="sync")))
    # one create_entity and one add_observation arrived: each is the newest of its kind; so is the delete
    assert all(len(e["origin"]["sources"]) == 1 for e in events)
    b.conn.execute(
        "INSERT INTO memory_sync_events (machine, clock, ts, actor, project, kind, target, prev_hash, hash, received_at, received_from) "
        "VALUES ('later', 1, '2030-01-01', 'someone', 'team', 'create_entity', 'elsewhere', ?, ?, '2030-01-01', 'hub')",
        ["0" * 64, "1" * 64],
    )
    events = events_of(timeline.events_page(b.conn, timeline.filters("team", origin="sync")))
    assert [(e["kind"], len(e["origin"]["sources"])) for e in events] == [
        ("add_observation", 1), ("delete_observation", 1), ("create_entity", 0)]
    assert events[-1]["origin"]["peer"] == PEER

@pytest.mark.parametrize("origin", ["elsewhere", "sync:", "sync:  ", "HERE"])
def test_an_origin_that_is_none_names_the_ones_there_are(origin):
    with pytest.raises(InvalidInput, match=r"^origin: .*give here .*sync .*sync:PEER"):
        timeline.filters("team", origin=origin)


async def test_the_json_twin_carries_each_events_origin_and_the_choices(exchanged):
    a, b = exchanged
    path = b.conn.execute("PRAGMA database_list").fetchone()[2]
    datasette = Datasette([path])
    await datasette.invoke_startup()
    response = await datasette.client.get(f"/-/memory/ledger.json?project=team&origin=sync:{PEER.replace(' ', '+')}")
    data = response.json()
    assert data["filters"]["origin"] == f"sync:{PEER}"
    assert data["origins"] == {"machine": machine_of(b), "peers": [PEER]}
    events = events_of(data)
    assert [e["origin"]["type"] for e in events] == ["sync"] * 3
    assert {s["machine"] for e in events for s in e["origin"]["sources"]} == {machine_of(a)}
    bad = await datasette.client.get("/-/memory/ledger.json?project=team&origin=elsewhere")
    assert bad.status_code == 400 and "origin" in bad.json()["error"]


async def test_an_echo_written_when_a_project_is_shared_says_so(tmp_path):
    "Events held for a project not shared here are applied by share: their echoes name sharing, not a peer."
    a, c = open_peer(tmp_path / "a.db"), open_peer(tmp_path / "c.db", shared=False)
    a.create_entities([{"name": "queue", "entityType": "service", "observations": ["made on a"]}])
    make_bundle(a, tmp_path / "team.bundle")
    sync_bundle(c, tmp_path / "team.bundle")  # held, not applied: team is not shared on c
    assert events_of(timeline.events_page(c.conn, timeline.filters("team"))) == []
    share(c.conn, "team", "tester")
    apply_pending(Memory(c.conn, actor="sync", config=c.config), "share", "team")  # as datasette-memory share does
    [echo] = events_of(timeline.events_page(c.conn, timeline.filters("team", origin="sync:share")))
    assert echo["origin"]["peer"] == "share" and [s["machine"] for s in echo["origin"]["sources"]] == [machine_of(a)]
    path, machine_a = c.conn.execute("PRAGMA database_list").fetchone()[2], machine_of(a)
    a.close()
    c.close()
    datasette = Datasette([path])
    await datasette.invoke_startup()
    html = (await datasette.client.get("/-/memory/ledger?project=team")).text
    detail = re.search(r'<div class="memory-origin-detail">(.*?)</div>', html, re.S)[1]
    text = " ".join(re.sub(r"<[^>]+>", "", detail).split())
    assert text == (f"Applied when the project was shared here, from tester's event 1 on machine {machine_a[:8]}, made just now (received just now from {PEER}).")


def test_in_a_browser_a_person_sees_where_each_change_came_from_and_filters_by_it(exchanged, page):
    a, b = exchanged
    machine_a, machine_b = machine_of(a), machine_of(b)
    path = pathlib.Path(b.conn.execute("PRAGMA database_list").fetchone()[2])
    with serving(path) as (base, _):
        page.goto(f"{base}/-/memory/ledger?project=team")
        rows = page.locator("ol.memory-events > li")
        expect(rows).to_have_count(5)
        # own events: this machine, its full id in the tag's title
        own = rows.filter(has_text="b says: owned by payments")
        expect(own.locator(".memory-origin")).to_have_text("this machine")
        expect(own.locator(".memory-origin")).to_have_attribute("title", f"made on this machine, {machine_b}: show only this machine's own events")
        # an echo: the machine its change came from, short, and whose event, which peer brought it
        echo = rows.filter(has_text="a says: evicts at 2 GB")
        expect(echo.locator(".memory-origin")).to_have_text(f"from {machine_a[:8]}")
        detail = echo.locator(".memory-origin-detail")
        expect(detail).to_contain_text(f"Applied here by sync with {PEER}, from tester's event")
        expect(detail).to_contain_text(f"on machine {machine_a[:8]}")
        expect(detail.locator(".memory-machine")).to_have_attribute("title", f"machine {machine_a}")
        expect(page.locator("p.memory-meta a", has_text="sync page")).to_have_attribute("href", "/-/memory/sync")

        # the filter, used as a person does: pick an origin, press Show
        page.get_by_label("Origin").select_option(label="applied from sync")
        page.get_by_role("button", name="Show").click()
        expect(page).to_have_url(f"{base}/-/memory/ledger?project=team&text=&entity=&kind=&actor=&origin=sync&from=&to=")
        expect(rows).to_have_count(3)
        expect(page.locator(".memory-origin.here")).to_have_count(0)
        expect(page.get_by_label("Origin")).to_have_value("sync")
        # a tag is a link to its origin's events
        page.goto(f"{base}/-/memory/ledger?project=team")
        rows.filter(has_text="b says: owned by payments").locator(".memory-origin").click()
        expect(rows).to_have_count(2)
        expect(page.locator(".memory-origin.sync")).to_have_count(0)
        expect(page.get_by_label("Origin")).to_have_value("here")
        page.get_by_label("Origin").select_option(label=f"from sync with {PEER}")
        page.get_by_role("button", name="Show").click()
        expect(rows).to_have_count(3)

        # on a phone: the tags and the detail stay inside the screen
        page.goto(f"{base}/-/memory/ledger?project=team")
        page.set_viewport_size({"width": 420, "height": 900})
        echo.locator(".memory-origin-detail").scroll_into_view_if_needed()
        expect(echo.locator(".memory-origin")).to_be_in_viewport()
        expect(echo.locator(".memory-origin-detail")).to_be_in_viewport(ratio=1)
        assert page.evaluate("document.documentElement.scrollWidth") <= 420
        overflowing = page.locator(".memory-origin, .memory-origin-detail").evaluate_all(
            "nodes => nodes.filter(n => n.getBoundingClientRect().right > window.innerWidth).length")
        assert overflowing == 0
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "ledger_origin_narrow.png"), full_page=True)
        page.set_viewport_size({"width": 1100, "height": 900})
        page.screenshot(path=str(SHOTS / "ledger_origin.png"), full_page=True)
