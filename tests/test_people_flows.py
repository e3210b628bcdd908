"""What a person does in a browser, in real Chromium against `datasette-memory serve`: review, curate, read the ledger.

Each main page is saved as a screenshot in tests/screenshots/ (not committed)
for a person to look at.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.request

import pytest
import yaml
from datasette_auth_passwords.utils import hash_password
from playwright.sync_api import expect

from datasette_memory import Config, Memory, SearchSettings

from .governance import issue_reviewer
from .serving import screenshot, serving


def entity(name, entity_type, *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    "payments: a small graph, two pending claims that disagree, a fact; served with olive as owner and alice by password."
    folder = tmp_path_factory.mktemp("people")
    db_path = folder / "memory.db"
    lexical = Config(search=SearchSettings(semantic=False))
    agent = Memory.open(db_path, project="payments", actor="claude", config=lexical)
    agent.create_entities(
        [
            entity("auth-gateway", "service", "auth-gateway listens on port 8443", "handles sign-in for the web app"),
            entity("ledger-db", "database", "postgres 15 cluster for the ledger"),
            entity("s3-archive", "bucket", "nightly backups of the ledger"),
            entity("Dana", "person", "Dana is on call for auth this week"),
        ]
    )
    agent.create_relations(
        [
            {"from": "Dana", "to": "auth-gateway", "relationType": "maintains"},
            {"from": "auth-gateway", "to": "ledger-db", "relationType": "writes to"},
            {"from": "ledger-db", "to": "s3-archive", "relationType": "backs up to"},
        ]
    )
    seen = {"entityName": "auth-gateway", "observation": "auth-gateway listens on port 8443"}
    agent.governed.propose_claim("auth-gateway", "port", "8443", evidence=[seen])
    codex = Memory(agent.conn, project="payments", actor="codex", config=lexical)
    codex.governed.propose_claim("auth-gateway", "port", "9443", evidence=["an old ticket"])
    agent.governed.record_fact(issue_reviewer("olive"), "ledger-db", "engine", "postgres 15", "from the runbook")
    agent.close()
    team = folder / "team.yaml"
    team.write_text(yaml.safe_dump({"plugins": {"datasette-auth-passwords": {"alice_password_hash": hash_password("correct horse")}}}))
    with serving(db_path, "--owner", "olive", "--approver", "alice", "--config", str(team)) as (base, lines):
        yield {"base": base, "db": db_path, "sign_in": re.search(r"Sign in as olive: (\S+)", "".join(lines))[1]}


def log_in_as_alice(page, base):
    "Alice signs in with her password, through datasette-auth-passwords' form."
    page.goto(f"{base}/-/login")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Log in").click()


def claim_status(served, claim_id):
    with urllib.request.urlopen(f"{served['base']}/-/memory/claims/{claim_id}.json") as response:
        return json.load(response)["claim"]["status"]


def test_a_reviewer_signs_in_sees_the_contradiction_approves_through_the_confirm_step_and_finds_the_fact(served, page):
    base = served["base"]
    log_in_as_alice(page, base)
    page.goto(f"{base}/-/memory")
    screenshot(page, "overview")
    expect(page.locator("table.rows-and-columns")).to_contain_text("2 pending")
    page.locator("nav.memory-nav").get_by_role("link", name="Review").click()
    page.get_by_label("Project").select_option("payments")
    page.get_by_role("button", name="Show").click()
    card = page.locator("#claim-1")
    expect(card.locator(".memory-badge")).to_contain_text("contradicts claim #2: 9443")
    expect(card).to_contain_text("auth-gateway listens on port 8443")  # its evidence
    screenshot(page, "review")
    card.get_by_role("link", name="Approve…").click()
    page.get_by_label("Rationale").fill("the gateway's config says 8443")
    page.get_by_role("button", name="Review what will change").click()
    expect(page.get_by_role("heading", name="What will change")).to_be_visible()
    expect(page.locator(".memory-change")).to_contain_text("becomes approved")
    screenshot(page, "approve-confirm")
    assert claim_status(served, 1) == "candidate"  # nothing written before the confirmation
    page.get_by_role("button", name="Confirm: Approve").click()
    expect(page).to_have_url(f"{base}/-/memory/claims/1")
    expect(page.locator(".message-info")).to_contain_text("Claim #1 approved: fact #2 holds")
    screenshot(page, "claim")
    page.locator(".memory-card .memory-statement").first.get_by_role("link", name="auth-gateway").click()
    expect(page.locator("h1")).to_contain_text("auth-gateway")
    expect(page.locator("body")).to_contain_text("8443")
    expect(page.locator('a[href$="/-/memory/facts/2"]').first).to_be_visible()
    assert claim_status(served, 1) == "approved"


def test_a_curator_edits_an_observation_and_the_ledger_shows_the_diff(served, page):
    base = served["base"]
    page.goto(served["sign_in"])
    expect(page.locator(".message-info").first).to_contain_text("Signed in as olive")
    page.goto(f"{base}/-/memory/entity?project=payments&name=ledger-db")
    page.locator(".memory-observations li").first.get_by_role("link", name="edit").click()
    page.locator('[name="new"]').fill("postgres 16 cluster for the ledger")
    page.get_by_role("button", name=re.compile("Review what will change")).click()
    screenshot(page, "curate-confirm")
    page.get_by_role("button", name=re.compile("Confirm")).click()
    expect(page.locator(".memory-observations")).to_contain_text("postgres 16 cluster for the ledger")
    expect(page.locator(".memory-observations")).to_contain_text("edited by olive")
    screenshot(page, "entity")
    page.locator("nav.memory-nav").get_by_role("link", name="Ledger").click()
    page.goto(f"{base}/-/memory/ledger?project=payments&entity=ledger-db")
    diff = page.locator(".memory-diff").first
    expect(diff.locator("del")).to_contain_text("15")
    expect(diff.locator("ins")).to_contain_text("16")
    screenshot(page, "ledger")
    verified = subprocess.run(
        [sys.executable, "-m", "datasette_memory", "verify", "--db", str(served["db"])], capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_entity_page_draws_its_neighbourhood_two_hops_out(served, page):
    page.goto(f"{served['base']}/-/memory/entity?project=payments&name=Dana")
    names = page.locator("svg.memory-graph .memory-node > title").all_text_contents()
    shown = {name.split(" (")[0] for name in names}
    assert shown == {"Dana", "auth-gateway", "ledger-db"}  # s3-archive is three hops away
    page.locator("svg.memory-graph a.memory-node").filter(has_text="auth-gateway").first.click()
    expect(page.locator("h1")).to_contain_text("auth-gateway")
    page.goto(f"{served['base']}/-/memory/search?project=payments&q=who+is+on+call")
    screenshot(page, "search")


FORMS = [
    "/-/memory/claims/2/approve", "/-/memory/claims/2/reject", "/-/memory/facts/1/supersede", "/-/memory/facts/1/invalidate",
    "/-/memory/facts/new?project=payments", "/-/memory/entity/edit-observation?project=payments&name=Dana&index=0",
    "/-/memory/entity/rename?project=payments&name=Dana", "/-/memory/entity/merge?project=payments&name=Dana",
    "/-/memory/entity/delete-relation?project=payments&name=Dana",
]


def test_an_anonymous_visitor_reaches_no_form(served, page):
    base = served["base"]
    for path in FORMS:
        page.goto(base + path)
        expect(page.locator("h1")).to_have_text("Not allowed")
        expect(page.locator("form.memory-form")).to_have_count(0)
    page.goto(f"{base}/-/memory/review?project=payments")
    expect(page.get_by_role("link", name="Approve…")).to_have_count(0)
    page.goto(f"{base}/-/memory/entity?project=payments&name=Dana")
    expect(page.get_by_role("link", name="Rename…")).to_have_count(0)
    screenshot(page, "anonymous-entity")


def test_a_cross_site_post_is_refused(served, page):
    "A signed-in reviewer opens another site whose page posts to the reject form: the claim stays as it was."
    base = served["base"]
    log_in_as_alice(page, base)
    page.goto(f"{base}/-/memory/claims/2/reject")
    expect(page.locator("form.memory-form")).to_have_count(1)  # alice may reject claim 2 from this site
    forged = (
        f'<form id="f" method="post" action="{base}/-/memory/claims/2/reject">'
        '<input name="rationale" value="forged"><input name="step" value="apply"></form>'
    )
    page.route("http://elsewhere.example/", lambda route: route.fulfill(content_type="text/html", body=forged))
    page.goto("http://elsewhere.example/")
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")
    expect(page.locator("h1")).not_to_contain_text("Claim #2")
    assert claim_status(served, 2) == "candidate"
    page.goto(f"{base}/-/memory/claims/2")
    expect(page.locator("h1")).to_contain_text("candidate")


def test_a_person_finds_the_agents_tool_activity_by_its_words(served, page):
    "What `hook tool` records shows in the ledger, and a person finds it by typing words into the Text box."
    from datasette_memory.core.hook_kinds import ACTIVITY

    memory = Memory.open(served["db"], project="payments", actor="agent", config=Config(search=SearchSettings(semantic=False)))
    memory.append_event("tool: Bash\ncommand: cargo test --workspace\nexit: 101\ntests: 2 failed, 40 passed (cargo)", kind=ACTIVITY)
    memory.append_event("tool: Edit\nfiles: src/ledger.rs", kind=ACTIVITY)
    memory.close()
    page.goto(f"{served['base']}/-/memory/ledger?project=payments")
    page.get_by_label("Text").fill("CARGO TEST")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"text=CARGO\+TEST"))
    events = page.locator(".memory-events > li")
    expect(events).to_have_count(1)
    expect(events.first).to_contain_text("cargo test --workspace")
    expect(page.get_by_label("Text")).to_have_value("CARGO TEST")
    screenshot(page, "ledger-text-search")


def test_a_person_meets_a_damaged_file_as_one_clear_page(tmp_path, page):
    """
    The memory file's pages damaged under a running Datasette (plain `datasette`, which, unlike `serve`,
    does not check the file first): the search page says in one line what is wrong and what to do,
    inside the memory pages' frame, with the navigation still there.
    """
    import time

    from .damage import damage
    from .test_cli import fetch, free_port

    db_path = tmp_path / "memory.db"
    memory = Memory.open(db_path, project="payments", config=Config(search=SearchSettings(semantic=False)))
    memory.create_entities([entity(f"service-{i}", "service", f"note {i} " * 20) for i in range(200)])
    memory.close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    damage(db_path)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "datasette", "serve", str(db_path), "--port", str(port)],
                               env={**os.environ, "DATASETTE_MEMORY_NO_VECTORS": "1"}, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                fetch(f"{base}/-/versions.json")
                break
            except OSError:
                time.sleep(0.1)
        response = page.goto(f"{base}/-/memory/search?project=payments&q=note")
        assert response.status == 500
        expect(page.locator("body")).to_contain_text("the file is damaged")
        expect(page.locator("body")).to_contain_text("restore it from a snapshot or a backup")
        expect(page.locator("nav.memory-nav").get_by_role("link", name="Overview")).to_be_visible()
        screenshot(page, "damaged-file")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    assert "Traceback" not in stderr
