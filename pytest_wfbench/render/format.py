"""How figures are written in the report and the terminal: one place, so the
same number always reads the same."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from pytest_wfbench.stats import Interval


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value.is_integer():
            return f"{int(value):,}"
        return f"{value:,.{digits}f}"
    return str(value)


def fmt_cost(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def fmt_rate_interval(interval: Interval | None) -> str:
    """A resolve rate's interval, in whole percent."""
    return "n/a" if interval is None else f"{interval.low:.0%}-{interval.high:.0%}"


def fmt_pct_interval(interval: Interval | Sequence[float] | None) -> str:
    """An interval of percentages (savings, improvements)."""
    if interval is None:
        return "n/a"
    low, high = (interval.low, interval.high) if isinstance(interval, Interval) else interval
    return f"[{low:+.1f}%, {high:+.1f}%]"


def fmt_points(value: float | None) -> str:
    """A difference of two rates, in percentage points."""
    return "n/a" if value is None else f"{value * 100:+.1f} pts"


def fmt_points_interval(interval: Interval | None) -> str:
    return "n/a" if interval is None else f"[{interval.low * 100:+.1f}, {interval.high * 100:+.1f}]"


def fmt_p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_share(value: float) -> str:
    return f"{value:.3f}"


def cell(text: str) -> str:
    """A table cell that stays one cell: no pipe or line break of the text ends it."""
    return text.replace("|", "\\|").replace("\r", "\\r").replace("\n", "\\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += [_row(row) for row in rows]
    return lines


def _row(row: Sequence[object]) -> str:
    """A table's line of these cells, each a :func:`cell` (a cell that is no
    text, a row's field of another type, written as text; null as empty)."""
    texts = cast(Sequence[str], row)  # almost always: else the join says so
    try:
        joined = " | ".join(texts)
    except TypeError:
        return _row([text if isinstance(text, str) else "" if text is None else str(text)
                     for text in row])
    if joined.count("|") == len(row) - 1 and "\n" not in joined and "\r" not in joined:
        return "| " + joined + " |"  # no cell has a bar or a line break: each is itself
    return "| " + " | ".join(cell(text) for text in texts) + " |"


def first_line(text: object, limit: int = 160) -> str:
    """The text's first line, cut at ``limit`` (a value that is no text, as text;
    null as empty)."""
    text = "" if text is None else text if isinstance(text, str) else str(text)
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
