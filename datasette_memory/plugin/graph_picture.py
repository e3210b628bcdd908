"""A picture of an entity's neighbourhood: a deterministic layout in columns that the entity page draws as inline SVG.

The entity is a labelled box in the middle. The names one relation away stand
in a column on either side of it (on the right those it points to, on the left
those pointing to it), and the names two relations away in a column beyond,
each beside the names it connects to. Every label is level and whole: a long
name wraps onto lines at the marks inside it (``-``, ``_``, ``.``, ``/``,
spaces, camelCase), at most :data:`NAME_LINES` of them; one longer still ends
with ``…`` and, like every name and relation, shows whole where the pointer
rests (each has its title). A name's label stands on its outer side; the labels
of the relations arriving at a name stand on its inner side, in that name's own
row, one under another, so none covers another and none is left out however
many relations meet there. Rows grow with their labels and columns with their
widest label, so forty names stay readable; a picture wider than the screen
scrolls in its box. The same neighbourhood always gives the same picture: names
are sorted and every number is rounded. This module only computes shapes; the
template writes the SVG, so every name is escaped there like any other text,
and shown through the ``stored`` filter: a label is as wide as it will be
drawn, each invisible character as its mark.
"""

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .stored_text import stored

NODE_RADIUS = {1: 7.0, 2: 5.5}
NODE_FONT, EDGE_FONT, CENTRE_FONT = 12.0, 10.0, 13.0  # px, as the template's style sets them
CHAR_EM = 0.6  # a generous average character width of sans-serif, in em
CENTRE_CHAR_WIDTH = 8.0  # of the centre's bold 13px text
LINE = 1.25  # line height, in em
NAME_CHARS, NAME_LINES = 24, 3  # a name's label wraps at this many characters, onto at most this many lines
EDGE_CHARS, EDGE_LINES = 30, 2
CENTRE_CHARS, CENTRE_LINES = 28, 3
CENTRE_PADDING = 10.0
ROW_GAP = 8.0  # between the rows of a column
STACK_GAP = 3.0  # between the labels of the relations arriving at one name
SIBLING_GAP = 5.0  # between the ends of relations joining the same two names
LABEL_GAP = 6.0  # between a node and its labels
LEAD = 30.0  # the least length of a relation's line before its label
LOOP_REACH = 26.0  # how far a relation from a name to itself rises above it
MARGIN = 12.0
BREAKS = re.compile(r"[^\s\-_./:]+[\s\-_./:]*|[\s\-_./:]+")
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
Point = tuple[float, float]


@dataclass(frozen=True)
class Label:
    """Lines of text, the first line's baseline at ``y``, aligned on ``x`` as ``anchor`` says."""

    lines: tuple[str, ...]
    x: float
    y: float
    anchor: str = "start"
    size: float = NODE_FONT

    @property
    def rows(self) -> list[tuple[str, float]]:
        "Each line with its baseline."
        return [(line, round(self.y + i * self.size * LINE, 1)) for i, line in enumerate(self.lines)]

    @property
    def height(self) -> float:
        return len(self.lines) * self.size * LINE

    def box(self) -> tuple[float, float, float, float]:
        "``(left, top, right, bottom)`` of the text, its widths estimated."
        width = max((shown_length(line) for line in self.lines), default=0) * self.size * CHAR_EM
        left = self.x - {"start": 0.0, "middle": width / 2, "end": width}[self.anchor]
        top = self.y - 0.85 * self.size
        return left, top, left + width, top + self.height


@dataclass(frozen=True)
class NodeShape:
    """
    A name in the neighbourhood at ``(x, y)``: a circle of radius ``r``, or for
    the centre a box (``left``, ``top``, ``width``, ``height``) holding its label.
    ``stored`` says whether an entity has that name.
    """

    name: str
    hops: int
    stored: bool
    entity_type: str | None
    x: float
    y: float
    r: float
    left: float
    top: float
    width: float
    height: float
    label: Label


@dataclass(frozen=True)
class EdgeShape:
    """A relation: the path from its source to its target, and its type as a label beside the name at its outer end."""

    source: str
    target: str
    relation_type: str
    path: str
    label: Label


@dataclass(frozen=True)
class Picture:
    """The whole picture: its size, the shapes to draw, and how many names did not fit."""

    centre: str
    width: float
    height: float
    nodes: tuple[NodeShape, ...]
    edges: tuple[EdgeShape, ...]
    total: int
    left_out: int


