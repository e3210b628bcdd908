"""A picture of an entity's neighbourhood: a deterministic radial layout that the entity page draws as inline SVG.

The entity is a labelled box at the centre; the names one relation away sit
on an inner ring and those two away on an outer ring, each near the inner
names it connects to. Relations run along the rays from the centre, so labels
sit across them: beside each node on a sparse ring, along the ray (outwards)
on a crowded one. Rings grow with their nodes so labels do not collide.
Relations joining the same two names curve apart, each labelled along its own
line, with an arrowhead at the end it points to. The same neighbourhood
always gives the same picture: names are sorted and every number is rounded.
This module only computes shapes; the template writes the SVG, so every name
is escaped there like any other text, and shown through the ``stored`` filter:
a label is as wide as it will be drawn, each invisible character as its mark.
"""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from .stored_text import stored

NODE_RADIUS = {1: 8.0, 2: 6.5}
CENTRE_HEIGHT, CENTRE_PADDING, CENTRE_CHAR_WIDTH = 24.0, 10.0, 8.0  # the centre's box, around 13px bold text
LABEL_CHARS, EDGE_LABEL_CHARS = 20, 18
NODE_FONT, EDGE_FONT = 12.0, 10.0  # px, as the template's style sets them
CHAR_EM = 0.6  # a generous average character width of sans-serif, in em
LINE_HEIGHT = 22.0  # between neighbours' labels along rays
FEW = 6  # a ring of at most this many nodes gets level labels
INNER_RADIUS = 150.0
RING_GAP = 50.0  # between the end of the inner ring's labels and the outer ring
PARALLEL_GAP = 26.0  # between curves of relations joining the same two names
MARGIN = 12.0
Point = tuple[float, float]


@dataclass(frozen=True)
class Label:
    """Text at a point: ``transform`` places it, ``anchor`` and ``dy`` align it."""

    text: str
    x: float
    y: float
    anchor: str = "middle"
    rotate: float = 0.0
    dy: float = 0.35  # in em: 0.35 centres the text on its point, 0.9 hangs it below, -0.35 sets it above
    size: float = NODE_FONT

    @property
    def transform(self) -> str:
        return f"translate({self.x} {self.y})" + (f" rotate({self.rotate})" if self.rotate else "")

    def corners(self) -> list[Point]:
        "The corners of the box the text covers, in order round it (widths are estimated)."
        width = shown_length(self.text) * self.size * CHAR_EM
        start = {"start": 0.0, "middle": -width / 2, "end": -width}[self.anchor]
        baseline = self.dy * self.size
        turn = math.radians(self.rotate)
        box = [(start, baseline - 0.8 * self.size), (start + width, baseline - 0.8 * self.size),
               (start + width, baseline + 0.25 * self.size), (start, baseline + 0.25 * self.size)]
        return [(self.x + dx * math.cos(turn) - dy * math.sin(turn), self.y + dx * math.sin(turn) + dy * math.cos(turn)) for dx, dy in box]


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
    """A relation: an SVG path from its source to its target, and its type as a label (None where it would cover another)."""

    source: str
    target: str
    relation_type: str
    path: str
    label: Label | None


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


def truncated(text: str, limit: int) -> str:
    "``text`` on one line, cut to ``limit`` characters with an ellipsis."
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def layout(neighbourhood: dict[str, Any]) -> Picture:
    """
    The picture of a neighbourhood as :func:`datasette_memory.graph.entity_view.neighbourhood` returns it.

    :param neighbourhood: ``{centre, nodes, edges, total, left_out}``
    """
    centre = neighbourhood["centre"]
    nodes = {node["name"]: node for node in neighbourhood["nodes"]}
    edges = sorted(neighbourhood["edges"], key=lambda e: (e["from"], e["to"], e["relationType"]))
    rings = [sorted(name for name, node in nodes.items() if node["hops"] == hops) for hops in (1, 2)]
    angles, radii = ring_angles(rings, edges, centre_half(centre)[0])
    places = {name: polar(radii[nodes[name]["hops"]], angles[name]) for name in rings[0] + rings[1]}
    places[centre] = (0.0, 0.0)
    labels = {name: node_label(name, nodes[name]["hops"], places[name], angles, rings) for name in places}
    half = {name: centre_half(name) if name == centre else (NODE_RADIUS[nodes[name]["hops"]],) * 2 for name in places}
    loops = Counter(e["from"] for e in edges if e["from"] == e["to"])
    left, top, right, bottom = bounds(places, labels, half, {name: loop_reach(count - 1) for name, count in loops.items()})
    shift = (MARGIN - left, MARGIN - top)
    places = {name: moved(point, shift) for name, point in places.items()}
    labels = {name: shifted(label, shift) for name, label in labels.items()}
    shapes = tuple(
        node_shape(nodes[name], places[name], half[name], labels[name])
        for name in sorted(nodes, key=lambda n: (-nodes[n]["hops"], n))
    )
    edge_list = uncrowded(edge_shapes(edges, places, half, centre), [labels[n] for n in places if n != centre])
    return Picture(
        centre, round(right - left + 2 * MARGIN, 1), round(bottom - top + 2 * MARGIN, 1),
        shapes, edge_list, neighbourhood["total"], neighbourhood["left_out"],
    )


