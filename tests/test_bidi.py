"""
Stored text cannot pass for something else on a memory page: a RIGHT-TO-LEFT
OVERRIDE, a zero-width space or any other invisible character is shown as a
visible mark, and stored text sits in <bdi>, isolated from the page's words.
Every page is rendered with poisoned values and read for raw characters; real
Chromium shows what a reviewer sees.
"""

import hashlib
import html.parser
import re
import unicodedata

import pytest
from datasette.app import Datasette
from playwright.sync_api import expect

from datasette_memory import Config, Memory, SearchSettings
from datasette_memory.cli.serve import People, serve_config
from datasette_memory.plugin.graph_picture import layout
from datasette_memory.plugin.stored_text import HIDDEN, stored

from .governance import issue_reviewer
from .serving import screenshot, serving

RLO, ZWSP = "\u202e", "\u200b"
POISON = RLO + ZWSP  # in every stored value below
PROJECT = "payments" + POISON
ENTITY = "auth" + POISON
# every character the pages must mark, one of each kind the audit named
HIDDEN_EXAMPLES = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c\u200b\u200c\u200d\u2060\ufeff\u00ad\U000e0001\U000e0041\U000e007f"
SPOOFED = RLO + "3448" + ZWSP  # shown raw, it reads 8443


# The filter itself


def test_every_invisible_and_bidi_character_becomes_a_titled_mark_inside_bdi():
    shown = stored("a" + HIDDEN_EXAMPLES + "<b>")
    assert shown.startswith("<bdi>") and shown.endswith("</bdi>")
    assert not HIDDEN.search(shown), "no hidden character is left in the page"
    for character in HIDDEN_EXAMPLES:
        assert f'class="memory-hidden-char" title="U+{ord(character):04X} ' in shown
        assert f">⟨U+{ord(character):04X}⟩</span>" in shown
    assert "RIGHT-TO-LEFT OVERRIDE" in shown and "reorders the text around it" in shown
    assert "&lt;b&gt;" in shown  # still escaped


def test_plain_and_svg_forms_have_no_bdi_and_no_hidden_character():
    assert stored(SPOOFED, "plain") == "⟨U+202E⟩3448⟨U+200B⟩"
    svg = stored(SPOOFED + "&", "svg")
    assert svg == '<tspan class="memory-hidden-char">⟨U+202E⟩</tspan>3448<tspan class="memory-hidden-char">⟨U+200B⟩</tspan>&amp;'
    assert stored(None) == "<bdi></bdi>" and stored("a\tb\nc", "plain") == "a\tb\nc"  # layout is not hidden


def test_the_written_out_list_is_unicodes_format_and_control_characters():
    "HIDDEN is written out for speed; it must hold every format (Cf) and control (Cc) character but tab and line breaks."
    missed = [f"U+{c:04X}" for c in range(0x110000)
              if unicodedata.category(chr(c)) in ("Cf", "Cc") and chr(c) not in "\t\n\r" and not HIDDEN.match(chr(c))]
    assert missed == []
    assert not HIDDEN.search("plain text, é, 中文, עברית, العربية, emoji 🙂, tab\tand\nlines")


def test_a_graph_label_is_as_wide_as_its_marks():
    picture = layout({"centre": ENTITY, "nodes": [{"name": ENTITY, "hops": 0, "stored": True, "entityType": "service"}],
                      "edges": [], "total": 1, "left_out": 0})
    plain = layout({"centre": "auth", "nodes": [{"name": "auth", "hops": 0, "stored": True, "entityType": "service"}],
                    "edges": [], "total": 1, "left_out": 0})
    assert picture.nodes[0].width > plain.nodes[0].width + 100  # "⟨U+202E⟩⟨U+200B⟩" is 18 characters more


# Every page, rendered with poisoned values