def shown_length(text: str) -> int:
    "How many characters ``text`` takes once drawn, each invisible character as its mark (``⟨U+202E⟩``)."
    return len(stored(text, "plain"))


def wrapped(text: str, width: int, most: int) -> tuple[str, ...]:
    """
    ``text`` on lines of at most ``width`` characters (as drawn), broken after
    the marks inside names and between camelCase words where it can, anywhere
    where it must; past ``most`` lines, the last ends with ``…``.
    """
    text = " ".join(text.split())
    lines: list[str] = []
    line = ""
    for piece in (part for chunk in BREAKS.findall(text) for part in CAMEL.split(chunk)):
        if line and shown_length(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
        while shown_length(line) > width:
            cut = longest_within(line, width)
            lines.append(line[:cut])
            line = line[cut:]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    if len(lines) > most:
        last = lines[most - 1]
        lines = lines[: most - 1] + [last[: longest_within(last, width - 1)].rstrip() + "…"]
    return tuple(lines)


def longest_within(text: str, width: int) -> int:
    "How many characters of ``text`` fit in ``width`` (as drawn); at least one."
    count = 1
    while count < len(text) and shown_length(text[: count + 1]) <= width:
        count += 1
    return count


def text_width(lines: tuple[str, ...], size: float) -> float:
    return max((shown_length(line) for line in lines), default=0) * size * CHAR_EM


# The layout


def layout(neighbourhood: dict[str, Any]) -> Picture:
    """
    The picture of a neighbourhood as :func:`datasette_memory.graph.entity_view.neighbourhood` returns it.

    :param neighbourhood: ``{centre, nodes, edges, total, left_out}``
    """
    centre = neighbourhood["centre"]
    nodes = {node["name"]: node for node in neighbourhood["nodes"]}
    edges = sorted(neighbourhood["edges"], key=lambda e: (e["from"], e["to"], e["relationType"]))
    sides = choose_sides(centre, nodes, edges)
    names = {name: wrapped(name, CENTRE_CHARS if name == centre else NAME_CHARS, CENTRE_LINES if name == centre else NAME_LINES)
             for name in nodes}
    relations = [wrapped(edge["relationType"], EDGE_CHARS, EDGE_LINES) for edge in edges]
    owners = [owner(edge, nodes) for edge in edges]
    arriving: dict[str, list[int]] = defaultdict(list)
    for index, name in enumerate(owners):
        arriving[name].append(index)
    heights = {name: row_height(names[name], [relations[i] for i in arriving[name]], nodes[name]["hops"]) for name in nodes if name != centre}
    places, half = place(centre, nodes, edges, sides, names, relations, arriving, heights)
    for name in arriving:  # the labels at a name, in the order their lines arrive
        arriving[name].sort(key=lambda i: (places[other_end(edges[i], name)][1], edges[i]["relationType"]))
    labels = {name: name_label(name, names[name], places[name], sides[name], nodes[name]) for name in nodes}
    edge_labels = {}
    for name, indexes in arriving.items():
        edge_labels.update(arrival_labels(name, indexes, relations, places[name], sides[name], nodes[name], edges))
    apart = sibling_offsets(edges)
    # a relation leaving a name outwards starts past its label, so it never runs through it
    outer = {name: (half[name][0] + LABEL_GAP + text_width(names[name], NODE_FONT) + 3, half[name][1]) for name in nodes if name != centre}
    outer[centre] = half[centre]
    shapes = [edge_shape(edge, places, half, outer, sides, centre, edge_labels[i], apart[i]) for i, edge in enumerate(edges)]
    left, top, right, bottom = bounds(places, half, list(labels.values()) + list(edge_labels.values()), shapes)
    dx, dy = MARGIN - left, MARGIN - top
    node_shapes = tuple(
        node_shape(nodes[name], moved(places[name], dx, dy), half[name], shifted(labels[name], dx, dy))
        for name in sorted(nodes, key=lambda n: (-nodes[n]["hops"], n))
    )
    edge_shapes = tuple(
        EdgeShape(s.source, s.target, s.relation_type, shifted_path(s.path, dx, dy), shifted(s.label, dx, dy)) for s in shapes
    )
    return Picture(
        centre, round(right - left + 2 * MARGIN, 1), round(bottom - top + 2 * MARGIN, 1),
        node_shapes, edge_shapes, neighbourhood["total"], neighbourhood["left_out"],
    )


def choose_sides(centre: str, nodes: dict[str, Any], edges: list[dict[str, str]]) -> dict[str, int]:
    """
    Which side of the centre each name stands: 1 (right) for a name the centre
    points to, -1 (left) for one pointing to it (a name both ways goes right);
    a name two relations away goes where most of the names it connects to are.
    """
    sides = {centre: 0}
    votes: dict[str, int] = defaultdict(int)
    for edge in edges:
        if edge["from"] == centre and edge["to"] != centre:
            votes[edge["to"]] += 1
        elif edge["to"] == centre and edge["from"] != centre:
            votes[edge["from"]] -= 1
    for name, node in nodes.items():
        if node["hops"] == 1:
            sides[name] = 1 if votes[name] >= 0 else -1
    for name, node in nodes.items():
        if node["hops"] == 2:
            near = [sides[other_end(edge, name)] for edge in edges
                    if name in (edge["from"], edge["to"]) and nodes.get(other_end(edge, name), {}).get("hops") == 1]
            sides[name] = 1 if sum(near) >= 0 else -1
    return sides


def other_end(edge: dict[str, str], name: str) -> str:
    return edge["to"] if edge["from"] == name else edge["from"]


def owner(edge: dict[str, str], nodes: dict[str, Any]) -> str:
    "The name a relation's label stands beside: its end farther from the centre (the target, when both are as far)."
    source, target = nodes[edge["from"]], nodes[edge["to"]]
    return edge["from"] if source["hops"] > target["hops"] else edge["to"]


def row_height(name: tuple[str, ...], arriving: list[tuple[str, ...]], hops: int) -> float:
    "A name's row: as tall as its label, or the labels of the relations arriving at it, whichever is taller."
    stack = sum(len(lines) for lines in arriving) * EDGE_FONT * LINE + max(len(arriving) - 1, 0) * STACK_GAP
    tallest = max(len(name) * NODE_FONT * LINE, stack, 2 * NODE_RADIUS[hops])
    return tallest + ROW_GAP


def place(
    centre: str, nodes: dict[str, Any], edges: list[dict[str, str]], sides: dict[str, int], names: dict[str, tuple[str, ...]],
    relations: list[tuple[str, ...]], arriving: dict[str, list[int]], heights: dict[str, float],
) -> tuple[dict[str, Point], dict[str, Point]]:
    "Where each name stands, and half the width and height of what is drawn for it (circle or box)."
    links: dict[str, set[str]] = defaultdict(set)
    for edge in edges:
        links[edge["from"]].add(edge["to"])
        links[edge["to"]].add(edge["from"])
    half = {name: (NODE_RADIUS[node["hops"]],) * 2 if name != centre else centre_half(names[name]) for name, node in nodes.items()}
    places: dict[str, Point] = {centre: (0.0, 0.0)}
    for side in (1, -1):
        edge = half[centre][0]  # how far out the last column's widest label reaches
        for hops in (1, 2):
            column = sorted(name for name, node in nodes.items() if node["hops"] == hops and sides[name] == side)
            if not column:
                continue
            lead = max((text_width(relations[i], EDGE_FONT) for name in column for i in arriving[name]), default=0.0)
            x = edge + LEAD + lead + LABEL_GAP + NODE_RADIUS[hops]
            wanted = {name: wanted_y(name, links, places) for name in column}
            for name, y in stacked(sorted(column, key=lambda n: (wanted[n], n)), wanted, heights).items():
                places[name] = (side * x, y)
            edge = x + NODE_RADIUS[hops] + LABEL_GAP + max(text_width(names[name], NODE_FONT) for name in column)
    return places, half


def wanted_y(name: str, links: dict[str, set[str]], places: dict[str, Point]) -> float:
    "Where a name would stand, up and down: among the names placed already that it connects to (the centre, for one away)."
    near = [places[other][1] for other in sorted(links[name]) if other in places]
    return sum(near) / len(near) if near else 0.0


def stacked(column: list[str], wanted: dict[str, float], heights: dict[str, float]) -> dict[str, float]:
    "Rows for ``column`` (in order) as near their ``wanted`` heights as keeping each row clear of the next allows."
    placed: list[float] = []
    for i, name in enumerate(column):
        least = placed[-1] + (heights[column[i - 1]] + heights[name]) / 2 if placed else -float("inf")
        placed.append(max(wanted[name], least))
    drift = sum(p - wanted[n] for p, n in zip(placed, column)) / len(column)
    return {name: round(p - drift, 1) for name, p in zip(column, placed)}


def centre_half(lines: tuple[str, ...]) -> Point:
    "Half the width and height of the centre's box."
    width = max(shown_length(line) for line in lines) * CENTRE_CHAR_WIDTH / 2 + CENTRE_PADDING
    return round(width, 1), round((len(lines) * CENTRE_FONT * LINE + CENTRE_PADDING) / 2, 1)


# Labels


def name_label(name: str, lines: tuple[str, ...], place: Point, side: int, node: dict[str, Any]) -> Label:
    "A name's label: in the centre's box, else on the outer side of its circle, level with it."
    x, y = place
    if side == 0:
        return Label(lines, x, round(y - (len(lines) - 1) * CENTRE_FONT * LINE / 2 + 0.35 * CENTRE_FONT, 1), "middle", CENTRE_FONT)
    top = y - (len(lines) - 1) * NODE_FONT * LINE / 2 + 0.35 * NODE_FONT
    return Label(lines, round(x + side * (NODE_RADIUS[node["hops"]] + LABEL_GAP), 1), round(top, 1), "start" if side > 0 else "end")


def arrival_labels(
    name: str, indexes: list[int], relations: list[tuple[str, ...]], place: Point, side: int, node: dict[str, Any],
    edges: list[dict[str, str]],
) -> dict[int, Label]:
    """
    The labels of the relations arriving at ``name``, one under another on its
    inner side (above the centre's box, for the centre's own loops).
    """
    x, y = place
    if side == 0:
        return {i: Label(relations[i], x, round(y - 60 - 14 * n, 1), "middle", EDGE_FONT) for n, i in enumerate(indexes)}
    total = sum(len(relations[i]) for i in indexes) * EDGE_FONT * LINE + (len(indexes) - 1) * STACK_GAP
    top = y - total / 2 + 0.85 * EDGE_FONT
    labels = {}
    for i in indexes:
        loop = edges[i]["from"] == edges[i]["to"]
        lines = tuple(("↻ " if loop and n == 0 else "") + line for n, line in enumerate(relations[i]))
        labels[i] = Label(lines, round(x - side * (NODE_RADIUS[node["hops"]] + LABEL_GAP), 1), round(top, 1),
                          "end" if side > 0 else "start", EDGE_FONT)
        top += len(lines) * EDGE_FONT * LINE + STACK_GAP
    return labels


def shifted(label: Label, dx: float, dy: float) -> Label:
    return Label(label.lines, round(label.x + dx, 1), round(label.y + dy, 1), label.anchor, label.size)


def moved(point: Point, dx: float, dy: float) -> Point:
    return round(point[0] + dx, 1), round(point[1] + dy, 1)


def node_shape(node: dict[str, Any], place: Point, half: Point, label: Label) -> NodeShape:
    x, y = place
    r = 0.0 if node["hops"] == 0 else half[0]
    return NodeShape(
        node["name"], node["hops"], node["stored"], node.get("entityType"), x, y, r,
        round(x - half[0], 1), round(y - half[1], 1), round(2 * half[0], 1), round(2 * half[1], 1), label,
    )


def bounds(places: dict[str, Point], half: dict[str, Point], labels: list[Label], edges: list[EdgeShape]) -> tuple[float, float, float, float]:
    "``(left, top, right, bottom)`` of everything drawn."
    boxes = [label.box() for label in labels]
    boxes += [(x - half[n][0] - 2, y - half[n][1] - 2, x + half[n][0] + 2, y + half[n][1] + 2) for n, (x, y) in places.items()]
    points = [(float(a), float(b)) for edge in edges for a, b in zip(*[iter(numbers(edge.path))] * 2)]
    boxes += [(x, y, x, y) for x, y in points]
    return min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)


