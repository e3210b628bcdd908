"""The official memory server's JSONL file format: import and export."""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..core.errors import MemoryStoreError
from ..core.secrets import refuse_secrets
from .parsing import parse_entities, parse_relations

BATCH_LINES = 500


@dataclass
class ImportReport:
    """What an import did: counts, and each bad line by number with the reason."""

    entities: int = 0
    observations: int = 0
    relations: int = 0
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> str:
        "One line for people."
        text = f"imported {self.entities} entities, {self.observations} observations, {self.relations} relations"
        if self.bad_lines:
            text += f"; skipped {len(self.bad_lines)} bad line{'s' if len(self.bad_lines) != 1 else ''}"
        return text


class Importer(Protocol):
    """What an import writes through: :class:`~datasette_memory.Memory` is one."""

    allow_secrets: bool

    def import_graph(self, entities: list[Any], relations: list[Any]) -> dict[str, int]: ...


def export_lines(content: dict[str, list[Any]]) -> Iterator[str]:
    """
    A project's graph as the official server's JSONL lines: entities, then relations.

    :param content: ``{entities, relations}``, as :meth:`~datasette_memory.Memory.read_graph` returns it
    """
    for entity in content["entities"]:
        yield json.dumps({"type": "entity", **entity}, ensure_ascii=False, separators=(",", ":"))
    for relation in content["relations"]:
        yield json.dumps({"type": "relation", **relation}, ensure_ascii=False, separators=(",", ":"))


def parse_line(text: str, allow_secrets: bool = False) -> tuple[str, dict[str, Any]] | None:
    """
    One JSONL line as ``("entity" | "relation", item)``, or None for a blank line.

    :param text: the line
    :param allow_secrets: accept text that looks like a credential
    :raises ValueError: naming what is wrong with the line
    """
    if not text.strip():
        return None
    try:
        item = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at column {e.colno})")
    if not isinstance(item, dict) or item.get("type") not in ("entity", "relation"):
        raise ValueError('expected an object with "type": "entity" or "relation"')
    kind = item.pop("type")
    try:
        (parse_entities if kind == "entity" else parse_relations)([item])
        if not allow_secrets:
            refuse_secrets(item, kind)
    except MemoryStoreError as e:
        raise ValueError(str(e).replace({"entity": "entities[0]", "relation": "relations[0]"}[kind], kind))
    return kind, item


def import_lines(memory: Importer, lines: Iterable[str], progress: Callable[[int], Any] | None = None) -> ImportReport:
    """
    Import JSONL lines into ``memory``'s project, one transaction per batch.
    Existing entities gain the observations they lack and nothing is duplicated,
    so importing a file twice changes nothing. Bad lines are reported, not imported.

    :param memory: a :class:`~datasette_memory.Memory`, or anything with its ``import_graph``
    :param lines: an iterable of text lines
    :param progress: called with the number of lines handled after each batch
    """
    report = ImportReport()
    batch: list[tuple[int, str]] = []
    for number, text in enumerate(lines, start=1):
        batch.append((number, text))
        if len(batch) == BATCH_LINES:
            import_batch(memory, batch, report, progress)
            batch = []
    import_batch(memory, batch, report, progress)
    return report


def import_batch(
    memory: Importer, batch: list[tuple[int, str]], report: ImportReport, progress: Callable[[int], Any] | None = None
) -> None:
    items: dict[str, list[Any]] = {"entity": [], "relation": []}
    for number, text in batch:
        try:
            parsed = parse_line(text, memory.allow_secrets)
        except ValueError as e:
            report.bad_lines.append((number, str(e)))
            continue
        if parsed:
            items[parsed[0]].append(parsed[1])
    if items["entity"] or items["relation"]:
        counts = memory.import_graph(items["entity"], items["relation"])
        report.entities += counts["entities"]
        report.observations += counts["observations"]
        report.relations += counts["relations"]
    if progress:
        progress(len(batch))
