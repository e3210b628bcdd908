"""The sync page: where each event came from, when each peer last synced and what waits to go out, in Datasette and in Chromium."""

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Memory
from datasette_memory.sync.bundle import make_bundle, sync_bundle

from .serving import screenshot, serving
from .test_sync import LEXICAL, open_peer

PAGE = "/-/memory/sync"


@pytest.fixture
def synced(tmp_path):
    "Laptop b, having synced with a's bundle (a shares team and keeps notes private), then written two events of its own."
    a, b = open_peer(tmp_path / "a.db"), open_peer(tmp_path / "b.db")
    a.create_entities([{"name": "checkout-api", "entityType": "service", "observations": ["from a"]}])
    Memory(a.conn, project="notes", config=LEXICAL).create_entities([{"name": "private plan", "entityType": "t", "observations": []}])
    make_bundle(a, tmp_path / "team.bundle")
    sync_bundle(b, tmp_path / "team.bundle")
    b.create_entities([{"name": "redis", "entityType": "cache", "observations": ["waiting to go"]}])
    machines = [m.conn.execute("SELECT value FROM memory_meta WHERE key = 'machine_id'").fetchone()[0] for m in (a, b)]
    a.close()
    b.close()
    return tmp_path / "b.db", machines


async def test_the_page_and_its_json_say_where_events_came_from(synced):
    path, (machine_a, machine_b) = synced
    datasette = Datasette([str(path)])
    await datasette.invoke_startup()
    data = (await datasette.client.get(f"{PAGE}.json")).json()
    assert data["machine"] == machine_b and data["shared"] == ["team"]
    [peer] = data["peers"]
    assert peer["peer"] == "bundle team.bundle" and (peer["received"], peer["applied"]) == (2, 1)
    assert peer["waiting"] == 1  # redis, made after that sync (its echo of a's entity does not count)
    origins = {o["machine"]: o for o in data["origins"]}
    assert origins[machine_a]["events"] == 2 and origins[machine_a]["opaque"] == 1 and origins[machine_b]["own"]
    assert [(e["machine"], e["kind"], e["opaque"]) for e in data["received"]] == [(machine_a, None, 1), (machine_a, "create_entity", 0)]
    html = (await datasette.client.get(PAGE)).text
    assert machine_b in html and "checkout-api" in html and "opaque: not shared there" in html
    assert "private plan" not in html and 'href="/-/memory/sync" aria-current="page"' in html


def test_in_a_browser_a_person_reads_the_sync_page(synced, page):
    path, (machine_a, _) = synced
    with serving(path) as (base, _):
        page.goto(f"{base}/-/memory")
        page.get_by_role("link", name="Sync").click()
        expect(page.get_by_role("heading", name="Sync", exact=True)).to_be_visible()
        expect(page.locator("table.memory-peers tbody tr")).to_have_count(1)
        expect(page.locator("td.memory-waiting-out")).to_contain_text("made here since")
        expect(page.locator("ul.memory-origins li")).to_have_count(2)
        expect(page.locator("table.memory-received")).to_contain_text(machine_a[:12])
        expect(page.locator("table.memory-received")).to_contain_text("create_entity checkout-api")
        screenshot(page, "sync-page")
        # on a phone each row is a card and each line names its column
        page.set_viewport_size({"width": 420, "height": 900})
        labels = page.locator("table.memory-peers tbody td").evaluate_all(
            "cells => cells.map(cell => getComputedStyle(cell, '::before').content)")
        assert labels == ['"Peer"', '"Last synced"', '"That sync"', '"Waiting to go out"']
        screenshot(page, "sync-page-narrow")
