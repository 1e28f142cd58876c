"""A sweep's summary: every figure the report shows, from the rows alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_wfbench.aggregate.compare import PairedComparison, PassK, paired_comparison, pass_k
from pytest_wfbench.aggregate.figures import (
    METRICS,
    GroupFigures,
    Row,
    TaskArm,
    combine_medians,
    group_medians,
    groups_in_run_order,
)
from pytest_wfbench.aggregate.health import ArmHealth, Health, arm_health_at
from pytest_wfbench.aggregate.savings import (
    OverallSaving,
    TaskSaving,
    overall_savings,
    task_saving,
)
from pytest_wfbench.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Interval, wilson_interval
from pytest_wfbench.table import Table, gather

DEFAULT_BASELINE = "baseline"


@dataclass(frozen=True)
class Settings:
    """How uncertainty is computed. The defaults are fixed, so that the same rows
    always give the same report."""

    confidence: float = 0.95
    seed: int = DEFAULT_SEED
    """Of the bootstrap."""
    resamples: int = DEFAULT_RESAMPLES
    detectable_difference: float = 0.10
    """The difference in resolve rate the "too small to tell" line plans for."""
    power: float = 0.8


@dataclass
class ArmSummary:
    """An arm over all its tasks."""

    arm: str
    tasks: int
    """Tasks where the arm has counted rows."""
    attempts: int
    valid: int
    resolved: int
    skipped: int
    excluded: list[Row]
    error_counts: dict[str, int]
    medians: dict[str, float | None]
    """Per metric, the mean of the arm's per-task medians (see combine_medians)."""
    health: ArmHealth
    pass_k: list[PassK]
    resolve_interval: Interval | None
    """Wilson, over the arm's counted runs pooled across tasks."""


@dataclass
class Summary:
    cells: list[TaskArm]
    """Per (task, arm), by task then arm."""
    arms: list[ArmSummary]
    baseline_arm: str | None
    task_savings: list[TaskSaving]
    """Per (task, arm) against the baseline, by task then arm."""
    savings: dict[str, OverallSaving]
    """Arm -> its savings over all tasks against the baseline."""
    comparisons: dict[str, PairedComparison]
    """Arm -> its paired comparison of resolve rates against the baseline."""
    skipped: list[Row]
    rows: int
    settings: Settings = field(default_factory=Settings)

    @property
    def health(self) -> dict[str, Health]:
        return {arm.arm: arm.health.status for arm in self.arms}

    @property
    def unusable(self) -> list[str]:
        return [arm.arm for arm in self.arms if arm.health.status is Health.UNUSABLE]

    def arm(self, name: str) -> ArmSummary:
        return next(arm for arm in self.arms if arm.arm == name)


def summarize(rows: Sequence[Row], baseline_arm: str | None = None,
              settings: Settings | None = None) -> Summary:
    """Figures per (task, arm) and per arm, health, and against the baseline arm
    (``baseline`` unless given; none when it is not in the sweep) savings and a
    paired comparison. Rows are taken in the order (task, arm, run), whatever
    order they came in; tool-cost lane rows do not belong here."""
    table = Table.of(rows)
    return summarize_table(table, table.positions, baseline_arm, settings)


def summarize_table(table: Table, positions: Sequence[int], baseline_arm: str | None = None,
                    settings: Settings | None = None) -> Summary:
    """:func:`summarize` of these rows of the table."""
    settings = settings or Settings()
    tasks_at, arms_at = gather(table.obj("task"), positions), gather(table.obj("arm"), positions)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, task, arm in zip(positions, tasks_at, arms_at, strict=True):
        key = (str(task), str(arm))
        group = groups.get(key)
        if group is None:
            groups[key] = [i]
        else:
            group.append(i)
    keys = sorted(groups)
    per_cell = dict(zip(keys, groups_in_run_order(table, [groups[key] for key in keys]),
                        strict=True))
    tasks = sorted({task for task, _ in per_cell})
    arms = sorted({arm for _, arm in per_cell})
    figures = GroupFigures(table, list(per_cell.values()))
    medians = group_medians(table, figures.counted)
    cells = {key: figures.task_arm(n, *key, found)
             for n, (key, found) in enumerate(zip(per_cell, medians, strict=True))}
    by_arm = {arm: [cells[(t, arm)] for t in tasks if (t, arm) in cells] for arm in arms}
    positions_of_arm: dict[str, list[int]] = {arm: [] for arm in arms}
    for (_, arm), group in per_cell.items():
        positions_of_arm[arm] += group
    summaries = [_arm_summary(arm, by_arm[arm], table, positions_of_arm[arm], settings)
                 for arm in arms]
    baseline = baseline_arm if baseline_arm is not None else DEFAULT_BASELINE
    if baseline not in by_arm:
        baseline = ""
    task_savings: list[TaskSaving] = []
    overall: dict[str, OverallSaving] = {}
    comparisons: dict[str, PairedComparison] = {}
    if baseline:
        pairs_by_arm = {arm: [(cells[(t, arm)], cells[(t, baseline)]) for t in tasks
                              if (t, arm) in cells and (t, baseline) in cells]
                        for arm in arms if arm != baseline}
        overall = overall_savings(pairs_by_arm, seed=settings.seed,
                                  resamples=settings.resamples, confidence=settings.confidence)
        for arm, pairs in pairs_by_arm.items():
            comparisons[arm] = paired_comparison(
                arm, baseline, pairs, confidence=settings.confidence,
                detectable_difference=settings.detectable_difference, power=settings.power)
        task_savings = [task_saving(cells[(t, arm)], cells[(t, baseline)])
                        for t in tasks for arm in arms
                        if arm != baseline and (t, arm) in cells and (t, baseline) in cells
                        and cells[(t, arm)].valid and cells[(t, baseline)].valid]
    status = table.texts("status")
    codes, skipped = status.codes, status.code("skipped")
    return Summary(
        cells=[cells[(t, a)] for t in tasks for a in arms if (t, a) in cells],
        arms=summaries, baseline_arm=baseline or None, task_savings=task_savings,
        savings=overall, comparisons=comparisons,
        skipped=[table.row(i) for group in per_cell.values() for i in group
                 if codes[i] == skipped],
        rows=len(positions), settings=settings,
    )


def _arm_summary(arm: str, per_task: list[TaskArm], table: Table, positions: list[int],
                 settings: Settings) -> ArmSummary:
    valid = sum(t.valid for t in per_task)
    resolved = sum(t.resolved for t in per_task)
    errors: dict[str, int] = {}
    for t in per_task:
        for kind, n in t.error_counts.items():
            errors[kind] = errors.get(kind, 0) + n
    return ArmSummary(
        arm=arm, tasks=sum(1 for t in per_task if t.valid),
        attempts=sum(t.attempts for t in per_task), valid=valid, resolved=resolved,
        skipped=sum(t.skipped for t in per_task),
        excluded=[r for t in per_task for r in t.excluded],
        error_counts=dict(sorted(errors.items())),
        medians={name: combine_medians(per_task, name) for name in METRICS},
        health=arm_health_at(table, positions), pass_k=pass_k(per_task),
        resolve_interval=wilson_interval(resolved, valid, settings.confidence) if valid else None,
    )