# Relations


def sibling_offsets(edges: list[dict[str, str]]) -> list[float]:
    "How far up or down each relation's ends move, so relations joining the same two names run apart."
    pairs: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, edge in enumerate(edges):
        pairs[(min(edge["from"], edge["to"]), max(edge["from"], edge["to"]))].append(index)
    offsets = [0.0] * len(edges)
    for indexes in pairs.values():
        for n, index in enumerate(indexes):
            offsets[index] = round((n - (len(indexes) - 1) / 2) * SIBLING_GAP, 1)
    return offsets


def edge_shape(
    edge: dict[str, str], places: dict[str, Point], half: dict[str, Point], outer: dict[str, Point], sides: dict[str, int],
    centre: str, label: Label, offset: float,
) -> EdgeShape:
    """
    A relation as a path with level ends: across to the next column (from past a
    name's label, when it leaves outwards), round the centre to the other side, or a loop.
    """
    source, target = edge["from"], edge["to"]
    ends = [nudged(places[name], half[name], offset) for name in (source, target)]
    (sx, _), (tx, _) = places[source], places[target]
    reach = [outer[source] if abs(tx) > abs(sx) else half[source], outer[target] if abs(sx) > abs(tx) else half[target]]
    if source == target:
        path = loop(places[source], half[source])
    elif abs(places[source][0] - places[target][0]) < 1:
        path = within_column(ends[0], ends[1], half[source], half[target], -(sides[source] or 1))
    elif sides[source] * sides[target] < 0:
        path = round_the_centre(ends[0], ends[1], half[source], half[target], half[centre])
    else:
        path = across(ends[0], ends[1], reach[0], reach[1], source == centre, target == centre)
    return EdgeShape(source, target, edge["relationType"], path, label)


