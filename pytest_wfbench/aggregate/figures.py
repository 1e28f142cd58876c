"""Per (task, arm) figures: counts, error kinds and the median of each metric
over the rows counted in medians (SPEC §5, §7), and the rule that combines an
arm's per-task medians into one figure."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.stats import Interval, wilson_interval

Row = dict[str, Any]

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens")
METRICS = ("tokens", *USAGE_FIELDS, "estimated_tokens", "cost_usd", "session_duration_s",
           "duration_s", "harness_overhead_s", "num_turns", "diff_files", "diff_insertions",
           "diff_deletions")
"""``tokens`` is each row's total of the usage fields; ``session_duration_s`` the
arm's own time, ``duration_s`` the cell's wall time and ``harness_overhead_s``
their difference, each reported on its own."""
SAVINGS_METRICS = ("tokens", *USAGE_FIELDS, "estimated_tokens", "cost_usd",
                   "session_duration_s", "num_turns")
"""What an arm spends: savings are reported for these, not for churn or for the
harness's share of a cell."""


def row_order(row: Row) -> tuple[str, str, int]:
    """Rows in a stable order: by task, arm and run."""
    return (str(row.get("task")), str(row.get("arm")), int(row.get("run") or 0))


def total_tokens(row: Row) -> int:
    """All model tokens of a row: input, cache creation, cache read and output."""
    get = row.get  # the four fields of USAGE_FIELDS, summed in that order
    return (int(get("input_tokens") or 0) + int(get("cache_creation_input_tokens") or 0)
            + int(get("cache_read_input_tokens") or 0) + int(get("output_tokens") or 0))


def metric(row: Row, name: str) -> float | None:
    if name == "tokens":
        return float(total_tokens(row))
    value = row.get(name)
    return None if value is None else float(value)


def median_of(rows: Sequence[Row], name: str) -> float | None:
    """Median over counted rows; null when no row has it, and for cost null
    when any counted row's cost is null (unknown is never zero)."""
    if name == "tokens":
        present = [float(total_tokens(row)) for row in rows]
    else:  # metric() inlined: a large sweep asks this of every row and metric
        present = [float(value) for row in rows if (value := row.get(name)) is not None]
    if not rows or (name == "cost_usd" and len(present) < len(rows)):
        return None
    return statistics.median(present) if present else None


MEASURED = tuple(name for name in METRICS if name != "tokens")
"""The metrics a row has as fields (``tokens`` is their total of USAGE_FIELDS)."""


def medians_of(rows: Sequence[Row]) -> dict[str, float | None]:
    """:func:`median_of` of every metric of METRICS, in that order: each row's
    fields read once (a pass over many rows costs more than the work on them)."""
    if not rows:
        return dict.fromkeys(METRICS)
    columns = dict(zip(MEASURED, zip(*[tuple(map(row.get, MEASURED)) for row in rows],
                                      strict=True), strict=True))
    usage = [columns[name] for name in USAGE_FIELDS]
    totals = [float(int(a or 0) + int(b or 0) + int(c or 0) + int(d or 0))
              for a, b, c, d in zip(*usage, strict=True)]  # total_tokens, in its order
    medians: dict[str, float | None] = {"tokens": statistics.median(totals)}
    for name in MEASURED:
        present = [float(value) for value in columns[name] if value is not None]
        if name == "cost_usd" and len(present) < len(rows):
            medians[name] = None  # unknown is never zero
        else:
            medians[name] = statistics.median(present) if present else None
    return medians


@dataclass
class TaskArm:
    """Figures of one (task, arm) over its rows."""

    task: str
    task_class: str | None
    arm: str
    attempts: int = 0
    """Rows that ran (counted or not)."""
    valid: int = 0
    """Rows counted in medians and resolve denominators."""
    resolved: int = 0
    skipped: int = 0
    excluded: list[Row] = field(default_factory=list)
    error_counts: dict[str, int] = field(default_factory=dict)
    medians: dict[str, float | None] = field(default_factory=dict)
    counted_rows: list[Row] = field(default_factory=list)
    """The counted rows, by run: what pairing and resampling work on."""

    @property
    def rate(self) -> float | None:
        return self.resolved / self.valid if self.valid else None

    def resolve_interval(self, confidence: float = 0.95) -> Interval | None:
        return wilson_interval(self.resolved, self.valid, confidence) if self.valid else None


def task_arm(rows: Iterable[Row], task: str, arm: str) -> TaskArm:
    """The figures of one (task, arm) from its rows."""
    return task_arm_of_ordered(sorted(rows, key=row_order), task, arm)


def task_arm_of_ordered(ordered: Sequence[Row], task: str, arm: str) -> TaskArm:
    """:func:`task_arm` of rows already in :func:`row_order`."""
    ran = [r for r in ordered if r.get("status") == "ran"]
    counted = [r for r in ran if r.get("counted")]
    first = ordered[0] if ordered else {}
    return TaskArm(
        task=task, task_class=first.get("class"), arm=arm,
        attempts=len(ran), valid=len(counted),
        resolved=sum(1 for r in counted if r.get("resolved")),
        skipped=sum(1 for r in ordered if r.get("status") == "skipped"),
        excluded=[r for r in ran if not r.get("counted")],
        error_counts=dict(sorted(Counter(str(r["error_kind"]) for r in ran
                                         if r.get("error_kind")).items())),
        medians=medians_of(counted),
        counted_rows=counted,
    )


def combine_medians(per_task: Sequence[TaskArm], name: str) -> float | None:
    """The arm rule: the mean of the arm's per-task medians of ``name`` over the
    tasks where it has counted rows, so that every task weighs the same whatever
    its number of runs. Tasks without the figure are left out (no script arm has
    turns, no agent arm estimated tokens); cost is null when any of them has an
    unknown cost, since unknown is never zero."""
    medians = [t.medians.get(name) for t in per_task if t.valid]
    if not medians or (name == "cost_usd" and any(m is None for m in medians)):
        return None
    known = [m for m in medians if m is not None]
    return statistics.fmean(known) if known else None
