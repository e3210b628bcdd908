"""Where a new user stumbled on the people's pages (issue 25), each as a person meets it: real Chromium against `datasette-memory serve`.

Every changed page is saved in tests/screenshots/ (not committed) at desktop
width, and the entity page also at 420 px, for a person to look at.
"""

import re

import pytest
from playwright.sync_api import expect

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.plugin.graph_picture import layout

from .governance import issue_reviewer
from .serving import screenshot, serving

LEXICAL = Config(search=SearchSettings(semantic=False))
LONG_NAME = "customer-notification-preferences-service-for-the-mobile-apps"
EXACT_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
RAW_TIME = re.compile(r"\d\d:\d\d:\d\d\.\d{3,6}|\d{4}-\d\d-\d\dT\d\d:\d\d")


def entity(name, entity_type, *observations):
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def relation(source, relation_type, target):
    return {"from": source, "to": target, "relationType": relation_type}


def store_platform(memory):
    "A hub with 24 neighbours and 15 beyond them: 40 names, long ones, two relations between one pair, relations among neighbours."
    neighbours = [f"service-{i:02}" for i in range(20)] + [LONG_NAME, "billing", "search-indexer", "ledger-db"]
    memory.create_entities([entity("api-gateway", "service", "routes every public request")]
                           + [entity(name, "service") for name in neighbours]
                           + [entity(f"store-{i:02}", "database") for i in range(15)])
    relations = [relation("api-gateway", "routes to", name) for name in neighbours[:18]]
    relations += [relation(name, "calls", "api-gateway") for name in neighbours[18:]]
    relations += [relation("api-gateway", "reads its configuration from", "ledger-db")]
    relations += [relation(neighbours[i], "stores in", f"store-{i:02}") for i in range(15)]
    relations += [relation("billing", "notifies", LONG_NAME), relation("service-00", "depends on", "service-01")]
    memory.create_relations(relations)


@pytest.fixture(scope="module")
def served(tmp_path_factory, browser):
    """
    Each test reads or changes a project of its own, so none depends on another having run:
    platform, a 40-name neighbourhood; docs, one pending claim; payments, two pending claims
    and a fact (read only); reviews, two claims to approve and reject; renames, an entity to
    rename and edit. The default project holds nothing.
    """
    db_path = tmp_path_factory.mktemp("newcomer") / "memory.db"
    claims = {}
    memory = Memory.open(db_path, project="platform", actor="claude", config=LEXICAL)
    store_platform(memory)
    for project in ("docs", "reviews", "renames", "payments"):
        memory = Memory(memory.conn, project=project, actor="claude", config=LEXICAL)
        memory.create_entities([
            entity("auth-gateway", "service", "auth-gateway listens on port 8443"),
            entity("postgres-primary", "database", "postgres 15 cluster for the ledger"),
            entity("orders", "service", "takes the orders"),
            entity("style-guide", "document", "written in British English"),
        ])
        memory.create_relations([
            relation("auth-gateway", "writes to", "postgres-primary"), relation("orders", "reads", "postgres-primary"),
            relation("postgres-primary", "backs up to", "orders"),
        ])
        if project == "docs":
            claims["docs"] = memory.governed.propose_claim("style-guide", "spelling", "British")["claim"]["id"]
        if project in ("reviews", "payments"):
            claims[project] = [
                memory.governed.propose_claim("auth-gateway", "port", "8443", evidence=["the config file"])["claim"]["id"],
                memory.governed.propose_claim("auth-gateway", "region", "eu-west-1")["claim"]["id"],
            ]
    fact = memory.governed.record_fact(issue_reviewer("olive"), "postgres-primary", "engine", "postgres 15", "from the runbook")
    memory.checkpoint("The gateway's port is settled; next: its region")
    memory.close()
    with serving(db_path, "--owner", "olive") as (base, lines):
        context = browser.new_context()  # the sign-in link works once: its cookie is kept for every test
        context.new_page().goto(re.search(r"Sign in as olive: (\S+)", "".join(lines))[1])
        olive = context.cookies()
        context.close()
        yield {"base": base, "db": db_path, "olive": olive, "claims": claims, "fact": fact["fact"]["id"]}


def busiest(served, project):
    "Make ``project`` the one with the most recent activity."
    memory = Memory.open(served["db"], project=project, actor="claude", config=LEXICAL)
    memory.append_event("looked around", kind="note")
    memory.close()


def signed_in(page, served):
    "Olive, the owner, signed in (she holds memory-approve and memory-curate)."
    page.context.add_cookies(served["olive"])


def nav(page):
    return page.locator("nav.memory-nav")


