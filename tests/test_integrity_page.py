"""The integrity page: what the records beside the file saw, and a person's acknowledgement, in Datasette and in a browser."""

import re

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory.core import witness
from datasette_memory.governed.person_actions import APPROVE_ACTION
from datasette_memory.history.file_check import verify_file

from .governance import as_actor, ledger_length
from .serving import screenshot, serving

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
PAGE = "/-/memory/integrity"


async def served(path) -> Datasette:
    datasette = Datasette([str(path)], config={"permissions": {APPROVE_ACTION: {"id": ["alice"]}}})
    await datasette.invoke_startup()
    return datasette


async def test_a_clean_file_says_so_and_offers_nothing_to_acknowledge(built):
    datasette = await served(built)
    page = await datasette.client.get(PAGE, actor={"id": "alice"})
    assert page.status_code == 200
    assert "All is well: the file holds what its witness saw" in page.text and "None recorded" in page.text
    assert 'name="reason"' not in page.text
    data = (await datasette.client.get(f"{PAGE}.json")).json()
    assert data["ok"] and data["report"]["ok"] and data["divergences"] == [] and data["waiting"] == 0
    overview = await datasette.client.get("/-/memory")
    assert "TAMPERING SUSPECTED" not in overview.text and (await datasette.client.get("/-/memory.json")).json()["integrity"]["ok"]


async def test_a_tampered_file_is_on_the_overview_and_the_integrity_page_for_everyone_who_can_read(tampered):
    datasette = await served(tampered)
    overview = await datasette.client.get("/-/memory")
    assert "TAMPERING SUSPECTED: shorter: the ledger ends at event" in overview.text
    assert f'href="{PAGE}"' in overview.text
    assert (await datasette.client.get("/-/memory.json")).json()["integrity"]["ok"] is False
    page = await datasette.client.get(PAGE)
    assert page.status_code == 200 and "1 waiting for a person" in page.text and "shorter" in page.text
    assert 'name="reason"' not in page.text, "anonymous readers see it, and are told who can acknowledge"
    assert "Only a signed-in person holding <code>memory-approve</code> can acknowledge" in page.text
    data = (await datasette.client.get(f"{PAGE}.json")).json()
    assert data["waiting"] == 1 and data["divergences"][0]["noticed_by"] in ("the overview", "the integrity page")
    assert 'name="reason"' in (await datasette.client.get(PAGE, actor={"id": "alice"})).text


@pytest.mark.parametrize("kind", ["anonymous", "agent token", "root token", "someone else signed in"])
async def test_no_one_but_a_person_holding_memory_approve_acknowledges(tampered, kind):
    datasette = await served(tampered)
    arguments = await as_actor(datasette, kind)
    before = ledger_length(tampered)
    for step in ("confirm", "apply"):
        response = await datasette.client.post(PAGE, data={"reason": "trust me", "step": step},
                                               **{**arguments, "headers": {**arguments.get("headers", {}), **SAME_SITE}})
        assert response.status_code == 403, response.text
        assert "memory-approve" in response.text
    assert ledger_length(tampered) == before and witness.unacknowledged(witness.read(tampered))


async def test_a_person_reviews_then_confirms_and_the_divergence_is_acknowledged(tampered):
    datasette = await served(tampered)
    alice = {"actor": {"id": "alice"}, "headers": SAME_SITE}
    before = ledger_length(tampered)
    empty = await datasette.client.post(PAGE, data={"reason": " ", "step": "confirm"}, follow_redirects=True, **alice)
    assert empty.status_code == 400 and "reason: say why" in empty.text
    posted = await datasette.client.post(PAGE, data={"reason": "restored from last night's backup", "step": "confirm"}, **alice)
    assert posted.status_code == 302 and posted.headers["location"].startswith(f"{PAGE}?draft=")  # POST-redirect-GET
    confirm = await datasette.client.get(posted.headers["location"], actor={"id": "alice"})
    assert confirm.status_code == 200
    assert "What will be acknowledged" in confirm.text and 'name="step" value="apply"' in confirm.text
    assert ledger_length(tampered) == before and witness.unacknowledged(witness.read(tampered)), "nothing done yet"
    applied = await datasette.client.post(PAGE, data={"reason": "restored from last night's backup", "step": "apply"}, **alice)
    assert (applied.status_code, applied.headers["location"]) == (302, PAGE)
    message = datasette.unsign(applied.cookies["ds_messages"], "messages")
    assert message[0][0].startswith("Acknowledged 1 divergence, recorded as ledger event #")
    assert ledger_length(tampered) == before + 1 and witness.unacknowledged(witness.read(tampered)) == []
    assert verify_file(tampered)["ok"] is True
    assert (await datasette.client.get("/-/memory.json")).json()["integrity"]["ok"] is True, "Datasette's own connections agree"
    page = await datasette.client.get(PAGE, actor={"id": "alice"})
    assert "by <bdi>alice</bdi> <time" in page.text and "restored from last night" in page.text and "waiting for a person" not in page.text
    back = await datasette.client.get(posted.headers["location"], actor={"id": "alice"})  # Back, to the confirmation
    assert "there is nothing to acknowledge" in back.text and 'name="step" value="apply"' not in back.text
    again = await datasette.client.post(PAGE, data={"reason": "twice", "step": "apply"}, follow_redirects=True, **alice)
    assert again.request.method == "GET" and "Not done: there is no divergence to acknowledge" in again.text


def test_in_a_browser_a_person_follows_the_warning_and_acknowledges(tampered, page):
    with serving(tampered, "--owner", "olive") as (base, lines):
        assert any(line.startswith("Witness: TAMPERING SUSPECTED") for line in lines)
        sign_in = re.search(r"Sign in as olive: (\S+)", "".join(lines))[1]
        page.goto(sign_in)
        page.goto(f"{base}/-/memory")
        expect(page.locator(".message-error").first).to_contain_text("TAMPERING SUSPECTED")
        screenshot(page, "integrity-overview-warning")
        page.get_by_role("link", name="Review the integrity page").click()
        expect(page.get_by_role("heading", name="Integrity")).to_be_visible()
        expect(page.locator("tr.waiting")).to_have_count(1)
        page.get_by_label("Reason").fill("I restored last night's backup on purpose")
        page.get_by_role("button", name="Review what will be acknowledged").click()
        expect(page.get_by_role("heading", name="What will be acknowledged")).to_be_visible()
        screenshot(page, "integrity-confirm")
        page.get_by_role("button", name="Confirm: acknowledge").click()
        expect(page.locator(".message-info").first).to_contain_text("Acknowledged 1 divergence")
        expect(page.locator("tr.waiting")).to_have_count(0)
        expect(page.get_by_text("I restored last night's backup on purpose")).to_be_visible()
        screenshot(page, "integrity-acknowledged")
        page.goto(f"{base}/-/memory")
        expect(page.get_by_text("TAMPERING SUSPECTED")).to_have_count(0)
    assert verify_file(tampered)["ok"] is True
