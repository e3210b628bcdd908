"""Our entries in Codex's ``config.toml``: the MCP server's table and the hooks feature flag.

The file is edited as text, line by line, and every edit is checked by parsing
the result with :mod:`tomllib` and comparing it with what the edit meant, so
nothing else can change unseen. tomlkit was the first choice (it keeps comments
and formatting on a round trip), but it re-spaces the tables next to one it
adds or removes: the blank lines around ``[profiles.x]`` move, so an uninstall
after an install could not give the user's bytes back. Our lines are few and
fixed, so text edits keep every other byte of the file as it was, and need no
dependency.

What an install adds, and an uninstall removes again::

    features.codex_hooks = true  # added by `datasette-memory install codex` ...   (or under [features])

    # Added by `datasette-memory install codex`; `datasette-memory uninstall codex` removes it.
    [mcp_servers.memory]
    command = "/path/to/datasette-memory"
    args = ["mcp"]
"""

import copy
import json
import pathlib
import re
import tomllib
from collections.abc import Callable
from typing import Any

from .registration import is_our_server
from .setting_files import FileChange, SettingsFileError, read_text

SERVER_COMMENT = "# Added by `datasette-memory install codex`; `datasette-memory uninstall codex` removes it."
FEATURE_COMMENT = "# added by `datasette-memory install codex`: older Codex versions run hooks only with this on"
FEATURE_LINE = re.compile(r"^[ \t]*(features[ \t]*\.[ \t]*)?codex_hooks[ \t]*=[ \t]*true[ \t]*# added by `datasette-memory install codex`.*\n?",
                          re.MULTILINE)
HEADER = re.compile(r"^[ \t]*\[")
KEY_VALUE = re.compile(r"^[ \t]*[A-Za-z0-9_\"'-]")

# edit(text, data) -> (new text, what the new text must parse to, notes)
TomlEdit = Callable[[str, dict[str, Any]], tuple[str, dict[str, Any], list[str]]]


def parse_toml(path: pathlib.Path, text: str | None) -> dict[str, Any]:
    """
    A TOML settings file's tables; a missing file has none.

    :param path: the file, named in errors
    :param text: its text
    :raises SettingsFileError: if it is not valid TOML
    """
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as e:
        raise SettingsFileError(f"{path} is not valid TOML ({e}); fix it or move it aside, then run this again. Nothing was written.")


def edit_toml(path: pathlib.Path, edits: list[TomlEdit]) -> FileChange:
    """
    Plan text edits of a TOML settings file, each checked against what it meant.

    :param path: the file
    :param edits: the edits, applied in turn
    :raises SettingsFileError: if the file is malformed, or an edit would change anything it did not mean to
    """
    before = read_text(path)
    text, data = before or "", parse_toml(path, before)
    notes: list[str] = []
    for edit in edits:
        text, expected, more = edit(text, data)
        if more and tomllib_or_none(text) != expected:
            raise SettingsFileError(
                f"{path} is laid out in a way this command cannot edit by adding or removing its own lines alone "
                f"({more[0][2:]}); make that change by hand. Nothing was written."
            )
        data, notes = expected, notes + more
    if text == (before or ""):
        return FileChange(path, before, before, notes)
    return FileChange(path, before, None if before is not None and not text.strip() else text, notes)


