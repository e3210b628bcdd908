"""The docs are generated where they can be, build without a warning, and document every tool and command.

The README is the newcomer's page; the reference is the MkDocs site under docs/.
"""

import pathlib
import re
import shutil
import subprocess
import sys

from cogapp import Cog

from datasette_memory import Config
from datasette_memory.cli import cli
from datasette_memory.plugin.resources import datasette_config
from mcp_bridge.bridge import Bridge
from mcp_bridge.prompts import PROMPTS
from mcp_bridge.server import build_tools

README = pathlib.Path(__file__).parent.parent / "README.md"
DOCS = README.parent / "docs"


def docs_text():
    "Every page of the reference, one after another."
    return "\n".join(page.read_text() for page in sorted(DOCS.glob("*.md")))


def test_cog_blocks_are_current():
    pages = [str(README), *map(str, sorted(DOCS.glob("*.md")))]
    assert Cog().main(["cog", "--check", *pages]) == 0, "run: cog -r README.md docs/*.md"


def build_docs(root, site):
    "Build the site from ``root``'s mkdocs.yml into ``site`` with --strict; return what mkdocs printed."
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return result.stderr


def test_docs_build_without_a_warning(tmp_path):
    "mkdocs --strict fails on any warning: a broken link or anchor between pages, a page it cannot read."
    build_docs(README.parent, tmp_path / "site")
    built = {page.parent.name for page in (tmp_path / "site").rglob("index.html")}
    assert {page.stem for page in DOCS.glob("*.md")} - {"index"} <= built


def test_a_new_page_is_in_the_site_without_a_change_to_its_configuration(tmp_path):
    "Another developer's docs/*.md page is built and listed in the side bar, after the pages in reading order."
    shutil.copy(README.parent / "mkdocs.yml", tmp_path)
    shutil.copytree(DOCS, tmp_path / "docs")
    (tmp_path / "docs" / "a-new-page.md").write_text("# A new page\n\nSee [the ledger](ledger.md#verify).\n")
    build_docs(tmp_path, tmp_path / "site")
    side_bar = re.findall(r'class="toctree-l1"><a class="reference internal" href="([^"]+)"',
                          (tmp_path / "site" / "index.html").read_text())
    assert side_bar[0] == "agents/" and side_bar[-1] == "a-new-page/"
    assert "A new page" in (tmp_path / "site" / "a-new-page" / "index.html").read_text()


def test_readme_is_a_newcomers_page():
    assert len(README.read_text().splitlines()) < 400


def test_readme_starts_with_the_two_commands():
    commands = [line.strip() for line in README.read_text().splitlines() if line.startswith("    ")][:2]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -c requirements/lock.txt . && .venv/bin/datasette-memory serve",
        "bash tests/run",
    ]


def test_readme_links_resolve():
    "GitHub shows README's links to docs/ pages and images; each must name a file there, and an anchor on it."
    readme = README.read_text()
    links = re.findall(r"\]\(((?!https?:)[^)#\s]+)(?:#([^)\s]+))?\)", readme)
    assert links
    for target, anchor in links:
        path = README.parent / target
        assert path.is_file(), f"README links to {target}, which does not exist"
        if anchor:
            slugs = {heading_slug(line) for line in path.read_text().splitlines() if line.startswith("#")}
            assert anchor in slugs, f"README links to {target}#{anchor}, which has no such heading"


def test_docs_pictures_are_small():
    "A picture is in every clone of the repository: each under 150 KB."
    for picture in DOCS.glob("*.png"):
        assert picture.stat().st_size < 150_000, f"{picture.name} is {picture.stat().st_size:,} bytes"


def heading_slug(line):
    "The anchor GitHub and MkDocs both give a heading (no heading here has runs of spaces or hyphens)."
    text = re.sub(r"[`*]", "", line.lstrip("#")).strip().lower()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text))


def test_every_cli_command_is_documented():
    docs = docs_text()
    for name in cli.commands:
        assert f"## `datasette-memory {name}`" in docs


def test_every_mcp_tool_is_documented():
    docs = docs_text()
    for tool in build_tools(Bridge(None), Config()):
        assert f"**`{tool.name}`**" in docs


def test_every_mcp_prompt_is_documented():
    docs = docs_text()
    for function in PROMPTS:
        assert f"**`{function.prompt_name}`**" in docs


def test_every_stored_query_is_documented_and_tested():
    docs = docs_text()
    tests = (README.parent / "tests" / "test_queries.py").read_text()
    for name in datasette_config("datasette.yaml", "memory")["databases"]["memory"]["queries"]:
        assert f"**`{name}`**" in docs
        assert f'found["{name}"]' in tests