# The navigation opens the project a person is working in, and says what waits in each


def test_the_navigation_opens_the_project_last_used_else_the_busiest_and_shows_what_waits_everywhere(served, page):
    base = served["base"]
    signed_in(page, served)
    busiest(served, "payments")
    page.goto(f"{base}/-/memory")
    expect(nav(page).get_by_role("link", name="payments: 2 waiting")).to_be_visible()
    expect(nav(page).get_by_role("link", name="docs: 1 waiting")).to_be_visible()
    screenshot(page, "newcomer-overview")
    # nothing chosen yet: the project with the most recent activity, not the empty default one
    nav(page).get_by_role("link", name="Review", exact=True).click()
    expect(page.get_by_label("Project")).to_have_value("payments")
    expect(page.locator("h2").first).to_contain_text("Claims waiting for review (2)")
    nav(page).get_by_role("link", name="docs: 1 waiting").click()
    expect(page.get_by_label("Project")).to_have_value("docs")
    # the project used last is remembered, by Review and Ledger alike
    page.goto(f"{base}/-/memory")
    nav(page).get_by_role("link", name="Ledger", exact=True).click()
    expect(page.get_by_label("Project")).to_have_value("docs")
    nav(page).get_by_role("link", name="Review", exact=True).click()
    expect(page.get_by_label("Project")).to_have_value("docs")
    screenshot(page, "newcomer-review")
    # scripts asking for JSON without a project still get the default one
    assert page.request.get(f"{base}/-/memory/review.json").json()["project"] == "default"


# Every act is POST-redirect-GET: Back and reload never resubmit a form


def test_back_after_approving_shows_the_confirmation_as_it_stands_and_the_form_says_it_is_done(served, page):
    base, (claim, _) = served["base"], served["claims"]["reviews"]
    signed_in(page, served)
    page.goto(f"{base}/-/memory/review?project=reviews")
    page.locator(f"#claim-{claim}").get_by_role("link", name="Approve…").click()
    page.get_by_label("Rationale").fill("the gateway's config says 8443")
    page.get_by_role("button", name="Review what will change").click()
    expect(page).to_have_url(re.compile(rf"/-/memory/claims/{claim}/approve\?draft="))
    expect(page.locator(".memory-change")).to_contain_text("becomes approved")
    expect(page.locator(".memory-change")).to_contain_text("the gateway's config says 8443")
    assert page.reload().request.method == "GET"  # no resubmission: the same preview, worked out again
    expect(page.locator(".memory-change")).to_contain_text("becomes approved")
    screenshot(page, "newcomer-approve-confirm")
    page.get_by_role("button", name="Confirm: Approve").click()
    expect(page).to_have_url(f"{base}/-/memory/claims/{claim}")
    expect(page.locator(".message-info")).to_contain_text(f"Claim #{claim} approved")
    response = page.go_back()
    assert response is not None and response.ok and response.request.method == "GET"
    expect(page).to_have_url(re.compile(rf"/-/memory/claims/{claim}/approve\?draft="))
    expect(page.locator("body")).to_contain_text(f"Claim #{claim} is approved now")
    expect(page.get_by_role("button", name="Confirm: Approve")).to_have_count(0)
    screenshot(page, "newcomer-approve-back")
    page.go_back()
    expect(page).to_have_url(f"{base}/-/memory/claims/{claim}/approve")
    expect(page.locator("body")).to_contain_text(f"Claim #{claim} is approved now")
    expect(page.get_by_label("Rationale")).to_have_count(0)
    expect(page.get_by_role("button", name="Review what will change")).to_have_count(0)


def test_a_rejection_and_a_rename_are_post_redirect_get_too(served, page):
    base, (_, claim) = served["base"], served["claims"]["reviews"]
    signed_in(page, served)
    page.goto(f"{base}/-/memory/claims/{claim}/reject")
    page.get_by_label("Rationale").fill("we never ran in eu-west-1")
    page.get_by_role("button", name="Review what will change").click()
    expect(page).to_have_url(re.compile(r"\?draft="))
    page.get_by_role("button", name="Confirm: Reject").click()
    expect(page).to_have_url(f"{base}/-/memory/claims/{claim}")
    assert page.go_back().request.method == "GET"
    expect(page.locator("body")).to_contain_text(f"Claim #{claim} is rejected now")
    # a mistake comes back on the form, and reloading it sends nothing
    page.goto(f"{base}/-/memory/entity/rename?project=reviews&name=style-guide")
    page.get_by_label("New name").fill("orders")
    page.get_by_role("button", name="Review what will change").click()
    expect(page.locator(".message-error")).to_contain_text("new_name")
    assert page.reload().request.method == "GET"
    expect(page.locator(".message-error")).to_contain_text("new_name")


