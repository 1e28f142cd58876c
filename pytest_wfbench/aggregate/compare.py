"""Resolve rates compared: an arm against the baseline on the same (task, run)
pairs, pass@k and pass^k per arm, and how much evidence it would take to tell
arms apart when the sweep cannot."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_wfbench.aggregate.figures import TaskArm
from pytest_wfbench.stats import (
    Interval,
    PairedTable,
    SampleSize,
    exact_mcnemar,
    paired_difference_interval,
    pass_k_series,
    sample_size,
)


@dataclass
class PairedComparison:
    """An arm against the baseline over (task, run) pairs where both rows count:
    run r of the arm with run r of the baseline on the same task."""

    arm: str
    baseline_arm: str
    table: PairedTable
    """first = the arm, second = the baseline."""
    tasks: int
    """Tasks with at least one pair."""
    runs: int
    """The most pairs on one task."""
    interval: Interval | None
    """Of the arm's resolve rate minus the baseline's (Newcombe's method 10)."""
    p_value: float | None
    """Exact McNemar, two-sided."""
    needed: SampleSize | None = None
    """When the sweep is too small to tell the arms apart: what it would take to
    detect the settings' difference."""

    @property
    def difference(self) -> float | None:
        return self.table.difference if self.table.pairs else None

    @property
    def too_small(self) -> bool:
        """No pair, or an interval for the difference that includes zero."""
        return self.interval is None or self.interval.contains(0.0)


def paired_comparison(
    arm: str, baseline_arm: str, pairs: Sequence[tuple[TaskArm, TaskArm]], *,
    confidence: float = 0.95, detectable_difference: float = 0.10, power: float = 0.8,
) -> PairedComparison:
    """Pair the counted runs of each (arm, baseline) per-task figures by run."""
    outcomes: list[tuple[bool, bool]] = []  # (the arm resolved, the baseline did) per pair
    per_task: list[int] = []
    for arm_figures, base_figures in pairs:
        base_by_run = dict(base_figures.counted_runs)
        paired = [(bool(mine), bool(base_by_run[run])) for run, mine in arm_figures.counted_runs
                  if run in base_by_run]
        if paired:
            per_task.append(len(paired))
            outcomes += paired
    counted = Counter(outcomes)
    table = PairedTable(both=counted[True, True], first_only=counted[True, False],
                        second_only=counted[False, True], neither=counted[False, False])
    comparison = PairedComparison(
        arm=arm, baseline_arm=baseline_arm, table=table, tasks=len(per_task),
        runs=max(per_task, default=0),
        interval=paired_difference_interval(table, confidence) if table.pairs else None,
        p_value=exact_mcnemar(table.first_only, table.second_only) if table.pairs else None,
    )
    if comparison.too_small:
        # Without pairs, plan for the hardest baseline rate: one half.
        rate = table.second_rate if table.pairs else 0.5
        comparison.needed = sample_size(rate, detectable_difference, alpha=1.0 - confidence,
                                        power=power)
    return comparison


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k of an arm: the mean over its tasks with at least k
    counted runs of each task's unbiased estimate."""

    k: int
    tasks: int
    pass_at_k: float
    pass_hat_k: float


def pass_k(per_task: Sequence[TaskArm]) -> list[PassK]:
    """For k from 1 to the most counted runs an arm has on a task."""
    counted = [t for t in per_task if t.valid]
    series: dict[tuple[int, int], tuple[list[float], list[float]]] = {}
    for t in counted:
        if (t.valid, t.resolved) not in series:
            series[(t.valid, t.resolved)] = pass_k_series(t.valid, t.resolved)
    columns = [series[(t.valid, t.resolved)] for t in counted]
    out = []
    for k in range(1, max((t.valid for t in counted), default=0) + 1):
        eligible = [column for t, column in zip(counted, columns, strict=True) if t.valid >= k]
        out.append(PassK(
            k=k, tasks=len(eligible),
            # Lists, not generators: fmean counts a generator item by item.
            pass_at_k=statistics.fmean([at[k - 1] for at, _ in eligible]),
            pass_hat_k=statistics.fmean([hat[k - 1] for _, hat in eligible]),
        ))
    return out
