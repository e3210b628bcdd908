"""A graph result's text as the official server writes it, built piece by piece from rows.

The official text is ``JSON.stringify(graph, null, 2)``. ``json.dumps(graph,
indent=2)`` writes the same bytes, but needs the whole graph as dicts and runs
Python's pure-Python encoder (the C one cannot indent): 0.8 s for 100,000
entities. Here each entity and relation is written from its row with string
templates around the C string encoder (the same escaping), a batch of items to
a piece, so a door can send the text without building the graph as objects.
The text is JSON too: it is also the structured content's JSON. A test holds
it to ``json.dumps(graph, indent=2, ensure_ascii=False)`` byte for byte.
"""

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice, starmap
from json.encoder import encode_basestring as quoted  # the C encoder, non-ASCII kept
from typing import Any

# items written to one piece
BATCH = 500


@dataclass
class RenderedGraph:
    """
    A graph's official text, as pieces to join or send in order.

    :param text: the pieces of ``JSON.stringify(graph, null, 2)``
    :param entities: how many entities it holds
    :param relations: how many relations it holds
    """

    text: list[str] = field(default_factory=list)
    entities: int = 0
    relations: int = 0


def render(entities: Iterable[Sequence[Any]], relations: Iterable[Sequence[Any]]) -> RenderedGraph:
    """
    The official text of a graph given as rows.

    :param entities: ``(id, name, entity_type, observations)`` rows, in order (the id is not written)
    :param relations: ``(id, from, to, relation_type)`` rows, in order (the id is not written)
    """
    graph = RenderedGraph(text=['{\n  "entities": ['])
    graph.entities = add_items(graph.text, entities, entity_text)
    graph.text.append('\n  ],\n  "relations": [' if graph.entities else '],\n  "relations": [')
    graph.relations = add_items(graph.text, relations, relation_text)
    graph.text.append("\n  ]\n}" if graph.relations else "]\n}")
    return graph


def render_dict(graph: dict[str, list[Any]]) -> RenderedGraph:
    "The official text of a graph given as ``{entities, relations}``."
    return render(
        ((None, e["name"], e["entityType"], e["observations"]) for e in graph["entities"]),
        ((None, r["from"], r["to"], r["relationType"]) for r in graph["relations"]),
    )


def add_items(text: list[str], rows: Iterable[Sequence[Any]], item_text: Callable[..., str]) -> int:
    "Append ``rows`` to ``text``, a batch to a piece, items separated by commas; how many there were."
    count = 0
    rows = iter(rows)
    while batch := list(islice(rows, BATCH)):
        text.append(("," if count else "") + ",".join(starmap(item_text, batch)))
        count += len(batch)
    return count


def entity_text(_: Any, name: str, entity_type: str, observations: list[str]) -> str:
    "One entity in the official text, indented as an item of ``entities``."
    listed = "[\n        " + ",\n        ".join(map(quoted, observations)) + "\n      ]" if observations else "[]"
    return f'\n    {{\n      "name": {quoted(name)},\n      "entityType": {quoted(entity_type)},\n      "observations": {listed}\n    }}'


def relation_text(_: Any, source: str, target: str, relation_type: str) -> str:
    "One relation in the official text, indented as an item of ``relations``."
    return f'\n    {{\n      "from": {quoted(source)},\n      "to": {quoted(target)},\n      "relationType": {quoted(relation_type)}\n    }}'


def text_of(graph: RenderedGraph) -> str:
    "The official text, whole."
    return "".join(graph.text)


def structured_of(graph: RenderedGraph) -> Any:
    "The structured content, as objects: the text is its JSON."
    return json.loads(text_of(graph))
