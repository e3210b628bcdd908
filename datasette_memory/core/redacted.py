"""Redacted values: what a redaction leaves in an event, and how the chain still verifies.

A person redacts a text (a leaked secret) by recording a ``redact`` event whose
value maps the sha256 of every stored string that held the text to that string
with the text replaced by a mark (``[redacted 5e0f3c2a9b1d]``, the first 12 hex
digits of the text's own sha256, so two machines redacting one text write the
same strings), and names the text by its sha256 and length. Every copy of such a
string, in the graph and in every event's old and new values, is replaced on the
machine that redacted and on every peer the redaction reaches, including copies
that arrive later.

Every peer applies the same map, whatever order redactions reached it in: the
redactions of a project, in the order sync orders events (time, machine, clock),
are resolved alike (:class:`Resolver`). A string two redactions replaced in two
ways (two texts removed from one string, on two machines) becomes the first's
replacement with the later's text removed from it too, found there by its sha256
and length; a string one redaction made and another redacted further is followed
to the end.

An event's digests are left as they were, so its hash and the chain still
verify. Its redacted value no longer matches its digest: it is accepted when it
holds one of the strings the redactions this file holds put in place, and
refused as an edit otherwise. What the value was can no longer be checked; that
the redaction was made, by whom and why, stays in the chain.
"""

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KIND = "redact"
MARK_START = "[redacted "
MAX_STEPS = 16  # a string redacted again and again: as many replacements are followed


def text_digest(text: str) -> str:
    "The key of a redacted string in a redaction's map, and how a redaction names its text."
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mark(text: str) -> str:
    "What a redaction puts where ``text`` was: the first 12 hex digits of its sha256."
    return mark_of(text_digest(text))


def mark_of(sha: str) -> str:
    "The mark of the text whose sha256 is ``sha``."
    return f"{MARK_START}{sha[:12]}]"


def decoded_value(value: str | None) -> dict[str, Any]:
    "A ``redact`` event's new value, decoded (empty for a value of another shape)."
    try:
        decoded = json.loads(value) if value else None
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def replacements_of(value: str | None) -> dict[str, str]:
    "The ``{digest: replacement}`` map of a ``redact`` event's new value (empty for a value of another shape)."
    found = decoded_value(value).get("replacements")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


@dataclass(frozen=True)
class Redaction:
    """
    One ``redact`` event, as resolution reads it.

    :param order: its place in sync's order: ``(ts, machine, clock)``
    :param replacements: ``{sha256 of a string that held the text: the string with it marked}``
    :param text: the redacted text's sha256 and length, to find it in another redaction's string
    """

    order: tuple[str, str, int]
    replacements: dict[str, str] = field(hash=False)
    text: tuple[str, int] | None = None

    @classmethod
    def of(cls, ts: str, machine: str, clock: int, value: str | None) -> "Redaction":
        named = decoded_value(value).get("text")
        text = None
        if isinstance(named, dict) and isinstance(named.get("sha256"), str) and isinstance(named.get("length"), int):
            text = (named["sha256"], named["length"])
        return cls((ts, machine, clock), replacements_of(value), text)

    def remove_from(self, string: str) -> str:
        "``string`` with this redaction's text marked wherever it stands (found by its sha256 and length)."
        if self.text is None:
            return string
        sha, length = self.text
        start = 0
        while start + length <= len(string):
            if text_digest(string[start:start + length]) == sha:
                marked = mark_of(sha)
                string = string[:start] + marked + string[start + length:]
                start += len(marked)
            else:
                start += 1
        return string