def nudged(place: Point, half: Point, offset: float) -> Point:
    "``place`` moved ``offset`` up or down, staying within the name's circle or box."
    most = max(half[1] - 2, 0.0)
    return place[0], round(place[1] + max(-most, min(most, offset)), 1)


def rim(place: Point, half: Point, towards: float, aim_y: float, boxed: bool, gap: float) -> Point:
    "Where a line leaves a name's circle (or the centre's box, anywhere along its side) level, towards ``towards``."
    x, y = place
    direction = 1 if towards > x else -1
    if boxed:
        return round(x + direction * (half[0] + gap), 1), round(min(max(aim_y, y - half[1] + 4), y + half[1] - 4), 1)
    return round(x + direction * (half[0] + gap), 1), round(y, 1)


def across(source: Point, target: Point, source_half: Point, target_half: Point, from_centre: bool, to_centre: bool) -> str:
    "A curve from one column to another, leaving and arriving level."
    (sx, sy) = rim(source, source_half, target[0], target[1], from_centre, 1.0)
    (ex, ey) = rim(target, target_half, source[0], source[1], to_centre, 2.0)
    middle = round((sx + ex) / 2, 1)
    return f"M {sx} {sy} C {middle} {sy} {middle} {ey} {ex} {ey}"


def within_column(source: Point, target: Point, source_half: Point, target_half: Point, inwards: int) -> str:
    "A curve between two names of one column, bowing out on the centre's side."
    reach = LEAD + 10
    sx, sy = round(source[0] + inwards * (source_half[0] + 1), 1), source[1]
    ex, ey = round(target[0] + inwards * (target_half[0] + 2), 1), target[1]
    return f"M {sx} {sy} C {round(sx + inwards * reach, 1)} {sy} {round(ex + inwards * reach, 1)} {ey} {ex} {ey}"


