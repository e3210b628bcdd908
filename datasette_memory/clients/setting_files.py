"""Reading, backing up and writing a client's settings file without losing what the user had.

A change is planned in full (the text before, the text after, a line per
entry) before anything is written, so ``--dry-run`` shows exactly what a real
run would do, and a run that would change nothing writes nothing: no file, no
backup. A file that changes is backed up first, outside the user's repository
(:mod:`.install_state`), and replaced atomically (a temporary file in the same folder, then a rename), so a
crash leaves the old file or the new one, never half of one. A settings file
that is a symlink (a dotfiles checkout) is written through: the link stays.
"""

import dataclasses
import datetime
import difflib
import json
import os
import pathlib
from collections.abc import Callable
from typing import Any

from ..core.atomic_files import write_atomically
from .install_state import InstallState
from .json_layout import dump_like


class SettingsFileError(Exception):
    """A settings file cannot be read or has a shape we will not guess about; nothing was written."""


@dataclasses.dataclass
class FileChange:
    """
    One settings file, before and after.

    :param path: the file
    :param before: its text, or None if it does not exist
    :param after: its new text, or None to remove it (nothing else was left in it)
    :param notes: what changed, one line per entry (``+ added``, ``- removed``, ``~ updated``, ``! warning``)
    """

    path: pathlib.Path
    before: str | None
    after: str | None
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        "A unified diff from the old text to the new."
        old, new = (self.before or "").splitlines(keepends=True), (self.after or "").splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, f"{self.path} (now)", f"{self.path} (after)")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def read_text(path: pathlib.Path) -> str | None:
    """
    A settings file's text, or None if there is none.

    :param path: the file
    :raises SettingsFileError: if it exists but cannot be read as UTF-8 text
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsFileError(f"{path}: cannot read it ({e}); nothing was written")


def parse_json_object(path: pathlib.Path, text: str | None) -> dict[str, Any]:
    """
    A JSON settings file's object; an empty or missing file is an empty object.

    :param path: the file, named in errors
    :param text: its text
    :raises SettingsFileError: if it is not valid JSON, or not an object
    """
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SettingsFileError(
            f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "fix it or move it aside, then run this again. Nothing was written."
        )
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was written")
    return data


def edit_json(path: pathlib.Path, edit: Callable[[dict[str, Any]], list[str]]) -> FileChange:
    """
    Plan an edit of a JSON settings file.

    :param path: the file
    :param edit: changes the settings in place and returns a note per change (none: nothing changed)
    :raises SettingsFileError: if the file is unreadable or malformed, or ``edit`` refuses its contents
    """
    before = read_text(path)
    data = parse_json_object(path, before)
    notes = edit(data)
    if not notes:
        return FileChange(path, before, before)
    after = None if not data and before is not None else dump_like(data, before)
    return FileChange(path, before, after, notes)


def object_at(data: dict[str, Any], key: str, path: pathlib.Path, where: str = "") -> dict[str, Any]:
    """
    ``data[key]``, which must be an object; created empty if absent.

    :param data: the enclosing object
    :param key: the key
    :param path: the file, named in errors
    :param where: the enclosing object's place in the file, for errors
    :raises SettingsFileError: if ``data[key]`` is there but not an object
    """
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise SettingsFileError(f'{path}: "{where}{key}" should be an object, not {json.dumps(value)[:80]}; nothing was written')
    return value


def write_through(path: pathlib.Path, text: str) -> None:
    """
    Replace a settings file's contents all at once, keeping its permissions
    (``~/.claude.json`` holds a sign-in and is its owner's alone).

    :param path: the file (a symlink is followed, so the link stays a link), in a folder that exists
    :param text: the new contents
    """
    target = path.resolve()
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    write_atomically(target, text, mode=0o600 if mode is not None else 0o644)
    if mode is not None:
        os.chmod(target, mode)


def apply(change: FileChange, now: datetime.datetime, state: InstallState) -> pathlib.Path | None:
    """
    Write a planned change: back the file up, then write or remove it.

    :param change: the plan; one that changes nothing writes nothing
    :param now: the time in the backup's name
    :param state: where backups go, and the folders made are remembered
    :returns: the backup's path, or None if there was nothing to back up
    """
    if not change.changed:
        return None
    backup = state.back_up(change.path, now) if change.before is not None else None
    if change.after is None:
        change.path.resolve().unlink()
    else:
        state.make_folder(change.path.resolve().parent)
        write_through(change.path, change.after)
    return backup
