"""Medians over runs of the tool-cost lane, per subject and per step, for
putting subjects side by side. Pure: rows in, figures out.

Only rows that ran and count (SPEC §5) enter a median; a step's median is over
the runs that reached it, and says how many did.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Row = dict[str, Any]
AGENT_KINDS = ("vcs", "terminal", "edit")


@dataclass(frozen=True)
class StepMedian:
    runs: int
    """Runs of the subject that reached this step."""
    elapsed_ms: float | None
    """None when the step is never measured (an unmeasured operation)."""
    estimated_tokens: float | None
    harness_command_count: float | None = None


def median(values: Iterable[float]) -> float | None:
    found = list(values)
    return float(statistics.median(found)) if found else None


def counted(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if r.get("status") == "ran" and r.get("counted")]


def step_order(sequences: Iterable[Sequence[str]]) -> list[str]:
    """One order for several subjects' step sequences: each step after the step
    that preceded it where it first appeared, so a step one subject needs and
    another does not sits beside its neighbours."""
    order: list[str] = []
    for sequence in sequences:
        previous: str | None = None
        for operation in sequence:
            if operation not in order:
                at = order.index(previous) + 1 if previous is not None else 0
                while previous is not None and at < len(order) and order[at] not in sequence:
                    at += 1  # keep after steps another subject inserted here
                order.insert(at, operation)
            previous = operation
    return order


def _steps(row: Row, harness: bool) -> list[dict[str, Any]]:
    kinds = ("harness",) if harness else AGENT_KINDS
    return [s for s in row.get("steps") or [] if s.get("step_kind") in kinds]


def step_medians(rows: Sequence[Row], *, harness: bool = False
                 ) -> tuple[list[str], dict[str, dict[str, StepMedian]]]:
    """(step order, subject -> operation -> median) over the counted rows;
    ``harness`` selects the harness's own steps instead of the agent's."""
    ran = counted(rows)
    subjects = sorted({r["arm"] for r in ran})
    sequences = [[s["operation"] for s in _steps(r, harness)]
                 for subject in subjects for r in ran if r["arm"] == subject]
    medians: dict[str, dict[str, StepMedian]] = {}
    for subject in subjects:
        per_operation: dict[str, list[dict[str, Any]]] = {}
        for row in (r for r in ran if r["arm"] == subject):
            for step in _steps(row, harness):
                per_operation.setdefault(step["operation"], []).append(step)
        medians[subject] = {
            operation: StepMedian(
                runs=len(steps),
                elapsed_ms=median(s["elapsed_ms"] for s in steps
                                  if s.get("measured") and s.get("elapsed_ms") is not None),
                estimated_tokens=median(s.get("estimated_tokens") or 0 for s in steps
                                        if s.get("measured")),
                harness_command_count=median(s.get("harness_command_count") or 0
                                             for s in steps) if harness else None)
            for operation, steps in per_operation.items()}
    return step_order(sequences), medians


def total_medians(rows: Sequence[Row]) -> dict[str, dict[str, float | None]]:
    """Per subject: the medians of its agent-facing totals and of its harness work."""
    ran = counted(rows)
    found: dict[str, dict[str, float | None]] = {}
    for subject in sorted({r["arm"] for r in ran}):
        totals = [r.get("totals") or {} for r in ran if r["arm"] == subject]
        found[subject] = {
            "runs": float(len(totals)),
            "elapsed_ms": median(t.get("elapsed_ms") or 0.0 for t in totals),
            "tool_calls": median((t.get("tool_calls") or {}).get("total", 0) for t in totals),
            "estimated_tokens": median(t.get("estimated_tokens") or 0 for t in totals),
            "harness_ms": median((t.get("harness") or {}).get("elapsed_ms") or 0.0
                                 for t in totals),
            "harness_commands": median((t.get("harness") or {}).get("harness_command_count")
                                       or 0 for t in totals),
        }
    return found


def by_transport(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows grouped by remote transport: latency is compared only inside a group."""
    groups: dict[str, list[Row]] = {}
    for row in counted(rows):
        groups.setdefault(row.get("transport") or "n/a", []).append(row)
    return dict(sorted(groups.items()))
