"""The ledger's activity per day by kind, as an inline SVG stacked bar chart drawn on the server.

No JavaScript and nothing fetched: the page works offline. The same counts
always give the same bytes (colours follow the order of the kinds, numbers are
rounded to two places). Every piece of text is escaped here, so the result can
be marked safe for the template, its invisible characters shown as marks as
on the rest of the page (a project's name is stored text).
"""

import datetime
import html
import math
from typing import Any

from .stored_text import stored

WIDTH = 760
LEFT, RIGHT, TOP = 56, 16, 16
PLOT_HEIGHT = 170
AXIS_HEIGHT = 46  # tick labels and the axis title under the plot
LEGEND_ROW, LEGEND_COLUMNS = 20, 4
LEGEND_LABEL_CHARS = 24  # a kind's name is up to 64 characters; the legend shows this many, the tooltip all
MAX_BAR_WIDTH = 36
MAX_X_LABELS = 8
# Tableau 10 and two more: told apart by most readers, in print and on screen
PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
           "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295")
OTHER = "other kinds"


def activity_svg(activity: dict[str, Any], project: str) -> str:
    """
    The chart of ``activity`` (as :func:`datasette_memory.core.timeline.activity` returns it): one
    stacked bar per day with events, a segment per kind with a tooltip, axes and a legend.

    :param activity: the counts, with ``first_day``, ``last_day``, ``days`` and ``kinds``
    :param project: the project, for the chart's title
    :return: SVG markup, every text in it escaped; empty when there are no days
    """
    if not activity["days"]:
        return ""
    days = day_list(activity["first_day"], activity["last_day"])
    position = {day: index for index, day in enumerate(days)}
    colours = kind_colours(activity["kinds"])
    legend = legend_entries(activity["kinds"], colours)
    top = nice_top(max(day["total"] for day in activity["days"]))
    height = TOP + PLOT_HEIGHT + AXIS_HEIGHT + LEGEND_ROW * math.ceil(len(legend) / LEGEND_COLUMNS) + 8
    title = f"Events per day by kind in {project}, {days[0]} to {days[-1]} (UTC)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="memory-chart" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-labelledby="memory-chart-title">',
        f'<title id="memory-chart-title">{esc(title)}</title>',
        *y_axis(top),
        *x_axis(days),
        *(bar(day, position[day["day"]], len(days), top, colours) for day in activity["days"]),
        *legend_svg(legend, TOP + PLOT_HEIGHT + AXIS_HEIGHT),
        "</svg>",
    ]
    return "\n".join(parts)


def esc(text: str) -> str:
    "``text`` escaped for SVG, each invisible or bidi control character as its mark."
    return html.escape(stored(text, "plain"), quote=True)


def num(value: float) -> str:
    "A coordinate, rounded so the same data gives the same text."
    return f"{value:.2f}".rstrip("0").rstrip(".")


def day_list(first: str, last: str) -> list[str]:
    "Every day from ``first`` to ``last``, as ISO dates."
    start, end = datetime.date.fromisoformat(first), datetime.date.fromisoformat(last)
    return [(start + datetime.timedelta(days=n)).isoformat() for n in range((end - start).days + 1)]


def kind_colours(kinds: list[str]) -> dict[str, str]:
    "A colour for each kind, in order; past the palette's end the rest share the last (the legend's other kinds)."
    return {kind: PALETTE[min(index, len(PALETTE) - 1)] for index, kind in enumerate(kinds)}


def legend_entries(kinds: list[str], colours: dict[str, str]) -> list[tuple[str, str]]:
    "``(label, colour)`` for the legend: each kind with a colour of its own, then :data:`OTHER` if some share one."
    own = kinds if len(kinds) <= len(PALETTE) else kinds[: len(PALETTE) - 1]
    return [(kind, colours[kind]) for kind in own] + ([(OTHER, PALETTE[-1])] if len(own) < len(kinds) else [])


def nice_top(largest: int) -> int:
    "The top of the y axis: a round number of at most four or five steps (see :func:`tick_step`) at or above ``largest``."
    step = tick_step(largest)
    return step * max(1, math.ceil(largest / step))