def node_shape(node: dict[str, Any], place: Point, half: Point, label: Label) -> NodeShape:
    x, y = place
    r = 0.0 if node["hops"] == 0 else half[0]
    return NodeShape(
        node["name"], node["hops"], node["stored"], node.get("entityType"), x, y, r,
        round(x - half[0], 1), round(y - half[1], 1), round(2 * half[0], 1), round(2 * half[1], 1), label,
    )


def centre_half(name: str) -> Point:
    "Half the width and height of the centre's box."
    return (round(shown_length(truncated(name, LABEL_CHARS)) * CENTRE_CHAR_WIDTH / 2 + CENTRE_PADDING, 1), CENTRE_HEIGHT / 2)


# Where the nodes go


def ring_angles(rings: list[list[str]], edges: list[dict[str, str]], centre_width: float) -> tuple[dict[str, float], dict[int, float]]:
    """
    The angle of each ring node, and each ring's radius (by hops). A sparse
    inner ring leaves room beyond its labels; a crowded one holds its labels
    inside (see :func:`node_label`), and leaves room for relations' labels.
    """
    inner, outer = rings
    start = math.pi / 2 + math.pi / max(len(inner), 1)  # no node straight below the centre: the picture reads better
    angles = {name: (start + 2 * math.pi * i / len(inner)) % (2 * math.pi) for i, name in enumerate(inner)}
    widest = max((label_width(n) for n in inner), default=0.0)
    inner_radius = max(INNER_RADIUS, centre_width + 110, ring_radius(len(inner), spacing(inner)))
    reach = widest + NODE_RADIUS[1] + 6
    if len(inner) > FEW:
        inner_radius = max(inner_radius, centre_width + widest + 40)
        reach = 70.0
    outer_radius = max(inner_radius + reach + RING_GAP, ring_radius(len(outer), spacing(outer)))
    parents = defaultdict(list)
    for edge in edges:
        for here, there in ((edge["from"], edge["to"]), (edge["to"], edge["from"])):
            if here in outer and there in angles:
                parents[here].append(angles[there])
    wanted = {name: mean_angle(parents[name]) for name in outer}
    angles.update(spread(outer, wanted, spacing(outer) / outer_radius))
    return angles, {1: inner_radius, 2: outer_radius}


def spacing(ring: list[str]) -> float:
    "How far apart neighbours on a ring must be: a label's width when level, a line's height along rays."
    if len(ring) <= FEW:
        return max((label_width(n) for n in ring), default=0.0) + 16
    return LINE_HEIGHT


def ring_radius(count: int, gap: float) -> float:
    "The radius at which ``count`` nodes evenly spread are ``gap`` apart."
    return gap / (2 * math.sin(math.pi / count)) if count > 1 else 0.0


def mean_angle(angles: list[float]) -> float:
    "The direction the unit vectors at ``angles`` add up to (the first, if they cancel out)."
    x, y = sum(math.cos(a) for a in angles), sum(math.sin(a) for a in angles)
    if math.hypot(x, y) < 1e-9:
        return angles[0] if angles else 0.0
    return math.atan2(y, x) % (2 * math.pi)


def spread(names: list[str], wanted: dict[str, float], gap: float) -> dict[str, float]:
    """
    Angles for ``names`` as near their ``wanted`` ones as keeping ``gap``
    (radians) between neighbours allows; evenly round the ring when crowded.
    """
    if not names:
        return {}
    order = sorted(names, key=lambda n: (wanted[n], n))
    start = widest_gap_end([wanted[n] for n in order])
    order = order[start:] + order[:start]
    unwrapped = [wanted[n] + (2 * math.pi if i >= len(order) - start else 0.0) for i, n in enumerate(order)]
    placed = [unwrapped[0]]
    for angle in unwrapped[1:]:
        placed.append(max(angle, placed[-1] + gap))
    if placed[-1] - placed[0] > 2 * math.pi - gap:
        even = [2 * math.pi * i / len(order) for i in range(len(order))]
        offset = mean_angle([u - e for u, e in zip(unwrapped, even)])
        return {n: (offset + e) % (2 * math.pi) for n, e in zip(order, even)}
    drift = sum(p - u for p, u in zip(placed, unwrapped)) / len(placed)
    return {n: (p - drift) % (2 * math.pi) for n, p in zip(order, placed)}


