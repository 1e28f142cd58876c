"""The targets of issue 8, each with its measured figure and whether it holds.
Pure: figures in, rows of text out.

A target is a measured value against a limit (``value <= limit`` holds). A
value that could not be measured holds nothing: it is shown as n/a, never as
held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    key: str
    """Stable name in latest.json."""
    target: str
    """The target as issue 8 states it."""
    value: float | None
    limit: float
    unit: str
    """``x`` (a ratio), ``s`` (seconds), ``KB`` (a row's memory) or ``builds``."""
    measured: str
    """What the value is, in a few words (the figures it comes from)."""
    informational: bool = False
    """A figure shown beside the targets, against the limit it is compared to,
    that is not one of them (it says why in ``measured``)."""

    @property
    def holds(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit

    def verdict(self) -> str:
        if self.informational:
            return "(not a target)"
        return {True: "holds", False: "DOES NOT HOLD", None: "not measured"}[self.holds]

    def shown(self) -> str:
        if self.value is None:
            return "n/a"
        if self.unit == "builds":
            return f"{self.value:.0f}"
        # Two decimals, three when two would show the limit for a value that misses it.
        digits = 3 if (self.holds is False and f"{self.value:.2f}" == f"{self.limit:.2f}") else 2
        return f"{self.value:.{digits}f}{self._suffix()}"

    def limit_shown(self) -> str:
        if self.unit == "builds":
            return f"{self.limit:.0f}"
        return f"{self.limit:.2f}{self._suffix()}"

    def _suffix(self) -> str:
        return {"x": "x", "KB": " KB"}.get(self.unit, " s")

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "target": self.target, "value": self.value,
                "limit": self.limit, "unit": self.unit,
                "holds": None if self.informational else self.holds,
                "informational": self.informational, "measured": self.measured}


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


HEADERS = ("target", "limit", "measured", "verdict", "from")


def target_rows(targets: Sequence[Target]) -> list[tuple[str, ...]]:
    return [(t.target, t.limit_shown(), t.shown(), t.verdict(), t.measured) for t in targets]


def render_targets(targets: Sequence[Target], *, markdown: bool = False) -> str:
    rows = target_rows(targets)
    if markdown:
        lines = ["| " + " | ".join(HEADERS) + " |", "|---|--:|--:|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(HEADERS[:-1])]
    out = ["  ".join(h.ljust(w) for h, w in zip(HEADERS[:-1], widths, strict=True))]
    for row in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)))
        out.append(f"    {row[-1]}")
    return "\n".join(line.rstrip() for line in out)


def summary_line(targets: Sequence[Target]) -> str:
    targets = [t for t in targets if not t.informational]
    held = sum(1 for t in targets if t.holds is True)
    failed = [t.key for t in targets if t.holds is False]
    missing = [t.key for t in targets if t.holds is None]
    line = f"{held} of {len(targets)} targets hold"
    if failed:
        line += f"; not held: {', '.join(failed)}"
    if missing:
        line += f"; not measured: {', '.join(missing)}"
    return line
