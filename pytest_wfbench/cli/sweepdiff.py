"""Two sweeps compared, arm by arm, task by task and cell by cell. Pure: two
sweeps' rows (each cell's last) and records in, a :class:`SweepDiff` out.

- Resolve rates: each sweep's rate per arm (counted runs, Wilson interval) and
  the difference new - old over the cells both sweeps counted, paired by cell
  (the same task and run): Newcombe's interval and the exact McNemar test.
- Medians: over the tasks both sweeps counted the arm on, each sweep's arm
  figure (the mean of its per-task medians, the rule of report.md) and their
  difference (the mean of the per-task differences), with the seeded bootstrap
  interval that resamples tasks (as the savings do): it says how the
  difference varies between tasks; with one task there is no interval.
- Cells that changed outcome, and every identity part that differs between the
  two rows of a cell (:mod:`pytest_wfbench.identity`), grouped by what the part
  belongs to: the task (task, base commit, oracle), the arm (its definition
  with its skills' and plugin's bytes, model, effort) or the sweep (sandbox
  backend, harness version).

Tool-cost lane rows take part in the cell comparison only.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.aggregate import Summary, TaskArm, row_order, summarize
from pytest_wfbench.identity import PARTS, differences
from pytest_wfbench.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Interval,
    PairedTable,
    cluster_bootstrap,
    exact_mcnemar,
    paired_difference_interval,
    wilson_interval,
)

Row = dict[str, Any]
METRICS = ("tokens", "cost_usd", "session_duration_s", "duration_s", "num_turns")
"""What an arm spends (and the cell's wall time), compared between sweeps."""
TASK_PARTS = ("task", "base_sha", "oracle")
ARM_PARTS = ("arm", "model", "effort")


@dataclass(frozen=True)
class Rate:
    resolved: int
    valid: int
    interval: Interval | None

    def to_json(self) -> dict[str, Any]:
        return {"resolved": self.resolved, "valid": self.valid,
                "interval": self.interval.to_json() if self.interval else None}


@dataclass(frozen=True)
class MedianDiff:
    metric: str
    old: float | None
    new: float | None
    tasks: int
    """Tasks both sweeps have the figure for: what ``old``, ``new`` and the
    difference are over."""
    difference: float | None
    interval: Interval | None

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "old": self.old, "new": self.new, "tasks": self.tasks,
                "difference": self.difference,
                "interval": self.interval.to_json() if self.interval else None}


@dataclass(frozen=True)
class ArmDiff:
    arm: str
    old: Rate | None
    new: Rate | None
    """None: the arm is not in that sweep."""
    pairs: PairedTable
    """first = new, second = old, over cells both sweeps counted."""
    difference: float | None
    interval: Interval | None
    p_value: float | None
    medians: list[MedianDiff]

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "old": self.old.to_json() if self.old else None,
                "new": self.new.to_json() if self.new else None,
                "pairs": {"both": self.pairs.both, "new_only": self.pairs.first_only,
                          "old_only": self.pairs.second_only, "neither": self.pairs.neither},
                "difference": self.difference,
                "interval": self.interval.to_json() if self.interval else None,
                "p_value": self.p_value, "medians": [m.to_json() for m in self.medians]}


@dataclass(frozen=True)
class TaskArmDiff:
    task: str
    arm: str
    old: Rate | None
    new: Rate | None
    medians: dict[str, tuple[float | None, float | None]]
    """metric -> (old median, new median)."""

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "arm": self.arm,
                "old": self.old.to_json() if self.old else None,
                "new": self.new.to_json() if self.new else None,
                "medians": {name: {"old": old, "new": new}
                            for name, (old, new) in self.medians.items()}}


@dataclass(frozen=True)
class CellChange:
    """A cell in both sweeps whose outcome differs."""

    cell_id: str
    task: str
    arm: str
    old: str
    new: str
    identity: list[str]
    """The identity parts that differ between its two rows (none: same measurement
    conditions, a different result)."""

    def to_json(self) -> dict[str, Any]:
        return {"cell_id": self.cell_id, "task": self.task, "arm": self.arm, "old": self.old,
                "new": self.new, "identity_changes": self.identity}


@dataclass(frozen=True)
class IdentityChange:
    """One identity part that differs, for what it belongs to, and where."""

    part: str
    owner: str
    """The task, the arm, or ``sweep`` that the part belongs to."""
    old: Any
    new: Any
    cells: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"part": self.part, "owner": self.owner, "old": self.old, "new": self.new,
                "cells": self.cells}


