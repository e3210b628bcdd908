"""The memory pages in a real browser: Chromium driven by Playwright against `datasette-memory serve`.

Needs a Chromium: Debian's package (`apt-get install chromium`, which `tests/run`
installs when it can) or the executable named by $DATASETTE_MEMORY_CHROMIUM.
"""


import pytest
from playwright.sync_api import expect

from datasette_memory import Config, Memory, SearchSettings

from .serving import serving
from .test_search import entity


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    "A served memory file holding two projects; yields its base URL."
    db_path = tmp_path_factory.mktemp("pages") / "memory.db"
    lexical = Config(search=SearchSettings(semantic=False))
    payments = Memory.open(db_path, project="payments", config=lexical)
    payments.create_entities(
        [
            entity("auth-gateway", "service", "auth-gateway listens on port 8443", "handles sign-in for the web app"),
            entity("ledger-db", "database", "postgres 15 cluster for the ledger", "backups run nightly at 02:00"),
            entity("Dana", "person", "Dana is on call for auth this week"),
        ]
    )
    payments.create_relations([{"from": "Dana", "to": "auth-gateway", "relationType": "maintains"}])
    Memory(payments.conn, project="mobile", config=lexical).create_entities([entity("push-notifier", "service", "sends pushes via APNs")])
    payments.close()
    with serving(db_path) as (base, _):
        yield base


def test_overview_lists_projects_and_links_onwards(server, page):
    page.goto(f"{server}/-/memory")
    expect(page).to_have_title("Memory")
    expect(page.locator(".message-info")).to_contain_text("intact")
    rows = page.locator("table.rows-and-columns tbody tr")
    expect(rows).to_have_count(2)
    payments = rows.filter(has_text="payments")
    expect(payments.locator("td").nth(1)).to_have_text("3")  # entities
    expect(page.locator('nav.memory-nav a[aria-current="page"]')).to_have_text("Overview")
    payments.locator("td").nth(1).get_by_role("link").click()
    expect(page).to_have_url(f"{server}/memory/entities?project=payments")
    expect(page.locator("table.rows-and-columns tbody tr")).to_have_count(3)


def test_overview_leads_to_the_stored_governance_queries(server, page):
    page.goto(f"{server}/-/memory")
    queries = page.locator("dl.memory-queries dt a")
    expect(queries).to_have_count(8)
    expect(page.locator("dl.memory-queries")).to_contain_text("Facts that hold now")
    page.get_by_role("link", name="Deleted memory").click()
    expect(page).to_have_url(f"{server}/memory/deleted")
    expect(page.locator("h1")).to_contain_text("Deleted memory")


def test_search_answers_a_question_and_links_to_the_entity(server, page):
    page.goto(f"{server}/-/memory")
    page.locator("nav.memory-nav").get_by_role("link", name="Search").click()
    expect(page).to_have_title("Search memory")
    expect(page.locator('nav.memory-nav a[aria-current="page"]')).to_have_text("Search")
    page.get_by_label("Question or keywords").fill("Which port does the auth service listen on?")
    page.get_by_label("Project").select_option("payments")
    page.get_by_role("button", name="Search").click()
    results = page.locator(".memory-results li")
    expect(results.first.locator("strong a")).to_have_text("auth-gateway")
    expect(results.first.locator(".why")).to_contain_text("matched")
    expect(results.first.locator(".why")).to_contain_text("port")
    expect(results.first.locator("blockquote")).to_contain_text(["auth-gateway listens on port 8443"])
    expect(page.get_by_label("Question or keywords")).to_have_value("Which port does the auth service listen on?")
    expect(page.locator(".memory-accounting")).to_contain_text("Considered")
    results.first.locator("strong a").click()
    expect(page).to_have_url(f"{server}/-/memory/entity?project=payments&name=auth-gateway")
    expect(page.locator("h1")).to_contain_text("auth-gateway")


def test_search_shows_neighbours_and_says_when_nothing_answers(server, page):
    page.goto(f"{server}/-/memory/search?project=payments&q=who+is+on+call&expand=1")
    results = page.locator(".memory-results li")
    expect(results.first.locator("strong a")).to_have_text("Dana")
    expect(results.filter(has_text="neighbour: Dana maintains auth-gateway")).to_have_count(1)
    expect(page.get_by_label("graph neighbours")).to_be_checked()
    page.get_by_label("Question or keywords").fill("What is the retention period for audit logs?")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".memory-empty")).to_have_text("Memory holds nothing that answers this in payments.")
    expect(page.locator(".memory-results")).to_have_count(0)
    # the mobile project's thing is not found from payments, and is from mobile
    page.goto(f"{server}/-/memory/search?project=payments&q=APNs")
    expect(page.locator(".memory-empty")).to_contain_text("Memory holds nothing")
    page.get_by_label("Project").select_option("mobile")
    page.get_by_role("button", name="Search").click()
    expect(page.locator(".memory-results li strong a")).to_have_text(["push-notifier"])


def test_bad_searches_explain_themselves(server, page):
    page.goto(f"{server}/-/memory/search?project=payments&q=" + "x" * 5000)
    expect(page.locator(".message-error")).to_contain_text("query")
    expect(page.get_by_role("button", name="Search")).to_be_visible()  # the form stays, to try again
    page.goto(f"{server}/-/memory/search?project=payments&q=%22unclosed+phrase")  # malformed FTS5: read as words
    expect(page.locator(".message-error")).to_have_count(0)
    expect(page.locator(".memory-empty, .memory-results")).to_have_count(1)
