"""The report's charts, as inline SVG written here.

Hand-written SVG rather than a charting library: four simple chart shapes
(points with interval bars, strip plots, grouped bars, one stacked bar) are
a few lines each; the page stays one small file that renders with scripts
off, in any browser, offline; the bytes are deterministic (no generated ids,
no timestamps), so a re-render is identical; and every label is escaped here,
with no library's own escaping to audit. A library such as Plotly would embed
megabytes of script per page for the same four shapes.

Every function takes plain figures and returns one ``<svg>`` element as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

FONT = 'font-family="system-ui, sans-serif" font-size="12"'
PALETTE = ("#2563eb", "#ea580c", "#059669", "#9333ea", "#dc2626", "#0891b2", "#ca8a04",
           "#db2777", "#4b5563", "#65a30d")
STAGE_COLOURS = {"template": "#94a3b8", "clone": "#64748b", "setup": "#a78bfa",
                 "session": "#2563eb", "verify": "#f59e0b", "capture": "#14b8a6",
                 "evidence": "#10b981", "expected_tests": "#f97316", "oracle": "#ef4444",
                 "cleanup": "#a3a3a3", "row": "#525252"}


def colours(names: Sequence[str]) -> dict[str, str]:
    """A colour per name, in the order given (arms sorted: stable across charts)."""
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _n(value: float) -> str:
    """A coordinate, short and always written the same way."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _e(text: str) -> str:
    return escape(text, quote=True)


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to at least ``high``."""
    if high <= 0 or not math.isfinite(high):
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks, value = [0.0], 0.0
    while value < high - 1e-12:
        value = round(value + step, 12)
        ticks.append(value)
    return ticks


def tick_label(value: float) -> str:
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.4g}"


@dataclass(frozen=True)
class ArmPoint:
    arm: str
    x: float
    rate: float
    low: float
    high: float
    label: str
    """Hover text: the arm's figures."""


def resolve_chart(points: Sequence[ArmPoint], x_label: str, colour: dict[str, str],
                  x_format: Callable[[float], str] = tick_label) -> str:
    """Each arm's resolve rate (y, with its interval as a bar) against what it
    spends (x)."""
    width, height, left, right, top, bottom = 640, 320, 56, 120, 16, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    ticks = nice_ticks(max((p.x for p in points if math.isfinite(p.x)), default=0.0))
    x_max = ticks[-1]

    def x_at(value: float) -> float:
        """Where a value is drawn: one off the axis at its end."""
        return left + plot_w * min(max(value, 0.0), x_max) / x_max

    def y_at(rate: float) -> float:
        return top + plot_h * (1 - rate)

    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" {FONT}><title>Resolve rate against {_e(x_label)}</title>']
    for i in range(0, 11, 2):
        y = y_at(i / 10)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{_n(y)}" y2="{_n(y)}" '
                     f'class="grid"/><text x="{left - 6}" y="{_n(y + 4)}" '
                     f'text-anchor="end">{i * 10}%</text>')
    for tick in ticks:
        x = x_at(tick)
        parts.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{top + plot_h}" '
                     f'class="grid"/><text x="{_n(x)}" y="{top + plot_h + 16}" '
                     f'text-anchor="middle">{_e(x_format(tick))}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 6}" text-anchor="middle" '
                 f'class="axis-label">{_e(x_label)}</text>')
    parts.append(f'<text transform="translate(14 {top + plot_h / 2:.0f}) rotate(-90)" '
                 'text-anchor="middle" class="axis-label">resolve rate</text>')
    for point in points:
        x, c = x_at(point.x), colour.get(point.arm, PALETTE[0])
        y_low, y_high, y = y_at(point.low), y_at(point.high), y_at(point.rate)
        parts.append(
            f'<g class="point"><title>{_e(point.label)}</title>'
            f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(y_low)}" y2="{_n(y_high)}" '
            f'stroke="{c}" stroke-width="2"/>'
            f'<line x1="{_n(x - 5)}" x2="{_n(x + 5)}" y1="{_n(y_low)}" y2="{_n(y_low)}" '
            f'stroke="{c}" stroke-width="2"/>'
            f'<line x1="{_n(x - 5)}" x2="{_n(x + 5)}" y1="{_n(y_high)}" y2="{_n(y_high)}" '
            f'stroke="{c}" stroke-width="2"/>'
            f'<circle cx="{_n(x)}" cy="{_n(y)}" r="5" fill="{c}"/>'
            f'<text x="{_n(x + 9)}" y="{_n(y + 4)}" fill="{c}">{_e(point.arm)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Dot:
    value: float
    label: str
    """Hover text: the cell and its figure."""
    outcome: str