def tick_step(largest: int) -> int:
    "A step of 1, 2 or 5 times a power of ten giving about four ticks up to ``largest``."
    raw = max(1.0, largest / 4)
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)


def y_of(count: float, top: int) -> float:
    return TOP + PLOT_HEIGHT - count / top * PLOT_HEIGHT


def y_axis(top: int) -> list[str]:
    "Grid lines with their counts, and the axis title."
    step = tick_step(top)
    lines = []
    for value in range(0, top + 1, step):
        y = num(y_of(value, top))
        lines.append(f'<line class="memory-grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}" stroke="#e4e4e4"/>')
        lines.append(f'<text x="{LEFT - 6}" y="{y}" text-anchor="end" dominant-baseline="middle" font-size="11" fill="#555">{value}</text>')
    middle = num(TOP + PLOT_HEIGHT / 2)
    lines.append(f'<text x="14" y="{middle}" transform="rotate(-90 14 {middle})" text-anchor="middle" font-size="12" fill="#333">events</text>')
    return lines


def x_axis(days: list[str]) -> list[str]:
    "The axis line, a label every few days (month-day), and the axis title."
    base = TOP + PLOT_HEIGHT
    lines = [f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}" stroke="#888"/>']
    every = math.ceil(len(days) / MAX_X_LABELS)
    for index in range(0, len(days), every):
        x = num(slot_centre(index, len(days)))
        lines.append(f'<text x="{x}" y="{base + 16}" text-anchor="middle" font-size="11" fill="#555">{esc(days[index][5:])}</text>')
    lines.append(f'<text x="{num(LEFT + plot_width() / 2)}" y="{base + 36}" text-anchor="middle" font-size="12" fill="#333">'
                 f'day (UTC), {esc(days[0])} to {esc(days[-1])}</text>')
    return lines


def plot_width() -> int:
    return WIDTH - LEFT - RIGHT


def slot_centre(index: int, count: int) -> float:
    return LEFT + (index + 0.5) * plot_width() / count


def bar(day: dict[str, Any], index: int, count: int, top: int, colours: dict[str, str]) -> str:
    "One day's bar: a segment per kind, stacked in legend order from the axis up, each with its tooltip."
    width = min(MAX_BAR_WIDTH, plot_width() / count * 0.8)
    x = num(slot_centre(index, count) - width / 2)
    segments, below = [], 0
    for kind in sorted(day["counts"], key=list(colours).index):
        n = day["counts"][kind]
        y, height = y_of(below + n, top), n / top * PLOT_HEIGHT
        tooltip = f"{day['day']}: {kind} {n} of {day['total']}"
        segments.append(f'<rect x="{x}" y="{num(y)}" width="{num(width)}" height="{num(height)}" fill="{colours[kind]}">'
                        f"<title>{esc(tooltip)}</title></rect>")
        below += n
    return f'<g class="memory-bar" data-day="{esc(day["day"])}">{"".join(segments)}</g>'


def legend_svg(entries: list[tuple[str, str]], top: int) -> list[str]:
    "The legend: a swatch and a kind name per entry, in rows of :data:`LEGEND_COLUMNS`."
    column_width = plot_width() / LEGEND_COLUMNS
    lines = ['<g class="memory-legend">']
    for index, (label, colour) in enumerate(entries):
        x = LEFT + (index % LEGEND_COLUMNS) * column_width
        y = top + (index // LEGEND_COLUMNS) * LEGEND_ROW
        lines.append(f'<rect x="{num(x)}" y="{y}" width="12" height="12" fill="{colour}"/>')
        shown = label if len(label) <= LEGEND_LABEL_CHARS else label[: LEGEND_LABEL_CHARS - 1] + "…"
        lines.append(f'<text x="{num(x + 17)}" y="{y + 10}" font-size="12" fill="#333"><title>{esc(label)}</title>{esc(shown)}</text>')
    lines.append("</g>")
    return lines