def widest_gap_end(sorted_angles: list[float]) -> int:
    "The index after the widest gap between neighbouring angles (round the circle): where to start placing."
    if len(sorted_angles) == 1:
        return 0
    gaps = [(sorted_angles[(i + 1) % len(sorted_angles)] - a) % (2 * math.pi) for i, a in enumerate(sorted_angles)]
    return (max(range(len(gaps)), key=lambda i: (gaps[i], -i)) + 1) % len(sorted_angles)


def polar(radius: float, angle: float) -> Point:
    return (radius * math.cos(angle), radius * math.sin(angle))


def moved(point: Point, by: Point) -> Point:
    return (round(point[0] + by[0], 1), round(point[1] + by[1], 1))


# Labels


def label_width(name: str) -> float:
    return shown_length(truncated(name, LABEL_CHARS)) * NODE_FONT * CHAR_EM


def node_label(name: str, hops: int, place: Point, angles: dict[str, float], rings: list[list[str]]) -> Label:
    """
    A node's label: inside the centre's box; level and across its ray on a
    sparse ring; along its ray on a crowded one: outwards on the outer ring,
    and on the inner ring inwards, beside the relation from the centre (whose
    label is on the other side), since relations to the outer ring leave outwards.
    """
    text = truncated(name, LABEL_CHARS)
    if hops == 0:
        return Label(text, *place)
    angle, radius = angles[name], NODE_RADIUS[hops]
    if len(rings[hops - 1]) <= FEW:
        return across(text, place, angle, radius)
    right = math.cos(angle) >= 0  # keep text upright: rotated by less than a quarter turn
    degrees = round(math.degrees(angle) - (0 if right else 180), 1)
    if hops == 2:
        x, y = moved(place, polar(radius + 5, angle))
        return Label(text, x, y, "start" if right else "end", degrees)
    x, y = moved(place, polar(-(radius + 6), angle))
    return Label(text, x, y, "end" if right else "start", degrees, 1.0)


def across(text: str, place: Point, angle: float, radius: float) -> Label:
    """
    A level label beside a node, off the line of its ray (where its relations
    run): on the side across the ray that is lower, or right of a node straight
    above or below the centre.
    """
    side = (-math.sin(angle), math.cos(angle))
    if side[1] < -1e-9 or (abs(side[1]) <= 1e-9 and side[0] < 0):
        side = (-side[0], -side[1])
    x, y = moved(place, ((radius + 4) * side[0], (radius + 4) * side[1]))
    anchor = "start" if side[0] > 0.3 else "end" if side[0] < -0.3 else "middle"
    return Label(text, x, y, anchor, dy=0.9 if side[1] > 0.3 else 0.35)


def shifted(label: Label, by: Point) -> Label:
    x, y = moved((label.x, label.y), by)
    return Label(label.text, x, y, label.anchor, label.rotate, label.dy, label.size)


def overlap(a: list[Point], b: list[Point]) -> bool:
    "Whether two convex polygons overlap: no edge of either separates them."
    for polygon in (a, b):
        for (px, py), (qx, qy) in zip(polygon, polygon[1:] + polygon[:1]):
            axis = (qy - py, px - qx)
            first, second = [[axis[0] * x + axis[1] * y for x, y in p] for p in (a, b)]
            if max(first) <= min(second) or max(second) <= min(first):
                return False
    return True


def uncrowded(edges: tuple[EdgeShape, ...], kept: list[Label]) -> tuple[EdgeShape, ...]:
    "``edges`` with the labels that would cover a name's label or an earlier relation's left off (each path keeps its title)."
    boxes = [label.corners() for label in kept]
    shown = []
    for edge in edges:
        box = edge.label.corners() if edge.label else None
        if box is None or any(overlap(box, other) for other in boxes):
            shown.append(EdgeShape(edge.source, edge.target, edge.relation_type, edge.path, None))
        else:
            boxes.append(box)
            shown.append(edge)
    return tuple(shown)


