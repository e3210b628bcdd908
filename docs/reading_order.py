"""MkDocs hook: the side bar in reading order. A page not named here follows the named ones, by file name."""

ORDER = [
    "index.md", "agents.md", "hooks.md", "tools.md", "datasette.md", "search.md", "semantic-search.md",
    "file.md", "ledger.md", "replication.md", "sync.md", "redaction.md", "security.md", "cli.md", "python-api.md", "extending.md", "ecosystem.md", "testing.md",
    "benchmarks.md", "call-cost.md",
]


def place(item):
    path = item.file.src_uri if item.is_page else ""
    return (ORDER.index(path) if path in ORDER else len(ORDER), path)


def on_nav(nav, config, files):
    nav.items.sort(key=place)
    nav.pages.sort(key=place)
    for previous, page in zip(nav.pages, nav.pages[1:]):
        previous.next_page, page.previous_page = page, previous
    return nav