def tomllib_or_none(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def server_block(name: str, command: str, args: list[str]) -> str:
    "Our MCP server's table, with the comment that says who added it."
    return f"{SERVER_COMMENT}\n[mcp_servers.{name}]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"


def put_server(name: str, command: str, args: list[str], path: pathlib.Path) -> TomlEdit:
    """
    An edit that adds our MCP server's table at the end of the file, or replaces ours.

    :param name: the server's name (letters, digits, ``_`` and ``-``)
    :param command: the ``datasette-memory`` executable
    :param args: its arguments
    :param path: the file, named in errors
    """
    def edit(text: str, data: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
        servers = data.get("mcp_servers", {})
        existing = servers.get(name) if isinstance(servers, dict) else None
        if existing is not None and not is_our_server(existing):
            raise SettingsFileError(
                f'{path} already has an MCP server named "{name}" that is not datasette-memory\'s '
                f"(command: {existing.get('command') if isinstance(existing, dict) else existing!r}); "
                "remove it, or pass --name to register ours under another name. Nothing was written."
            )
        if existing == {"command": command, "args": args}:
            return text, data, []
        expected = copy.deepcopy(data)
        expected.setdefault("mcp_servers", {})[name] = {**(existing or {}), "command": command, "args": args}
        note = f'{"~ updated" if existing else "+ added"} MCP server "{name}": {" ".join([command, *args])}'
        if existing is not None:  # its command and args lines, in place: keys the user added (env, ...) stay
            return with_server_values(text, name, command, args), expected, [note]
        separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return text + separator + server_block(name, command, args), expected, [note]

    return edit


def drop_server(name: str) -> TomlEdit:
    """
    An edit that removes our MCP server's table, its comment and the blank line before it.

    :param name: the server's name; a server of that name that is not ours is left alone
    """
    def edit(text: str, data: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
        servers = data.get("mcp_servers")
        if not isinstance(servers, dict) or not is_our_server(servers.get(name)):
            return text, data, []
        expected = copy.deepcopy(data)
        del expected["mcp_servers"][name]
        if not expected["mcp_servers"]:
            del expected["mcp_servers"]
        return without_server(text, name), expected, [f'- removed MCP server "{name}"']

    return edit


def server_header(lines: list[str], name: str) -> int | None:
    "The line of the server's ``[mcp_servers.<name>]`` header, if there is one."
    header = re.compile(rf"^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*(\"?){re.escape(name)}\1[ \t]*\][ \t]*(#.*)?$")
    return next((i for i, line in enumerate(lines) if header.match(line.rstrip("\n"))), None)


def with_server_values(text: str, name: str, command: str, args: list[str]) -> str:
    "The text with the ``command`` and ``args`` lines under the server's header replaced."
    lines = text.splitlines(keepends=True)
    start = server_header(lines, name)
    if start is None:
        return text
    values = {"command": json.dumps(command), "args": json.dumps(args)}
    for i in range(start + 1, len(lines)):
        if HEADER.match(lines[i]):
            break
        key = re.match(r"^[ \t]*(command|args)[ \t]*=", lines[i])
        if key:
            lines[i] = f"{key.group(1)} = {values[key.group(1)]}\n"
    return "".join(lines)


def without_server(text: str, name: str) -> str:
    "The text without the server's table: its header, the key lines under it, our comment and the blank line before that."
    lines = text.splitlines(keepends=True)
    start = server_header(lines, name)
    if start is None:
        return text
    end = start + 1
    while end < len(lines) and not HEADER.match(lines[end]) and KEY_VALUE.match(lines[end]):
        end += 1
    if start > 0 and lines[start - 1].rstrip("\n") == SERVER_COMMENT:
        start -= 1
        if start > 0 and not lines[start - 1].strip():
            start -= 1
    return "".join(lines[:start] + lines[end:])


def enable_hooks_feature(path: pathlib.Path) -> TomlEdit:
    """
    An edit that turns on ``[features] codex_hooks`` unless the file already says either way.

    Newer Codex versions run hooks unless ``[features] hooks = false``
    (``codex_hooks`` is its older name, still read); older ones only with
    ``codex_hooks = true``. A user's explicit ``false`` is kept, with a warning.

    :param path: the file, named in notes
    """
    def edit(text: str, data: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
        features = data.get("features", {})
        if not isinstance(features, dict):
            return text, data, []
        for key in ("hooks", "codex_hooks"):
            if features.get(key) is False:
                return text, data, [f"! [features] {key} = false in {path}: Codex will not run the hooks until it is true"]
            if key in features:
                return text, data, []
        expected = copy.deepcopy(data)
        expected.setdefault("features", {})["codex_hooks"] = True
        return with_feature_line(text), expected, ["+ added [features] codex_hooks = true"]

    return edit


def with_feature_line(text: str) -> str:
    "The text with our ``codex_hooks = true`` line: under ``[features]`` if there is one, else among the top-level keys."
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    features = re.compile(r"^[ \t]*\[[ \t]*features[ \t]*\][ \t]*(#.*)?$")
    for i, line in enumerate(lines):
        if features.match(line.rstrip("\n")):
            return "".join(lines[: i + 1] + [f"codex_hooks = true  {FEATURE_COMMENT}\n"] + lines[i + 1:])
    first_table = next((i for i, line in enumerate(lines) if HEADER.match(line)), len(lines))
    last_key = max((i + 1 for i in range(first_table) if KEY_VALUE.match(lines[i])), default=0)
    return "".join(lines[:last_key] + [f"features.codex_hooks = true  {FEATURE_COMMENT}\n"] + lines[last_key:])


def drop_hooks_feature() -> TomlEdit:
    "An edit that removes our ``codex_hooks = true`` line, and only ours (a user's own setting stays)."

    def edit(text: str, data: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
        if not FEATURE_LINE.search(text):
            return text, data, []
        expected = copy.deepcopy(data)
        del expected["features"]["codex_hooks"]
        if not expected["features"]:
            del expected["features"]
        return FEATURE_LINE.sub("", text, count=1), expected, ["- removed [features] codex_hooks = true"]

    return edit
