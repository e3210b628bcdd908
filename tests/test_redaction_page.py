"""The redaction form: only a person holding memory-approve redacts, from an observation or a ledger event, in Datasette and in a browser."""

import re

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Memory
from datasette_memory.governed.person_actions import APPROVE_ACTION
from datasette_memory.history.file_check import verify_file

from .governance import as_actor, ledger_length
from .serving import screenshot, serving
from .test_redaction import SECRET, holds_secret, leak
from .test_sync import LEXICAL

SAME_SITE = {"Sec-Fetch-Site": "same-origin"}
PAGE = "/-/memory/redact"
ENTITY = "/-/memory/redact?project=team&name=payments"


@pytest.fixture
def leaked(tmp_path):
    path = tmp_path / "memory.db"
    memory = Memory.open(path, project="team", config=LEXICAL, allow_secrets=True)
    leak(memory)
    memory.close()
    return path


async def served(path) -> Datasette:
    datasette = Datasette([str(path)], config={"permissions": {APPROVE_ACTION: {"id": ["alice"]}}})
    await datasette.invoke_startup()
    return datasette


def words(html: str) -> str:
    "The page's text: tags dropped, white space collapsed."
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def observations(path) -> list[str]:
    memory = Memory.open(path, project="team", config=LEXICAL)
    try:
        return memory.open_nodes(["payments"])["entities"][0]["observations"]
    finally:
        memory.close()


@pytest.mark.parametrize("kind", ["anonymous", "agent token", "root token", "someone else signed in"])
async def test_no_one_but_a_person_holding_memory_approve_redacts(leaked, kind):
    datasette = await served(leaked)
    arguments = await as_actor(datasette, kind)
    before = ledger_length(leaked)
    assert (await datasette.client.get(ENTITY, **arguments)).status_code == 403
    for step in ("confirm", "apply"):
        response = await datasette.client.post(ENTITY, data={"text": SECRET, "reason": "leaked", "step": step},
                                               **{**arguments, "headers": {**arguments.get("headers", {}), **SAME_SITE}})
        assert response.status_code == 403, response.text
        assert "memory-approve" in response.text
    assert ledger_length(leaked) == before and SECRET in observations(leaked)[0]


async def test_the_entity_page_offers_redact_to_an_approver_only(leaked):
    datasette = await served(leaked)
    entity = "/-/memory/entity?project=team&name=payments"
    assert "/-/memory/redact?" not in (await datasette.client.get(entity)).text
    page = await datasette.client.get(entity, actor={"id": "alice"})
    assert 'href="/-/memory/redact?project=team&amp;name=payments&amp;index=0"' in page.text


async def test_a_person_reviews_then_confirms_and_the_text_is_gone(leaked):
    datasette = await served(leaked)
    alice = {"actor": {"id": "alice"}, "headers": SAME_SITE}
    form = await datasette.client.get(f"{ENTITY}&index=0", actor={"id": "alice"})
    assert form.status_code == 200 and "What is stored there" in form.text
    assert f">calls the processor with {SECRET} in the header</textarea>" in form.text  # the chosen observation, to trim
    short = await datasette.client.post(ENTITY, data={"text": "sk-", "reason": "leaked", "step": "confirm"},
                                        follow_redirects=True, **alice)
    assert short.status_code == 400 and "would match too much" in short.text
    posted = await datasette.client.post(ENTITY, data={"text": SECRET, "reason": "a live key", "step": "confirm"}, **alice)
    assert posted.status_code == 302 and posted.headers["location"].startswith(f"{ENTITY}&draft=")  # POST-redirect-GET
    confirm = await datasette.client.get(posted.headers["location"], actor={"id": "alice"})
    assert "What will be redacted" in confirm.text and 'name="step" value="apply"' in confirm.text
    said = words(confirm.text)
    assert "in 3 stored texts: 1 observation (of payments), 0 records of claims, facts and checkpoints, 5 events of this machine and 0 events other machines sent" in said
    assert f"{SECRET[:4]}… ({len(SECRET)} characters)" in said
    assert "is not shared: the redaction stays on this machine" in said
    assert SECRET in observations(leaked)[0], "nothing done yet"
    applied = await datasette.client.post(ENTITY, data={"text": SECRET, "reason": "a live key", "step": "apply"}, **alice)
    assert applied.status_code == 302 and applied.headers["location"] == "/-/memory/entity?project=team&name=payments"
    message = datasette.unsign(applied.cookies["ds_messages"], "messages")
    assert message[0][0].startswith("Redacted, recorded as ledger event #")
    assert "gone from 1 observation, 0 records of claims, facts and checkpoints, 5 events of this machine and 0 that other machines sent" in message[0][0]
    assert re.fullmatch(r"calls the processor with \[redacted [0-9a-f]{12}\] in the header", observations(leaked)[0])
    assert verify_file(leaked)["ok"]
    assert (await datasette.client.get(f"{PAGE}.json", actor={"id": "alice"})).status_code in (400, 404)