@dataclass
class SweepDiff:
    old_sweep: str | None
    new_sweep: str | None
    arms: list[ArmDiff]
    tasks: list[TaskArmDiff]
    changed: list[CellChange]
    identity: list[IdentityChange]
    only_old: list[str]
    only_new: list[str]
    unchanged: int
    """Cells in both sweeps with the same outcome."""
    settings: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """sweep.json settings (and the harness version) that differ: name -> (old, new)."""

    def to_json(self) -> dict[str, Any]:
        return {"old_sweep": self.old_sweep, "new_sweep": self.new_sweep,
                "arms": [a.to_json() for a in self.arms],
                "tasks": [t.to_json() for t in self.tasks],
                "changed_cells": [c.to_json() for c in self.changed],
                "identity_changes": [c.to_json() for c in self.identity],
                "only_in_old": self.only_old, "only_in_new": self.only_new,
                "unchanged_cells": self.unchanged,
                "settings_changes": {k: {"old": o, "new": n}
                                     for k, (o, n) in self.settings.items()}}


def outcome(row: Row) -> str:
    """A cell's outcome in a word or two: resolved, its error kind (excluded when
    it does not count), or skipped."""
    if row.get("status") == "skipped":
        return "skipped"
    if row.get("resolved"):
        return "resolved"
    kind = str(row.get("error_kind") or "unresolved")
    return kind if row.get("counted") else f"{kind} (excluded)"


def _rate(figures: TaskArm | None) -> Rate | None:
    if figures is None:
        return None
    interval = wilson_interval(figures.resolved, figures.valid) if figures.valid else None
    return Rate(figures.resolved, figures.valid, interval)


def _arm_rate(summary: Summary, arm: str) -> Rate | None:
    found = [a for a in summary.arms if a.arm == arm]
    if not found:
        return None
    figures = found[0]
    return Rate(figures.resolved, figures.valid, figures.resolve_interval)


def _paired(old: Sequence[Row], new: Sequence[Row]) -> PairedTable:
    before = {str(r["cell_id"]): bool(r.get("resolved")) for r in old if _counts(r)}
    counts = {"both": 0, "first_only": 0, "second_only": 0, "neither": 0}
    for row in new:
        cell_id = str(row["cell_id"])
        if not _counts(row) or cell_id not in before:
            continue
        mine, theirs = bool(row.get("resolved")), before[cell_id]
        key = ("both" if theirs else "first_only") if mine else (
            "second_only" if theirs else "neither")
        counts[key] += 1
    return PairedTable(**counts)


def _counts(row: Row) -> bool:
    return row.get("status") == "ran" and bool(row.get("counted"))


def _mean_difference(pairs: list[tuple[float, float]]) -> float | None:
    return statistics.fmean(new - old for old, new in pairs) if pairs else None


def _median_diffs(arm: str, old: Mapping[tuple[str, str], TaskArm],
                  new: Mapping[tuple[str, str], TaskArm], *, seed: int,
                  resamples: int) -> list[MedianDiff]:
    """Per metric, over the tasks both sweeps counted the arm on: the arm rule's
    figure (the mean of per-task medians) in each sweep, and their difference."""
    tasks = sorted({t for t, a in old if a == arm} & {t for t, a in new if a == arm})
    both = [(old[(t, arm)], new[(t, arm)]) for t in tasks
            if old[(t, arm)].valid and new[(t, arm)].valid]
    diffs = []
    for name in METRICS:
        values = [(o.medians.get(name), n.medians.get(name)) for o, n in both]
        unknown = name == "cost_usd" and any(o is None or n is None for o, n in values)
        known = [] if unknown else [(float(o), float(n)) for o, n in values
                                    if o is not None and n is not None]
        diffs.append(MedianDiff(
            metric=name, old=statistics.fmean(o for o, _ in known) if known else None,
            new=statistics.fmean(n for _, n in known) if known else None, tasks=len(known),
            difference=_mean_difference(known),
            interval=cluster_bootstrap(known, _mean_difference, seed=seed,
                                       resamples=resamples) if known else None))
    return diffs