def strip_chart(groups: Sequence[tuple[str, Sequence[Dot]]], x_label: str,
                colour: dict[str, str], x_format: Callable[[float], str] = tick_label,
                medians: Mapping[str, float] | None = None) -> str:
    """One row per arm: a dot per counted run, a bar at the median (of the dots,
    or the arm's in ``medians``: of all its runs, where only some are drawn)."""
    row_h, left, right, top = 34, 120, 24, 10
    width = 640
    height = top + row_h * len(groups) + 40
    plot_w = width - left - right
    ticks = nice_ticks(max((d.value for _, dots in groups for d in dots
                            if math.isfinite(d.value)), default=0.0))
    x_max = ticks[-1]

    def x_at(value: float) -> float:
        """Where a value is drawn: one off the axis (an infinite count) at its end
        (its title says what it is)."""
        return left + plot_w * min(max(value, 0.0), x_max) / x_max

    bottom = top + row_h * len(groups)
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" {FONT}><title>{_e(x_label)} per arm</title>']
    for tick in ticks:
        x = x_at(tick)
        parts.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{bottom}" class="grid"/>'
                     f'<text x="{_n(x)}" y="{bottom + 16}" text-anchor="middle">'
                     f'{_e(x_format(tick))}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle" '
                 f'class="axis-label">{_e(x_label)}</text>')
    for row, (arm, dots) in enumerate(groups):
        centre = top + row_h * row + row_h / 2
        c = colour.get(arm, PALETTE[0])
        parts.append(f'<text x="{left - 8}" y="{_n(centre + 4)}" text-anchor="end">'
                     f'{_e(arm)}</text>')
        values = sorted(d.value for d in dots)
        median: float | None = None
        if medians is not None:
            median = medians.get(arm)
        elif values:
            mid = len(values) // 2
            median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
        if median is not None:
            x = x_at(median)
            parts.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(centre - 12)}" '
                         f'y2="{_n(centre + 12)}" stroke="{c}" stroke-width="3">'
                         f'<title>{_e(arm)}: median {_e(x_format(median))}</title></line>')
        for i, dot in enumerate(dots):
            # A fixed spread about the row's centre (0, +3, -3, +6, ...), not a
            # random jitter: the same runs always draw the same.
            step = (i % 7 + 1) // 2
            offset = step * 3.2 * (1 if i % 2 else -1)
            hollow = dot.outcome != "resolved"
            fill = "white" if hollow else c
            parts.append(f'<circle cx="{_n(x_at(dot.value))}" cy="{_n(centre + offset)}" r="4" '
                         f'fill="{fill}" stroke="{c}" stroke-width="1.5">'
                         f'<title>{_e(dot.label)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(categories: Sequence[str], series: Sequence[str],
              values: dict[tuple[str, str], float | None], x_label: str,
              colour: dict[str, str]) -> str:
    """Horizontal bars: per category (a step), one bar per series (a subject);
    ``None`` is a step the series has but never measured."""
    bar_h, gap, left, right, top = 12, 10, 210, 70, 10
    width = 720
    group_h = bar_h * max(1, len(series)) + gap
    bottom = top + group_h * len(categories)
    height = bottom + 58
    plot_w = width - left - right
    found = [v for v in values.values() if v is not None]
    ticks = nice_ticks(max(found, default=0.0))
    x_max = ticks[-1]
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" {FONT}><title>{_e(x_label)}</title>']
    for tick in ticks:
        x = left + plot_w * tick / x_max
        parts.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{bottom}" class="grid"/>'
                     f'<text x="{_n(x)}" y="{bottom + 16}" text-anchor="middle">'
                     f'{_e(tick_label(tick))}</text>')
    parts.append(f'<text x="{left + plot_w / 2:.0f}" y="{bottom + 34}" text-anchor="middle" '
                 f'class="axis-label">{_e(x_label)}</text>')
    for row, category in enumerate(categories):
        y0 = top + group_h * row
        parts.append(f'<text x="{left - 8}" y="{_n(y0 + group_h / 2)}" text-anchor="end">'
                     f'{_e(category)}</text>')
        for i, name in enumerate(series):
            y = y0 + i * bar_h
            if (category, name) not in values:
                continue
            value = values[(category, name)]
            c = colour.get(name, PALETTE[0])
            if value is None:
                parts.append(f'<text x="{left + 4}" y="{_n(y + bar_h - 2)}" fill="{c}" '
                             f'font-size="10">{_e(name)}: unmeasured</text>')
                continue
            w = max(1.0, plot_w * value / x_max)
            parts.append(f'<rect x="{left}" y="{_n(y + 1)}" width="{_n(w)}" '
                         f'height="{bar_h - 2}" fill="{c}"><title>{_e(category)}, {_e(name)}: '
                         f'{_e(tick_label(value))}</title></rect>'
                         f'<text x="{_n(left + w + 4)}" y="{_n(y + bar_h - 2)}" font-size="10">'
                         f'{_e(tick_label(round(value, 1)))}</text>')
    legend_y = height - 10
    for i, name in enumerate(series):
        x = left + i * 110
        parts.append(f'<rect x="{x}" y="{legend_y - 9}" width="10" height="10" '
                     f'fill="{colour.get(name, PALETTE[0])}"/>'
                     f'<text x="{x + 14}" y="{legend_y}">{_e(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def stage_bar(stages: Sequence[tuple[str, float]]) -> str:
    """A cell's stages as one stacked bar, in the order they ran."""
    width, height, bar_h = 640, 26, 16
    total = sum(ms for _, ms in stages)
    parts = [f'<svg class="stages" role="img" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" {FONT}><title>Stage times</title>']
    x = 0.0
    for name, ms in stages:
        if total <= 0:
            break
        w = width * ms / total
        c = STAGE_COLOURS.get(name, "#d4d4d4")
        parts.append(f'<rect x="{_n(x)}" y="4" width="{_n(max(w, 0.5))}" height="{bar_h}" '
                     f'fill="{c}"><title>{_e(name)}: {ms:,.1f} ms</title></rect>')
        if w > 60:
            parts.append(f'<text x="{_n(x + 4)}" y="{4 + bar_h - 4}" fill="white" '
                         f'font-size="10">{_e(name)}</text>')
        x += w
    parts.append("</svg>")
    return "".join(parts)