class Resolver:
    """
    What the redactions of a project make of a string, the same on every peer holding them,
    whatever the string's copy there went through already (see the module).

    A string's lineage is its digest and those of the strings it replaced. Each
    redaction, in order, whose map names one of them applies: its replacement
    where it names the string itself, else (it replaced an ancestor another way)
    its text removed from the string, which then descends from that replacement
    too; the passes repeat until nothing changes.
    """

    def __init__(self, redactions: Iterable[Redaction]):
        self.redactions = sorted(redactions, key=lambda redaction: redaction.order)
        self.parents: dict[str, set[str]] = {}
        for redaction in self.redactions:
            for digest, replacement in redaction.replacements.items():
                self.parents.setdefault(text_digest(replacement), set()).add(digest)
        self.touched = {digest for redaction in self.redactions for digest in redaction.replacements} | set(self.parents)

    def __bool__(self) -> bool:
        return bool(self.touched)

    def lineage(self, digest: str) -> set[str]:
        found, waiting = {digest}, [digest]
        while waiting:
            for parent in self.parents.get(waiting.pop(), ()):
                if parent not in found:
                    found.add(parent)
                    waiting.append(parent)
        return found

    def follow(self, string: str) -> str | None:
        "What ``string`` becomes, or None if it stays."
        digest = text_digest(string)
        if digest not in self.touched:
            return None
        result, seen = string, self.lineage(digest)
        for _ in range(MAX_STEPS):
            before = result
            for redaction in self.redactions:
                hits = seen.intersection(redaction.replacements)
                if not hits:
                    continue
                now = text_digest(result)
                changed = redaction.replacements[now] if now in redaction.replacements else redaction.remove_from(result)
                # the string now descends from what this redaction made of its ancestors too
                seen |= {text_digest(redaction.replacements[digest]) for digest in hits}
                if changed != result:
                    result = changed
                    seen |= self.lineage(text_digest(result))
            if result == before:
                break
        return None if result == string else result

    def produced(self) -> set[str]:
        "The strings these redactions put in place: each replacement, and what it finally becomes."
        found = {replacement for redaction in self.redactions for replacement in redaction.replacements.values()}
        return found | {self.follow(replacement) or replacement for replacement in found}


def held_redactions(conn: sqlite3.Connection) -> dict[str, list[Redaction]]:
    "Every redaction this file holds (its own and the whole ones other machines sent), by project."
    found: dict[str, list[Redaction]] = {}
    for table, extra in (("events", ""), ("memory_sync_events", " AND opaque = 0")):
        # the literal kind, so the partial indexes of redactions (migration m014) answer
        for project, ts, machine, clock, value in conn.execute(
            f"SELECT project, ts, machine, clock, new FROM {table} WHERE kind = 'redact' AND new IS NOT NULL{extra}"
        ):
            found.setdefault(project, []).append(Redaction.of(ts, machine, clock, value))
    return found


def resolvers(by_project: Mapping[str, Iterable[Redaction]]) -> dict[str, Resolver]:
    "Each project's resolver."
    return {project: Resolver(redactions) for project, redactions in by_project.items()}


def any_held(conn: sqlite3.Connection) -> bool:
    "Whether this file holds a redaction (two lookups in the partial indexes of m014)."
    return conn.execute("SELECT 1 FROM events WHERE kind = 'redact' LIMIT 1").fetchone() is not None or \
        conn.execute("SELECT 1 FROM memory_sync_events WHERE kind = 'redact' LIMIT 1").fetchone() is not None


def accepted_strings(by_project: Mapping[str, Resolver]) -> frozenset[str]:
    "The strings each project's redactions put in place: a value holding one may differ from its digest."
    return frozenset(text for resolver in by_project.values() for text in resolver.produced())


def accepted(conn: sqlite3.Connection) -> frozenset[str]:
    "The strings the redactions this file holds put in place: a value holding one may differ from its digest."
    return accepted_strings(resolvers(held_redactions(conn))) if any_held(conn) else frozenset()


def strings(value: Any) -> Iterable[str]:
    """
    Every string in a decoded JSON value, never its keys: a value's field names are the
    ledger's structure (an event's shape, a redaction's digests), which a redaction leaves.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for item in value.values():
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
    "``value`` with each of its :func:`strings` that ``change`` maps to another replaced (keys stay), and whether any was."
    if isinstance(value, str):
        new = change(value)
        return (value, False) if new is None else (new, True)
    if isinstance(value, list):
        items = [rewritten(item, change) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    if isinstance(value, dict):
        entries = {key: rewritten(item, change) for key, item in value.items()}
        return {key: item for key, (item, _) in entries.items()}, any(changed for _, changed in entries.values())
    return value, False


def redacted_text(text: str | None, resolver: "Resolver | None", canonical: Callable[[Any], str], kind: str | None = None) -> str | None:
    """
    The stored value ``text`` with every string the resolver changes replaced, or None if it holds none.

    A redaction's own value (``kind`` ``redact``) keeps its lineage: each replacement
    that changed is also keyed by its own digest, so a copy still holding it (a bundle
    made before) is found and brought to the same end.
    """
    if text is None or not resolver:
        return None
    value, changed = rewritten(json.loads(text), resolver.follow)
    if kind == KIND and changed and isinstance(value, dict) and isinstance(value.get("replacements"), dict):
        before = replacements_of(text)
        for digest, replacement in before.items():
            now = value["replacements"].get(digest)
            if now is not None and now != replacement:
                value["replacements"].setdefault(text_digest(replacement), now)
    return canonical(value) if changed else None