# Timestamps: one format, relative, the exact time on hover


@pytest.mark.parametrize("path", ["/-/memory/claims/{docs}", "/-/memory/facts/{fact}", "/-/memory/review?project=payments",
                                  "/-/memory/entity?project=payments&name=postgres-primary", "/-/memory/ledger?project=payments",
                                  "/-/memory"])
def test_times_read_relative_with_the_exact_time_on_hover(served, page, path):
    page.goto(served["base"] + path.format(docs=served["claims"]["docs"], fact=served["fact"]))
    text = page.locator("main, .content, body").first.inner_text()
    assert not RAW_TIME.search(text), RAW_TIME.search(text)
    times = page.locator("time")
    assert times.count() > 0
    for i in range(times.count()):
        shown, title = times.nth(i).text_content(), times.nth(i).get_attribute("title")
        assert EXACT_TIME.match(title), title
        assert re.search(r"ago|just now|^in |today|yesterday|tomorrow", shown), shown
    if path.startswith("/-/memory/claims/"):
        screenshot(page, "newcomer-claim")
    if path.startswith("/-/memory/facts/"):
        screenshot(page, "newcomer-fact")


# Diffs: names whole, small edits visible


def test_a_rename_shows_relation_targets_as_whole_names_and_small_edits_stand_out(served, page):
    base = served["base"]
    signed_in(page, served)
    page.goto(f"{base}/-/memory/entity/rename?project=renames&name=postgres-primary")
    page.get_by_label("New name").fill("orders-primarydb")
    page.get_by_role("button", name="Review what will change").click()
    preview = page.locator(".memory-change .memory-diff")
    expect(preview.locator("del")).to_have_text(["postgres-primary"] * 4)
    expect(preview.locator("ins")).to_have_text(["orders-primarydb"] * 4)
    for line in preview.all():  # the name removed and the name added stand apart, each whole
        if line.locator("ins").count():
            removed, added = line.locator("del").bounding_box(), line.locator("ins").bounding_box()
            assert added["x"] >= removed["x"] + removed["width"] + 3, (removed, added)
    screenshot(page, "newcomer-rename-confirm")
    page.get_by_role("button", name="Confirm: Rename").click()
    history = page.locator(".memory-history .memory-diff")
    expect(history.locator("del").first).to_have_text("postgres-primary")
    expect(history.locator("ins").first).to_have_text("orders-primarydb")
    # a one-character edit is a highlighted span, not a faint strikethrough
    page.locator(".memory-observations li").first.get_by_role("link", name="edit").click()
    page.locator('[name="new"]').fill("postgres 16 cluster for the ledger")
    page.get_by_role("button", name="Review what will change").click()
    page.get_by_role("button", name="Confirm: Edit an observation").click()
    changed = page.locator(".memory-history .memory-diff").first
    for tag in ("del", "ins"):
        piece = changed.locator(tag)
        expect(piece).to_have_text("15" if tag == "del" else "16")
        style = piece.evaluate("e => { const s = getComputedStyle(e); return [s.backgroundColor, s.fontWeight, e.getBoundingClientRect().width] }")
        red, green, blue = (int(v) for v in re.findall(r"\d+", style[0])[:3])
        assert (255 - red) + (255 - green) + (255 - blue) >= 90, style  # a saturated colour, not a faint tint
        assert int(style[1]) >= 600 and style[2] >= 14, style
    screenshot(page, "newcomer-entity-history")


# The neighbourhood picture


def test_the_neighbourhood_picture_keeps_every_label_level_whole_and_apart_at_40_names(served, page):
    page.goto(f"{served['base']}/-/memory/entity?project=platform&name=api-gateway")
    svg = page.locator("svg.memory-graph")
    expect(svg.locator(".memory-node > title")).to_have_count(40)
    texts = svg.locator("text")
    boxes = texts.evaluate_all("""ts => ts.map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent, transform: t.getAttribute('transform') || '', left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    })""")
    assert not [b for b in boxes if "rotate" in b["transform"]], "a label is not level"
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            p, q = boxes[a], boxes[b]
            apart = p["right"] <= q["left"] + 0.5 or q["right"] <= p["left"] + 0.5 or p["bottom"] <= q["top"] + 0.5 or q["bottom"] <= p["top"] + 0.5
            assert apart, (p, q)
    # every relation keeps its label, the two between one pair included
    edges = svg.locator(".memory-edge")
    expect(edges).to_have_count(24 + 1 + 15 + 2)
    for i in range(edges.count()):
        label = re.sub(r"\s", "", edges.nth(i).locator("text").text_content()).replace("…", "")
        assert label and label in re.sub(r"\s", "", edges.nth(i).locator("title").text_content())
    assert "reads its configuration from" in svg.text_content()
    # a long name is never cut: it wraps, and shows whole on hover
    long = svg.locator("a.memory-node").filter(has=page.locator(f"title:text-is('{LONG_NAME} (service)')"))
    expect(long).to_have_count(1)
    assert long.locator("text").text_content().replace("…", "") in LONG_NAME
    assert long.locator("text tspan").count() >= 2
    screenshot(page, "newcomer-graph")