def round_the_centre(source: Point, target: Point, source_half: Point, target_half: Point, centre_half: Point) -> str:
    "A curve between names on either side of the centre, passing above its box."
    sx = round(source[0] - (1 if source[0] > 0 else -1) * (source_half[0] + 1), 1)
    ex = round(target[0] - (1 if target[0] > 0 else -1) * (target_half[0] + 2), 1)
    over = round(min(source[1], target[1], -centre_half[1]) - 50, 1)
    return f"M {sx} {source[1]} C {sx} {over} {ex} {over} {ex} {target[1]}"


def loop(place: Point, half: Point) -> str:
    "A relation from a name to itself: a loop above it."
    x, y = place
    w, h = min(half[0], 8.0), half[1]
    return (f"M {round(x - w * 0.6, 1)} {round(y - h, 1)} C {round(x - LOOP_REACH, 1)} {round(y - h - LOOP_REACH, 1)} "
            f"{round(x + LOOP_REACH, 1)} {round(y - h - LOOP_REACH, 1)} {round(x + w * 0.6, 1)} {round(y - h - 2, 1)}")


def numbers(path: str) -> list[float]:
    return [float(part) for part in path.split() if part not in ("M", "C", "L", "Q")]


def shifted_path(path: str, dx: float, dy: float) -> str:
    "``path`` (commands and x y pairs) moved by ``(dx, dy)``."
    parts, out, axis = path.split(), [], 0
    for part in parts:
        if part.isalpha():
            out.append(part)
            continue
        out.append(str(round(float(part) + (dx if axis == 0 else dy), 1)))
        axis = 1 - axis
    return " ".join(out)