@pytest.fixture
def poisoned(db_path):
    "A project, actor, session, entities, observations, a relation, a claim, evidence, facts and a checkpoint, each holding POISON."
    lexical = Config(search=SearchSettings(semantic=False))
    agent = Memory.open(db_path, project=PROJECT, actor="claude" + POISON, session="s" + POISON, config=lexical)
    agent.create_entities([
        {"name": ENTITY, "entityType": "service" + POISON, "observations": ["listens on port " + SPOOFED]},
        {"name": "db" + POISON, "entityType": "database", "observations": ["postgres" + POISON]},
    ])
    agent.create_relations([{"from": ENTITY, "to": "db" + POISON, "relationType": "writes to" + POISON}])
    agent.update_observation(ENTITY, "listens on port " + SPOOFED, "listens on port " + SPOOFED + " behind the proxy" + POISON)
    agent.governed.propose_claim(ENTITY, "port" + POISON, SPOOFED, evidence=["config file" + POISON])
    agent.governed.propose_claim(ENTITY, "port" + POISON, "9443" + POISON)
    agent.governed.record_fact(issue_reviewer("olive"), ENTITY, "region" + POISON, "eu-west-1" + POISON, "runbook" + POISON)
    agent.checkpoint("moved the gateway" + POISON)
    agent.close()


async def served(db_path):
    config = serve_config(db_path, Config(search=SearchSettings(semantic=False)), People("olive"), hashlib.sha256(b"x").hexdigest(), True)
    datasette = Datasette([str(db_path)], config=config)
    await datasette.invoke_startup()
    return datasette


class RawCharacters(html.parser.HTMLParser):
    """
    Where a page shows a hidden character raw: in text or in an attribute a
    person sees. Form values are left alone, as they must post back exactly what
    is stored (the page marks them where it shows them). Records, too, each
    mark outside <bdi>, other than in SVG, where each <text> is its own paragraph.
    """

    FORM_VALUES = {("input", "value"), ("option", "value")}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__()
        self.open, self.raw, self.unisolated, self.marks = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name, value in attrs:
            if value and (tag, name) not in self.FORM_VALUES and HIDDEN.search(value):
                self.raw.append(f"<{tag} {name}={value!r}>")
        if attributes.get("class") == "memory-hidden-char" and (attributes.get("title") or "").startswith("U+"):
            self.marks += 1
            if "bdi" not in self.open:
                self.unisolated.append(self.getpos())
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        if tag in self.open:  # closes it and whatever HTML left open inside it
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag):]

    def handle_data(self, data):
        if HIDDEN.search(data) and "textarea" not in self.open:  # a textarea edits the text as stored; the page says so
            self.raw.append(repr(data[:80]))


def read_page(text):
    parser = RawCharacters()
    parser.feed(text)
    return parser


async def pages(datasette):
    "Every memory page showing the poisoned values: paths to GET, and forms posted to their confirmation step."
    q = {"project": PROJECT}
    entity = {**q, "name": ENTITY}
    owner = {"actor": {"id": "olive"}}
    same_site = {**owner, "headers": {"Sec-Fetch-Site": "same-origin"}}
    gets = [
        ("/-/memory", {}), ("/-/memory", {"as_of": "4"}), ("/-/memory/review", q), ("/-/memory/search", {**q, "q": "port proxy"}),
        ("/-/memory/ledger", q), ("/-/memory/ledger", {**q, "kind": "update_observation"}), ("/-/memory/entity", entity),
        ("/-/memory/entity", {**entity, "as_of": "4"}), ("/-/memory/entity", {**q, "name": "db" + POISON}),
        ("/-/memory/claims/1", {}), ("/-/memory/claims/2", {}), ("/-/memory/facts/1", {}),
        ("/-/memory/claims/1/approve", {}), ("/-/memory/facts/1/supersede", {}), ("/-/memory/facts/new", q),
        *((f"/-/memory/entity/{c}", entity) for c in ("edit-observation", "delete-observation", "rename", "merge", "delete-relation")),
        ("/-/memory/entity", {**q, "name": "missing" + POISON}), ("/-/memory/review", {"project": "nowhere" + POISON}),
    ]
    for path, params in gets:
        yield path, await datasette.client.get(path, params=params, **owner)
    posts = [
        ("/-/memory/claims/1/approve", {}, {"rationale": "checked" + POISON, "step": "confirm"}),
        ("/-/memory/claims/1/approve", {}, {"rationale": "x", "valid_from": "soon" + POISON, "step": "confirm"}),
        ("/-/memory/facts/1/supersede", {}, {"object": "us-east-1" + POISON, "rationale": "moved" + POISON, "step": "confirm"}),
        ("/-/memory/facts/new", {}, {"project": PROJECT, "subject": ENTITY, "predicate": "owner" + POISON, "object": "Dana" + POISON,
                                     "rationale": "said so" + POISON, "step": "confirm"}),
        ("/-/memory/entity/rename", entity, {"new_name": "gateway" + POISON, "step": "confirm"}),
        ("/-/memory/entity/edit-observation", entity, {"old": "postgres", "new": "x", "step": "confirm"}),  # an error naming it
    ]
    for path, params, data in posts:
        # the form is POST-redirect-GET: the page that shows the values is the GET the post leads to
        yield f"POST {path}", await datasette.client.post(path, params=params, data=data, follow_redirects=True, **same_site)