def test_a_name_too_long_for_its_lines_ends_with_an_ellipsis_and_keeps_its_title_whole():
    name = "the-" + "very-" * 30 + "long-name"
    picture = layout({
        "centre": "hub", "total": 3, "left_out": 0,
        "nodes": [{"name": "hub", "hops": 0, "stored": True}, {"name": name, "hops": 1, "stored": True},
                  {"name": "aVeryLongCamelCaseNameForAService", "hops": 1, "stored": True}],
        "edges": [{"from": "hub", "to": name, "relationType": "depends on"},
                  {"from": "hub", "to": "aVeryLongCamelCaseNameForAService", "relationType": "x" * 100}],
    })
    long, camel = (next(n for n in picture.nodes if n.name == wanted) for wanted in (name, "aVeryLongCamelCaseNameForAService"))
    assert len(long.label.lines) == 3 and long.label.lines[-1].endswith("…")
    assert "".join(long.label.lines)[:-1] == name[: len("".join(long.label.lines)) - 1]  # cut only at its end, and marked
    assert camel.label.lines == ("aVeryLongCamelCaseName", "ForAService")  # wrapped between words, whole
    assert [e.label.lines for e in picture.edges if e.target == name] == [("depends on",)]


def test_the_entity_page_fits_a_420_pixel_screen(served, browser):
    context = browser.new_context(viewport={"width": 420, "height": 900})
    page = context.new_page()
    try:
        for name, project in (("api-gateway", "platform"), ("auth-gateway", "payments")):
            page.goto(f"{served['base']}/-/memory/entity?project={project}&name={name}")
            assert page.evaluate("document.documentElement.scrollWidth") <= 420
            for control in ("#memory-as-of-time", "#memory-as-of-event"):
                box = page.locator(control).bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= 420, (control, box)
            expect(page.get_by_role("button", name="Go to event")).to_be_in_viewport()
            screenshot(page, f"newcomer-entity-420-{name}")
    finally:
        context.close()


# Links and boxes


def test_a_claims_subject_leads_to_its_entity_and_an_event_link_highlights_the_event(served, page):
    base = served["base"]
    page.goto(f"{base}/-/memory/review?project=payments")
    page.locator(f"#claim-{served['claims']['payments'][0]} .memory-statement").get_by_role("link", name="auth-gateway").click()
    expect(page.locator("h1")).to_contain_text("auth-gateway")
    page.locator(".memory-observations .memory-event-link").first.click()
    expect(page).to_have_url(re.compile(r"/-/memory/ledger\?.*#event-\d+$"))
    target = page.locator(":target")
    expect(target).to_have_count(1)
    event_id = target.get_attribute("id")
    style = "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).outlineStyle]"
    highlighted = target.evaluate(style)
    assert highlighted[0] not in ("rgba(0, 0, 0, 0)", "transparent") and highlighted[1] == "solid", highlighted
    screenshot(page, "newcomer-ledger-target")
    page.goto(page.url.split("#")[0])  # the same event, not the link's target: not highlighted
    assert page.locator(f"#{event_id}").evaluate(style) == ["rgba(0, 0, 0, 0)", "none"]
    page.goto(f"{base}/-/memory/claims/{served['claims']['docs']}")
    page.locator(".memory-statement").get_by_role("link", name="style-guide").click()
    expect(page.locator("h1")).to_contain_text("style-guide")


def test_nothing_found_is_not_dressed_as_a_success(served, page):
    page.goto(f"{served['base']}/-/memory/search?project=payments&q=kubernetes+helm+chart")
    empty = page.locator(".memory-empty")
    expect(empty).to_contain_text("nothing that answers this")
    expect(page.locator(".message-info")).to_have_count(0)
    background = empty.evaluate("e => getComputedStyle(e).backgroundColor")
    red, green, blue = (int(v) for v in re.findall(r"\d+", background)[:3])
    assert not (green > red + 20 and green > blue + 20), background  # not green
    screenshot(page, "newcomer-search-empty")