def bounds(places: dict[str, Point], labels: dict[str, Label], half: dict[str, Point], loops: dict[str, float]) -> tuple[float, float, float, float]:
    "``(left, top, right, bottom)`` of everything drawn; ``loops`` gives the reach of a node's loops, if it has any."
    points = [corner for label in labels.values() for corner in label.corners()]
    for name, (x, y) in places.items():
        w, h = half[name]
        rise = max(h, loops[name] + h + 14) if name in loops else h  # a loop and its label rise above the node
        points += [(x - w - 4, y - rise - 4), (x + w + 4, y + h + 4)]
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


# Relations


def edge_shapes(edges: list[dict[str, str]], places: dict[str, Point], half: dict[str, Point], centre: str) -> tuple[EdgeShape, ...]:
    "Every relation as a path: straight when alone between two names, curving apart from its siblings when not."
    pairs: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for edge in edges:
        pairs[(min(edge["from"], edge["to"]), max(edge["from"], edge["to"]))].append(edge)
    shapes = []
    for (first, second), siblings in pairs.items():
        for i, edge in enumerate(siblings):
            if first == second:
                shapes.append(loop(edge, places[first], half[first], i))
            else:
                offset = (i - (len(siblings) - 1) / 2) * PARALLEL_GAP
                shapes.append(curve(edge, places, half, centre, (first, second), offset))
    return tuple(shapes)


def curve(
    edge: dict[str, str], places: dict[str, Point], half: dict[str, Point], centre: str, pair: tuple[str, str], offset: float
) -> EdgeShape:
    "A relation between two names, ``offset`` to one side of the straight line (sides taken from the pair, not the direction)."
    (ax, ay), (bx, by) = places[pair[0]], places[pair[1]]
    length = math.hypot(bx - ax, by - ay) or 1.0
    normal = (-(by - ay) / length, (bx - ax) / length)
    control = ((ax + bx) / 2 + 2 * offset * normal[0], (ay + by) / 2 + 2 * offset * normal[1])
    source, target = places[edge["from"]], places[edge["to"]]
    start = on_rim(source, control if offset else target, half[edge["from"]], edge["from"] == centre, 1.0)
    end = on_rim(target, control if offset else source, half[edge["to"]], edge["to"] == centre, 2.0)
    bend = control if offset else ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
    middle = ((start[0] + 2 * bend[0] + end[0]) / 4, (start[1] + 2 * bend[1] + end[1]) / 4)  # halfway along what shows
    path = f"M {start[0]} {start[1]} " + (f"Q {round(control[0], 1)} {round(control[1], 1)} " if offset else "L ") + f"{end[0]} {end[1]}"
    degrees = math.degrees(math.atan2(by - ay, bx - ax))
    degrees = degrees - 180 if degrees > 90 else degrees + 180 if degrees <= -90 else degrees
    label = Label(truncated(edge["relationType"], EDGE_LABEL_CHARS), round(middle[0], 1), round(middle[1], 1), "middle", round(degrees, 1), -0.35, EDGE_FONT)
    return EdgeShape(edge["from"], edge["to"], edge["relationType"], path, label)


def on_rim(point: Point, aim: Point, half: Point, boxed: bool, gap: float) -> Point:
    "Where a line from ``point`` towards ``aim`` leaves the node drawn at ``point`` (a circle, or the centre's box), plus ``gap``."
    dx, dy = aim[0] - point[0], aim[1] - point[1]
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    rim = min(half[0] / abs(ux) if ux else math.inf, half[1] / abs(uy) if uy else math.inf) if boxed else half[0]
    return moved(point, ((rim + gap) * ux, (rim + gap) * uy))


def loop_reach(index: int) -> float:
    "How far the ``index``-th loop on one node rises above it."
    return 30.0 + 12 * index


def loop(edge: dict[str, str], place: Point, half: Point, index: int) -> EdgeShape:
    "A relation from a name to itself: a loop above the node, larger for each further one."
    x, y = place
    w, h = min(half[0], 8.0), half[1]
    reach = loop_reach(index)
    path = f"M {round(x - w * 0.6, 1)} {round(y - h, 1)} C {round(x - reach, 1)} {round(y - reach - h, 1)} " \
        f"{round(x + reach, 1)} {round(y - reach - h, 1)} {round(x + w * 0.6, 1)} {round(y - h - 2, 1)}"
    label = Label(truncated(edge["relationType"], EDGE_LABEL_CHARS), x, round(y - h - reach * 0.75 - 2, 1), "middle", 0.0, 0.0, EDGE_FONT)
    return EdgeShape(edge["from"], edge["to"], edge["relationType"], path, label)