def _identity_changes(pairs: Sequence[tuple[Row, Row]]) -> list[IdentityChange]:
    """Each differing identity part, grouped by what it belongs to and its two values."""
    grouped: dict[tuple[int, str, str, str], IdentityChange] = {}
    for old, new in pairs:
        before = old.get("identity") if isinstance(old.get("identity"), dict) else {}
        after = new.get("identity") if isinstance(new.get("identity"), dict) else {}
        assert isinstance(before, dict) and isinstance(after, dict)
        for part in differences(before, after):
            owner = (str(new.get("task")) if part in TASK_PARTS else
                     str(new.get("arm")) if part in ARM_PARTS else "sweep")
            key = (PARTS.index(part), owner, repr(before.get(part)), repr(after.get(part)))
            change = grouped.setdefault(key, IdentityChange(
                part=part, owner=owner, old=before.get(part), new=after.get(part), cells=[]))
            change.cells.append(str(new["cell_id"]))
    return [grouped[key] for key in sorted(grouped)]


def _settings(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    before = {**(old.get("settings") or {}), "harness_version": old.get("harness_version")}
    after = {**(new.get("settings") or {}), "harness_version": new.get("harness_version")}
    return {key: (before.get(key), after.get(key)) for key in sorted({*before, *after})
            if before.get(key) != after.get(key)}


def compare_sweeps(old_rows: Sequence[Row], new_rows: Sequence[Row], *,
                   old_record: Mapping[str, Any] | None = None,
                   new_record: Mapping[str, Any] | None = None,
                   seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES) -> SweepDiff:
    """Compare sweep ``new`` with sweep ``old``. Rows are each cell's last row."""
    old_by_id = {str(r["cell_id"]): r for r in old_rows}
    new_by_id = {str(r["cell_id"]): r for r in new_rows}
    common = [(old_by_id[c], new_by_id[c]) for c in sorted(old_by_id.keys() & new_by_id.keys())]
    changed = [CellChange(cell_id=str(n["cell_id"]), task=str(n.get("task")),
                          arm=str(n.get("arm")), old=outcome(o), new=outcome(n),
                          identity=differences(o.get("identity"), n.get("identity") or {}))
               for o, n in common if outcome(o) != outcome(n)]
    old_agent = [r for r in old_rows if r.get("lane", "agent") == "agent"]
    new_agent = [r for r in new_rows if r.get("lane", "agent") == "agent"]
    old_summary, new_summary = summarize(old_agent), summarize(new_agent)
    old_cells = {(c.task, c.arm): c for c in old_summary.cells}
    new_cells = {(c.task, c.arm): c for c in new_summary.cells}
    arms = []
    for arm in sorted({a for _, a in old_cells} | {a for _, a in new_cells}):
        table = _paired([r for r in old_agent if r.get("arm") == arm],
                        [r for r in new_agent if r.get("arm") == arm])
        arms.append(ArmDiff(
            arm=arm, old=_arm_rate(old_summary, arm), new=_arm_rate(new_summary, arm),
            pairs=table, difference=table.difference if table.pairs else None,
            interval=paired_difference_interval(table) if table.pairs else None,
            p_value=exact_mcnemar(table.first_only, table.second_only) if table.pairs else None,
            medians=_median_diffs(arm, old_cells, new_cells, seed=seed,
                                  resamples=resamples)))
    tasks = [TaskArmDiff(task=task, arm=arm, old=_rate(old_cells.get((task, arm))),
                         new=_rate(new_cells.get((task, arm))),
                         medians={name: (old_cells[(task, arm)].medians.get(name)
                                         if (task, arm) in old_cells else None,
                                         new_cells[(task, arm)].medians.get(name)
                                         if (task, arm) in new_cells else None)
                                  for name in METRICS})
             for task, arm in sorted(old_cells.keys() | new_cells.keys())]
    order = {cell_id: row_order(row) for cell_id, row in {**old_by_id, **new_by_id}.items()}
    return SweepDiff(
        old_sweep=(old_record or {}).get("sweep_id"), new_sweep=(new_record or {}).get("sweep_id"),
        arms=arms, tasks=tasks, changed=sorted(changed, key=lambda c: order[c.cell_id]),
        identity=_identity_changes(common),
        only_old=sorted(old_by_id.keys() - new_by_id.keys(), key=lambda c: order[c]),
        only_new=sorted(new_by_id.keys() - old_by_id.keys(), key=lambda c: order[c]),
        unchanged=len(common) - len(changed),
        settings=_settings(old_record or {}, new_record or {}))


__all__ = ["METRICS", "ArmDiff", "CellChange", "IdentityChange", "MedianDiff", "Rate",
           "SweepDiff", "TaskArmDiff", "compare_sweeps", "outcome"]