async def test_no_memory_page_shows_a_hidden_character_raw(poisoned, db_path):
    datasette = await served(db_path)
    seen = 0
    async for path, response in pages(datasette):
        assert response.status_code in (200, 400, 404), (path, response.status_code, response.text[:300])
        page = read_page(response.text)
        assert page.raw == [], f"{path} shows hidden characters raw: {page.raw[:5]}"
        assert page.unisolated == [], f"{path} has marks outside <bdi> at {page.unisolated[:5]}"
        if response.status_code == 200:
            assert page.marks > 0 or "⟨U+202E⟩" in response.text, f"{path} shows none of the poisoned values"  # in an <option>, as text
        seen += 1
    assert seen == 28
    await datasette.invoke_shutdown()


async def test_the_approve_form_warns_and_the_edit_form_says_the_box_hides_them(poisoned, db_path):
    datasette = await served(db_path)
    owner = {"actor": {"id": "olive"}}
    form = (await datasette.client.get("/-/memory/claims/1/approve", **owner)).text
    assert 'class="memory-hidden-note"' in form and "Read the statement as marked before you approve it" in form
    assert "⟨U+202E⟩</span>3448<span" in form
    other = (await datasette.client.get("/-/memory/facts/1/invalidate", **owner)).text
    assert "before you invalidate it" in other
    edit = await datasette.client.get("/-/memory/entity/edit-observation", params={"project": PROJECT, "name": ENTITY}, **owner)
    assert "in this box they are there but do not show" in edit.text
    await datasette.invoke_shutdown()


async def test_a_flash_message_carries_the_marks_as_text(poisoned, db_path):
    datasette = await served(db_path)
    response = await datasette.client.post(
        "/-/memory/claims/1/approve", data={"rationale": "checked", "step": "apply"}, actor={"id": "olive"},
        headers={"Sec-Fetch-Site": "same-origin"},
    )
    assert response.status_code == 302
    page = await datasette.client.get(response.headers["location"], actor={"id": "olive"}, cookies=dict(response.cookies))
    assert "approved: fact #2 holds" in page.text and "⟨U+202E⟩3448⟨U+200B⟩" in page.text
    assert read_page(page.text).raw == []
    await datasette.invoke_shutdown()


async def test_datasettes_own_tables_link_entity_names_with_marks(poisoned, db_path):
    datasette = await served(db_path)
    table = (await datasette.client.get("/memory/relations", actor={"id": "olive"})).text
    link = re.search(r'<a href="/-/memory/entity\?[^"]*"><bdi>auth(.*?)</bdi></a>', table)
    assert link and "⟨U+202E⟩" in link[1] and not HIDDEN.search(link[1])
    await datasette.invoke_shutdown()


# What a reviewer sees, in Chromium


