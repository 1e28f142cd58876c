"""Aggregation of a sweep's rows (SPEC §7). Pure: plain rows in, plain data out."""

from __future__ import annotations

import enum
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.outcomes import ERROR_KINDS, ErrorClass

Row = dict[str, Any]

METRICS = ("tokens", "estimated_tokens", "cost_usd", "duration_s", "num_turns", "diff_files",
           "diff_insertions", "diff_deletions")
# Savings are reported for what an arm spends, not for churn.
SAVINGS_METRICS = ("tokens", "estimated_tokens", "cost_usd", "duration_s", "num_turns")


class Health(enum.Enum):
    UNKNOWN = "UNKNOWN"
    OBSERVED_OK = "OBSERVED_OK"
    DEGRADED = "DEGRADED"
    UNUSABLE = "UNUSABLE"


def total_tokens(row: Row) -> int:
    """All model tokens of a row: input, cache creation, cache read and output."""
    return sum(int(row.get(key) or 0) for key in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))


def metric(row: Row, name: str) -> float | None:
    if name == "tokens":
        return float(total_tokens(row))
    value = row.get(name)
    return None if value is None else float(value)


def median_of(rows: Sequence[Row], name: str) -> float | None:
    """Median over counted rows; null when no row has it, and for cost null
    when any counted row's cost is null (unknown is never zero)."""
    values = [metric(row, name) for row in rows]
    if not values or (name == "cost_usd" and any(v is None for v in values)):
        return None
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def is_failure(row: Row) -> bool:
    kind = row.get("error_kind")
    return kind is not None and ERROR_KINDS[kind].error_class is not ErrorClass.VALID_NEGATIVE


@dataclass
class Group:
    """Figures of one (task, arm), or of one arm over all its tasks."""

    task: str | None
    task_class: str | None
    arm: str
    attempts: int = 0
    valid: int = 0
    resolved: int = 0
    skipped: int = 0
    excluded: list[Row] = field(default_factory=list)
    error_counts: dict[str, int] = field(default_factory=dict)
    medians: dict[str, float | None] = field(default_factory=dict)


def group(rows: Sequence[Row], task: str | None, arm: str) -> Group:
    ran = [r for r in rows if r.get("status") == "ran"]
    counted_rows = [r for r in ran if r.get("counted")]
    first = rows[0] if rows else {}
    return Group(
        task=task, task_class=first.get("class") if task else None, arm=arm,
        attempts=len(ran), valid=len(counted_rows),
        resolved=sum(1 for r in counted_rows if r.get("resolved")),
        skipped=sum(1 for r in rows if r.get("status") == "skipped"),
        excluded=[r for r in ran if not r.get("counted")],
        error_counts=dict(Counter(r["error_kind"] for r in ran if r.get("error_kind"))),
        medians={name: median_of(counted_rows, name) for name in METRICS},
    )


def health(rows: Iterable[Row]) -> Health:
    fresh = [r for r in rows if r.get("status") == "ran" and not r.get("reused")]
    if not fresh:
        return Health.UNKNOWN
    failures = sum(1 for r in fresh if is_failure(r))
    admissible = sum(1 for r in fresh if r.get("counted"))
    if failures and not admissible:
        return Health.UNUSABLE
    return Health.DEGRADED if failures else Health.OBSERVED_OK


def savings(baseline: float | None, value: float | None) -> float | None:
    """(baseline - arm) / baseline in %, or None when it cannot be computed."""
    if baseline is None or value is None or baseline == 0:
        return None
    return (baseline - value) / baseline * 100.0


@dataclass
class Summary:
    cells: list[Group]
    arms: list[Group]
    health: dict[str, Health]
    baseline_arm: str | None
    savings: dict[str, dict[str, float | None]]
    """arm -> metric -> % saved against the baseline arm."""
    skipped: list[Row]
    rows: int

    @property
    def unusable(self) -> list[str]:
        return [arm for arm, status in self.health.items() if status is Health.UNUSABLE]


def _ordered(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def summarize(rows: Sequence[Row], baseline_arm: str | None = None) -> Summary:
    """Group rows per (task, arm) and per arm; health per arm; savings against
    the baseline arm when it is in the sweep (``baseline`` by default)."""
    per_cell: dict[tuple[str, str], list[Row]] = {}
    per_arm: dict[str, list[Row]] = {}
    for r in rows:
        per_cell.setdefault((r["task"], r["arm"]), []).append(r)
        per_arm.setdefault(r["arm"], []).append(r)
    tasks = _ordered(r["task"] for r in rows)
    arms = list(per_arm)
    cells = [group(per_cell[(task, arm)], task, arm)
             for task in tasks for arm in arms if (task, arm) in per_cell]
    arm_groups = [group(per_arm[arm], None, arm) for arm in arms]
    baseline = baseline_arm if baseline_arm is not None else "baseline"
    if baseline not in per_arm:
        baseline = ""
    saved: dict[str, dict[str, float | None]] = {}
    if baseline:
        base = next(g for g in arm_groups if g.arm == baseline)
        for arm_group in arm_groups:
            if arm_group.arm != baseline:
                saved[arm_group.arm] = {
                    name: savings(base.medians.get(name), arm_group.medians.get(name))
                    for name in SAVINGS_METRICS
                }
    return Summary(
        cells=cells, arms=arm_groups,
        health={arm: health(per_arm[arm]) for arm in arms},
        baseline_arm=baseline or None, savings=saved,
        skipped=[r for r in rows if r.get("status") == "skipped"], rows=len(rows),
    )
