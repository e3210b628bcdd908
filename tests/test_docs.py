"""The README is generated where it can be, and documents every tool and command."""

import pathlib

from cogapp import Cog

from datasette_memory import Config
from datasette_memory.cli import cli
from datasette_memory.plugin.resources import datasette_config
from mcp_bridge.bridge import Bridge
from mcp_bridge.prompts import PROMPTS
from mcp_bridge.server import build_tools

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_readme_cog_blocks_are_current():
    assert Cog().main(["cog", "--check", str(README)]) == 0, "run: cog -r README.md"


def test_every_cli_command_is_documented():
    readme = README.read_text()
    for name in cli.commands:
        assert f"### `datasette-memory {name}`" in readme


def test_every_mcp_tool_is_documented():
    readme = README.read_text()
    for tool in build_tools(Bridge(None), Config()):
        assert f"**`{tool.name}`**" in readme


def test_every_mcp_prompt_is_documented():
    readme = README.read_text()
    for function in PROMPTS:
        assert f"**`{function.prompt_name}`**" in readme


def test_every_stored_query_is_documented_and_tested():
    readme = README.read_text()
    tests = (README.parent / "tests" / "test_queries.py").read_text()
    for name in datasette_config("datasette.yaml", "memory")["databases"]["memory"]["queries"]:
        assert f"**`{name}`**" in readme
        assert f'found["{name}"]' in tests