async def test_from_a_ledger_event_the_form_shows_its_texts(leaked):
    datasette = await served(leaked)
    (event,) = [row for row in (await datasette.client.get(
        "/memory/events.json?_shape=objects&kind=delete_observation")).json()["rows"]]
    page = await datasette.client.get(f"{PAGE}?event={event['id']}", actor={"id": "alice"})
    assert page.status_code == 200
    assert f"ledger event #{event['id']} (delete_observation of payments)" in words(page.text)
    assert f"key {SECRET} rotates monthly" in page.text
    missing = await datasette.client.get(f"{PAGE}?event=99999", actor={"id": "alice"})
    assert missing.status_code == 404 and "the ledger has no event 99999" in missing.text
    bad = await datasette.client.get(f"{PAGE}?event=x1", actor={"id": "alice"})
    assert bad.status_code == 400


def test_in_a_browser_a_person_redacts_a_leaked_key_from_the_entity_page(leaked, page):
    with serving(leaked, "--owner", "olive") as (base, lines):
        page.goto(re.search(r"Sign in as olive: (\S+)", "".join(lines))[1])
        page.goto(f"{base}/-/memory/entity?project=team&name=payments")
        page.get_by_role("link", name="redact").first.click()
        expect(page.get_by_role("heading", name="Redact a text")).to_be_visible()
        expect(page.get_by_label("Text to remove")).to_have_value(f"calls the processor with {SECRET} in the header")
        page.get_by_label("Text to remove").fill("sk-")
        page.get_by_label("Reason").fill("a live API key an agent pasted")
        page.get_by_role("button", name="Review what will be redacted").click()
        expect(page.locator(".message-error")).to_contain_text("would match too much")  # the form again, as filled in
        expect(page.get_by_label("Reason")).to_have_value("a live API key an agent pasted")
        screenshot(page, "redact-refused")
        page.get_by_label("Text to remove").fill(SECRET)  # only the key: the rest of the observation stays
        page.get_by_label("Reason").fill("a live API key an agent pasted")
        page.get_by_label("Also delete the older snapshots").check()
        screenshot(page, "redact-form")
        page.get_by_role("button", name="Review what will be redacted").click()
        expect(page.get_by_role("heading", name="What will be redacted")).to_be_visible()
        screenshot(page, "redact-confirm")
        page.get_by_role("button", name="Confirm: redact").click()
        expect(page.locator(".message-info").first).to_contain_text("Redacted, recorded as ledger event #")
        expect(page.get_by_role("list").get_by_text(re.compile(r"calls the processor with \[redacted [0-9a-f]{12}\] in the header"))).to_be_visible()
        screenshot(page, "redact-done")
        page.goto(f"{base}/-/memory/ledger?project=team&kind=redact")
        expect(page.get_by_text(re.compile(r"redacted a text from 3 stored texts: a live API key an agent pasted"))).to_be_visible()
        screenshot(page, "redact-ledger")
        # the ledger offers the same form from any event with texts
        page.goto(f"{base}/-/memory/ledger?project=team&kind=delete_entity")
        page.get_by_role("link", name="redact…").first.click()
        expect(page.get_by_role("heading", name="Redact a text")).to_be_visible()
        expect(page.get_by_text("ledger event #")).to_be_visible()
        # the event's texts, never its field names (the ledger's structure, which a redaction leaves)
        offered = page.locator(".memory-texts li").all_inner_texts()
        assert offered and not {"name", "entityType", "observations"} & set(offered), offered
        screenshot(page, "redact-from-event")
    assert holds_secret(leaked) == [] and verify_file(leaked)["ok"]
