"""Redacted values: what a redaction leaves in an event, and how the chain still verifies.

A person redacts a text (a leaked secret) by recording a ``redact`` event whose
value maps the sha256 of every stored string that held the text to that string
with the text replaced by a mark naming the redaction (``[redacted MACHINE#CLOCK]``).
Every copy of such a string, in the graph and in every event's old and new values,
is replaced by its mapped string on the machine that redacted and on every peer
the redaction reaches, including copies that arrive later.

An event's digests are left as they were, so its hash and the chain still
verify. Its redacted value no longer matches its digest: it is accepted when it
holds one of the strings a redaction this file holds produced, and refused as
an edit otherwise. What the value was can no longer be checked; that the
redaction was made, by whom and why, stays in the chain.
"""

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Any

KIND = "redact"
MARK = "[redacted {machine}#{clock}]"
MARK_START = "[redacted "


def mark(machine: str, clock: int) -> str:
    "The text a redaction puts where the redacted text was (naming the redaction by its machine's first 12 characters and clock)."
    return MARK.format(machine=machine[:12], clock=clock)


def text_digest(text: str) -> str:
    "The key of a redacted string in a redaction's map."
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def replacements_of(value: str | None) -> dict[str, str]:
    "The ``{digest: replacement}`` map of a ``redact`` event's new value (empty for a value of another shape)."
    try:
        decoded = json.loads(value) if value else None
    except ValueError:
        return {}
    found = decoded.get("replacements") if isinstance(decoded, dict) else None
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def known_replacements(conn: sqlite3.Connection) -> dict[str, dict[str, str]]:
    "Every redaction this file holds, by project: ``{project: {digest: replacement}}``."
    found: dict[str, dict[str, str]] = {}
    for table, extra in (("events", ""), ("memory_sync_events", " AND opaque = 0")):
        for project, value in conn.execute(f"SELECT project, new FROM {table} WHERE kind = 'redact' AND new IS NOT NULL{extra}"):
            found.setdefault(project, {}).update(replacements_of(value))
    return found


def accepted(conn: sqlite3.Connection) -> frozenset[str]:
    "The strings a redaction this file holds put in place: a value holding one may differ from its digest."
    # the literal kind, so the partial indexes of redactions (migration m014) answer
    if conn.execute("SELECT 1 FROM events WHERE kind = 'redact' LIMIT 1").fetchone() is None and \
            conn.execute("SELECT 1 FROM memory_sync_events WHERE kind = 'redact' LIMIT 1").fetchone() is None:
        return frozenset()
    return frozenset(text for replacements in known_replacements(conn).values() for text in replacements.values())


def strings(value: Any) -> Iterable[str]:
    "Every string in a decoded JSON value (keys too)."
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)


def holds_redaction(text: str, allowed: frozenset[str]) -> bool:
    "Whether the stored value ``text`` holds a string a known redaction produced."
    if MARK_START not in text or not allowed:
        return False
    try:
        decoded = json.loads(text)
    except ValueError:
        return False
    return any(item in allowed for item in strings(decoded))


def rewritten(value: Any, change: Callable[[str], str | None]) -> tuple[Any, bool]:
    "``value`` with each string ``change`` maps to another replaced (keys too), and whether any was."
    if isinstance(value, str):
        new = change(value)
        return (value, False) if new is None else (new, True)
    if isinstance(value, list):
        items = [rewritten(item, change) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        changed = False
        result = {}
        for key, item in value.items():
            new_key, key_changed = rewritten(key, change)
            new_item, item_changed = rewritten(item, change)
            result[new_key] = new_item
            changed = changed or key_changed or item_changed
        return result, changed
    return value, False


def redacted_text(text: str | None, replacements: Mapping[str, str], canonical: Callable[[Any], str]) -> str | None:
    "The stored value ``text`` with every string the map names replaced, or None if it holds none."
    if text is None:
        return None
    value, changed = rewritten(json.loads(text), lambda s: replacements.get(text_digest(s)))
    return canonical(value) if changed else None
