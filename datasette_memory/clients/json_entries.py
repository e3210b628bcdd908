"""Our entries in a JSON settings object: an MCP server under ``mcpServers`` and hooks under ``hooks``.

Claude Code's ``.mcp.json``, ``~/.claude.json`` and ``settings.json``, and
Codex's ``hooks.json``, share these two shapes::

    {"mcpServers": {"memory": {"command": "...", "args": ["mcp"]}}}
    {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "..."}]}]}}

Every entry that is not ours (other servers, other events, other handlers of
the same event, keys we do not know) is left where it is. A matcher group or
container our removal leaves empty is removed with it, so an uninstall after an
install gives back the object the install started from.
"""

import pathlib
from collections.abc import Mapping
from typing import Any

from .registration import is_our_hook, is_our_server
from .setting_files import SettingsFileError, object_at


def put_server(data: dict[str, Any], spec: dict[str, Any], name: str, path: pathlib.Path) -> list[str]:
    """
    Add or update our MCP server in ``data["mcpServers"]``.

    :param data: the settings object, changed in place
    :param spec: the server's entry
    :param name: its name
    :param path: the file, named in errors and notes
    :raises SettingsFileError: if another server already has that name
    """
    servers = object_at(data, "mcpServers", path)
    existing = servers.get(name)
    if existing is not None and not is_our_server(existing):
        raise SettingsFileError(
            f'{path} already has an MCP server named "{name}" that is not datasette-memory\'s '
            f"(command: {existing.get('command') if isinstance(existing, dict) else existing!r}); "
            "remove it, or pass --name to register ours under another name. Nothing was written."
        )
    merged = {**existing, **spec} if existing else spec  # keys the user added to ours (env, ...) stay
    if merged == existing:
        return []
    servers[name] = merged
    return [f'{"~ updated" if existing else "+ added"} MCP server "{name}": {" ".join([spec["command"], *spec["args"]])}']


def drop_server(data: dict[str, Any], name: str) -> list[str]:
    """
    Remove our MCP server from ``data["mcpServers"]``, and the key if nothing else is under it.

    :param data: the settings object, changed in place
    :param name: the server's name; a server of that name that is not ours is left alone
    """
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not is_our_server(servers.get(name)):
        return []
    del servers[name]
    if not servers:
        del data["mcpServers"]
    return [f'- removed MCP server "{name}"']


def put_hooks(
    data: dict[str, Any], wanted: dict[str, str], path: pathlib.Path, matchers: Mapping[str, str] | None = None
) -> list[str]:
    """
    Make our hooks in ``data["hooks"]`` exactly ``wanted``.

    Each of our hooks is a matcher group of its own, after the user's groups for
    the same event; an event we no longer install (the Stop hook without
    ``--with-stop-hook``) loses ours.

    :param data: the settings object, changed in place
    :param wanted: each event's command (:meth:`~.registration.Registration.hook_commands`)
    :param path: the file, named in errors
    :param matchers: the matcher of our group, by event (an event not named has none: every tool or source)
    """
    matchers = matchers or {}
    hooks = object_at(data, "hooks", path)
    notes = [f"- removed {event} hook" for event in list(hooks) if event not in wanted and remove_ours(hooks, event)]
    for event, command in wanted.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsFileError(f'{path}: "hooks.{event}" should be a list of matcher groups; nothing was written')
        mine = our_handlers(groups)
        matcher = {"matcher": matchers[event]} if event in matchers else {}
        ours = [g for g in groups if our_handlers([g])]
        if len(mine) == 1 and len(ours) == 1 and len(handlers(ours[0])) == 1:
            if mine[0]["command"] == command and ours[0].get("matcher") == matcher.get("matcher"):
                continue
            mine[0]["command"] = command  # in place: the user may have moved it, or given it a timeout
            ours[0].pop("matcher", None)
            ours[0].update(matcher)
        else:
            remove_ours(hooks, event)
            hooks.setdefault(event, []).append({**matcher, "hooks": [{"type": "command", "command": command}]})
        notes.append(f"{'~ updated' if mine else '+ added'} {event} hook: {command}"
                     + (f" (for the tools {matchers[event]})" if event in matchers else ""))
    return notes


def drop_hooks(data: dict[str, Any]) -> list[str]:
    """
    Remove every hook of ours from ``data["hooks"]``, and what that leaves empty.

    :param data: the settings object, changed in place
    """
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    notes = [f"- removed {event} hook" for event in list(hooks) if remove_ours(hooks, event)]
    if notes and not hooks:
        del data["hooks"]
    return notes


def handlers(group: Any) -> list[Any]:
    "A matcher group's handlers (none if it is not shaped as one)."
    found = group.get("hooks") if isinstance(group, dict) else None
    return found if isinstance(found, list) else []


def our_handlers(groups: list[Any]) -> list[dict[str, Any]]:
    "Our handlers among an event's matcher groups."
    return [h for g in groups for h in handlers(g) if isinstance(h, dict) and is_our_hook(h.get("command"))]


def remove_ours(hooks: dict[str, Any], event: str) -> bool:
    """
    Remove our handlers from one event; a group left with no handler goes, and so does an event left with no group.

    :returns: whether any handler was ours
    """
    groups = hooks.get(event)
    if not isinstance(groups, list) or not our_handlers(groups):
        return False
    kept = []
    for group in groups:
        rest = [h for h in handlers(group) if not our_handlers([{"hooks": [h]}])]
        if len(rest) < len(handlers(group)):
            if not rest:
                continue
            group["hooks"] = rest
        kept.append(group)
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
    return True