@pytest.fixture(scope="module")
def served_in_a_browser(tmp_path_factory):
    "A claim whose value holds a RIGHT-TO-LEFT OVERRIDE and a zero-width space, stored through the core, served by serve."
    db_path = tmp_path_factory.mktemp("bidi") / "memory.db"
    agent = Memory.open(db_path, project="payments", actor="claude", config=Config(search=SearchSettings(semantic=False)))
    agent.create_entities([{"name": "auth-gateway", "entityType": "service", "observations": ["listens on port " + SPOOFED]},
                           {"name": "ledger" + ZWSP + "db", "entityType": "database", "observations": ["postgres 15"]}])
    agent.create_relations([{"from": "auth-gateway", "to": "ledger" + ZWSP + "db", "relationType": "writes" + RLO + " to"}])
    agent.governed.propose_claim("auth-gateway", "port", SPOOFED, evidence=["the config file says " + SPOOFED])
    agent.close()
    with serving(db_path, "--owner", "olive") as (base, lines):
        yield base, re.search(r"Sign in as olive: (\S+)", "".join(lines))[1]


def glyphs_left_to_right(page, selector, text):
    "The x position of each character of ``text`` inside the first element matching ``selector``, as drawn."
    return page.evaluate(
        """([selector, text]) => {
            const root = document.querySelector(selector);
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const at = node.data.indexOf(text);
                if (at < 0) continue;
                return [...text].map((_, i) => {
                    const range = document.createRange();
                    range.setStart(node, at + i);
                    range.setEnd(node, at + i + 1);
                    return range.getBoundingClientRect().left;
                });
            }
            return null;
        }""",
        [selector, text],
    )


def check_statement(page, card):
    "The claim's value reads 3448 between its two marks, left to right, isolated in <bdi>."
    value = page.locator(f"{card} .memory-statement bdi").nth(2)
    expect(value).to_have_text("⟨U+202E⟩3448⟨U+200B⟩")
    assert value.evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    marks = value.locator(".memory-hidden-char")
    expect(marks).to_have_count(2)
    assert "RIGHT-TO-LEFT OVERRIDE" in marks.first.get_attribute("title")
    assert marks.first.evaluate("e => getComputedStyle(e).color") == "rgb(164, 0, 29)"  # a distinct style
    xs = glyphs_left_to_right(page, f"{card} .memory-statement", "3448")
    assert xs == sorted(xs), f"3448 is drawn out of order: {xs}"
    before, after = (m.bounding_box() for m in (marks.first, marks.last))
    assert before["x"] < xs[0] < xs[-1] < after["x"]


def test_a_reviewer_sees_the_marks_on_the_review_page_the_claim_and_the_approve_form(served_in_a_browser, page):
    base, sign_in = served_in_a_browser
    page.goto(sign_in)
    page.goto(f"{base}/-/memory/review?project=payments")
    check_statement(page, "#claim-1")
    expect(page.locator("#claim-1 .memory-evidence")).to_contain_text("the config file says ⟨U+202E⟩3448⟨U+200B⟩")
    screenshot(page, "bidi-review")

    page.locator("#claim-1").get_by_role("link", name="#1").click()
    check_statement(page, ".memory-card")
    expect(page.locator(".memory-hidden-note")).to_contain_text("Read the statement as marked before you act on it")
    screenshot(page, "bidi-claim")

    page.goto(f"{base}/-/memory/claims/1/approve")
    check_statement(page, ".memory-card")
    expect(page.locator(".memory-hidden-note")).to_contain_text("before you approve it")
    screenshot(page, "bidi-approve")
    page.get_by_label("Rationale").fill("checked the config")
    page.get_by_role("button", name="Review what will change").click()
    check_statement(page, ".memory-change")  # the fact it would become
    screenshot(page, "bidi-approve-confirm")

    page.goto(f"{base}/-/memory/entity?project=payments&name=auth-gateway")
    expect(page.locator(".memory-observation")).to_have_text("listens on port ⟨U+202E⟩3448⟨U+200B⟩")
    expect(page.locator("svg.memory-graph text").filter(has_text="ledger⟨U+200B⟩db")).to_have_count(1)
    expect(page.locator("svg.memory-graph tspan.memory-hidden-char")).to_have_count(2)
    screenshot(page, "bidi-entity")
