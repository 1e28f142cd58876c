"""The promotion gate: should a candidate arm's skill files replace its
incumbent's? A pure function from rows to the evidence written to
promotion.json, verdict and reasons included."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_wfbench.aggregate import (
    Health,
    Row,
    TaskArm,
    arm_health,
    is_fresh,
    metric,
    pooled_saving,
    row_order,
    task_arm,
)
from pytest_wfbench.decisions.policy import PromotionContext, PromotionPolicy
from pytest_wfbench.stats import Interval, ratio_of_sums_intervals, stratified_median_intervals

GATE_FIELDS = ("cell_id", "task", "arm", "run", "status", "counted", "reused")
"""What :func:`decide` reads of a row besides its metric, given the figures."""
Values = npt.NDArray[np.float64]
NAN = float("nan")
EVIDENCE_VERSION = 1
PROMOTE = "promote"
KEEP_INCUMBENT = "keep_incumbent"


def improvement(incumbent: float | None, candidate: float | None) -> float | None:
    """How much less the candidate spends, in % of the incumbent: positive is
    better. None when unknown, or when the incumbent spent nothing and the
    candidate something (a regression of no finite size)."""
    if incumbent is None or candidate is None:
        return None
    if incumbent == 0:
        return 0.0 if candidate == 0 else None
    return (incumbent - candidate) / incumbent * 100.0


def improvements(incumbent: Values, candidate: Values) -> Values:
    """:func:`improvement` of each pair (NaN for None), all at once."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        value = (incumbent - candidate) / incumbent * 100.0
    return np.where(incumbent == 0, np.where(candidate == 0, 0.0, NAN), value)


@dataclass(frozen=True)
class Condition:
    name: str
    required: bool
    held: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "required": self.required, "held": self.held,
                "detail": self.detail}


@dataclass(frozen=True)
class Weighed:
    """What the gate weighs of a candidate's and its incumbent's rows, a task
    by its text (as the report's figures take it)."""

    ran_tasks: list[str]
    """The tasks where either arm has a row that ran, sorted."""
    not_run: list[str]
    """The other tasks of their rows, sorted."""
    figures: dict[str, dict[str, TaskArm]]
    """Arm -> task (of ran_tasks) -> its figures (empty: the arm has no row of it)."""
    values: dict[str, dict[str, list[float]]]
    """Arm -> task -> the metric of each counted run, in row_order (NaN: null)."""
    health: dict[str, Health]
    excluded: list[str]
    """The cell ids of the candidate's fresh runs not counted, in row_order."""


def decide(rows: Iterable[Row], candidate: str, incumbent: str, policy: PromotionPolicy,
           context: PromotionContext,
           figures_of: Mapping[tuple[str, str], TaskArm] | None = None) -> dict[str, Any]:
    """The evidence for or against promoting ``candidate`` over ``incumbent``,
    as a JSON-able dict (promotion.json). Only these two arms' rows are read.

    The verdict is ``promote`` when every required condition holds, else
    ``keep_incumbent``; an aborted or cancelled sweep, an UNUSABLE arm and any
    excluded fresh candidate run are conditions that can never be waived.

    ``figures_of`` (by task and arm) are the figures of the same rows already
    taken (the report's summary): then a row need only have what else is read
    (GATE_FIELDS and the metric's), and the health of both arms be known."""
    return weigh(weighed(rows, candidate, incumbent, policy, context, figures_of),
                 candidate, incumbent, policy, context)


def weighed(rows: Iterable[Row], candidate: str, incumbent: str, policy: PromotionPolicy,
            context: PromotionContext,
            figures_of: Mapping[tuple[str, str], TaskArm] | None = None) -> Weighed:
    """What :func:`decide` weighs of these rows."""
    own = sorted((r for r in rows if r.get("arm") in (candidate, incumbent)), key=row_order)
    by_arm: dict[str, list[Row]] = {candidate: [], incumbent: []}
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in own:  # a task by its text, as the report's figures take it
        by_arm[r["arm"]].append(r)
        groups.setdefault((r["arm"], str(r.get("task"))), []).append(r)
    ran_tasks = sorted({str(r.get("task")) for r in own if r.get("status") == "ran"})
    own_rows = {arm: {task: groups.get((arm, task), []) for task in ran_tasks}
                for arm in (candidate, incumbent)}
    return Weighed(
        ran_tasks=ran_tasks,
        not_run=sorted({str(r.get("task")) for r in own} - set(ran_tasks)),
        figures={arm: {task: _figures(rows_of, task, arm, figures_of)
                       for task, rows_of in tasks_of.items()}
                 for arm, tasks_of in own_rows.items()},
        values={arm: {task: [NAN if (value := metric(r, policy.metric)) is None else value
                             for r in rows_of if r.get("status") == "ran" and r.get("counted")]
                      for task, rows_of in tasks_of.items()}
                for arm, tasks_of in own_rows.items()},
        health={arm: context.health.get(arm) or arm_health(by_arm[arm]).status
                for arm in (candidate, incumbent)},
        excluded=[str(r["cell_id"]) for r in by_arm[candidate]
                  if is_fresh(r) and not r.get("counted")])


def weigh(weighed: Weighed, candidate: str, incumbent: str, policy: PromotionPolicy,
          context: PromotionContext) -> dict[str, Any]:
    """:func:`decide`'s evidence of what it weighs."""
    figures, values, health = weighed.figures, weighed.values, weighed.health
    excluded = weighed.excluded
    drawn = [t for t in weighed.ran_tasks if figures[candidate][t].valid >= 2
             and figures[incumbent][t].valid >= 2
             and len(values[candidate][t]) >= 2 and len(values[incumbent][t]) >= 2]
    # Of each: the interval stratified_bootstrap gives of improvement(median_of(the
    # incumbent's drawn), median_of(the candidate's drawn)), all resamples at once.
    intervals = dict(zip(drawn, stratified_median_intervals(
        [[values[candidate][t], values[incumbent][t]] for t in drawn],
        lambda medians: improvements(medians[1], medians[0]),
        all_known=policy.metric == "cost_usd", seed=policy.seed,
        resamples=policy.resamples, confidence=policy.confidence), strict=True))
    tasks = [_task_evidence(figures[candidate][t], figures[incumbent][t], policy,
                            intervals.get(t)) for t in weighed.ran_tasks]
    overall = _overall_evidence(figures[candidate], figures[incumbent], tasks, policy)
    conditions = _conditions(policy, context, health, excluded, tasks, overall)
    failed = [c for c in conditions if c.required and not c.held]
    verdict = KEEP_INCUMBENT if failed else PROMOTE
    if failed:
        reasons = [c.detail for c in failed]
    else:
        reasons = [f"every required condition held: {policy.metric} improved by "
                   f"{overall['improvement_pct']:.1f}% over {overall['tasks']} tasks"]
    now = context.now.astimezone(UTC)
    return {
        "schema_version": EVIDENCE_VERSION,
        "candidate": candidate,
        "incumbent": incumbent,
        "verdict": verdict,
        "reasons": reasons,
        "policy": policy.to_json(),
        "sweep_state": context.sweep_state,
        "health": {arm: status.value for arm, status in health.items()},
        "metric": policy.metric,
        "tasks": tasks,
        "tasks_not_run": weighed.not_run,
        "excluded_candidate_runs": excluded,
        "overall": overall,
        "conditions": [c.to_json() for c in conditions],
        "recorded_at": _iso(now),
        "expires_at": _iso(now + timedelta(days=policy.expiry_days)),
        "digests": context.digests.to_json(),
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _resolved_task(figures: TaskArm, policy: PromotionPolicy) -> bool:
    return figures.valid > 0 and figures.resolved >= policy.resolved_share * figures.valid


def _side(figures: TaskArm, policy: PromotionPolicy) -> dict[str, Any]:
    return {"scored_runs": figures.valid, "resolved_runs": figures.resolved,
            "excluded_runs": len(figures.excluded), "resolved": _resolved_task(figures, policy),
            "median": figures.medians.get(policy.metric)}


def _interval(interval: Interval | None) -> list[float] | None:
    return None if interval is None else interval.to_json()


def _figures(rows: list[Row], task: str, arm: str,
             figures_of: Mapping[tuple[str, str], TaskArm] | None) -> TaskArm:
    """The figures of one task and arm: those already taken, else of its rows
    (none: an arm that did not run the task)."""
    found = None if figures_of is None else figures_of.get((task, arm))
    if found is not None:
        return found
    if figures_of is not None and rows:
        raise ValueError(f"no figures of {arm} on {task}, whose rows are not whole")
    return task_arm(rows, task, arm)


def _task_evidence(candidate: TaskArm, incumbent: TaskArm, policy: PromotionPolicy,
                   interval: Interval | None) -> dict[str, Any]:
    """One task: both sides, and the improvement of the metric's median with its
    bootstrap interval (each arm's counted runs resampled on their own)."""
    return {
        "task": candidate.task,
        "candidate": _side(candidate, policy),
        "incumbent": _side(incumbent, policy),
        "improvement_pct": improvement(incumbent.medians.get(policy.metric),
                                       candidate.medians.get(policy.metric)),
        "interval_pct": _interval(interval),
    }


def _overall_evidence(candidate: dict[str, TaskArm], incumbent: dict[str, TaskArm],
                      tasks: list[dict[str, Any]], policy: PromotionPolicy) -> dict[str, Any]:
    """All tasks where both arms have scored runs: the improvement of the sum of
    per-task medians, with an interval that resamples tasks."""
    both = [t["task"] for t in tasks if t["candidate"]["scored_runs"]
            and t["incumbent"]["scored_runs"]]
    pairs = [(incumbent[t].medians.get(policy.metric), candidate[t].medians.get(policy.metric))
             for t in both]
    known = [(i, c) for i, c in pairs if i is not None and c is not None]
    value = interval = None
    if both and len(known) == len(pairs):
        value = pooled_saving(known)
        # cluster_bootstrap(known, pooled_saving), its exact sums all at once
        interval = ratio_of_sums_intervals(
            [([i for i, _ in known], [c for _, c in known])], seed=policy.seed,
            resamples=policy.resamples, confidence=policy.confidence)[0]

    def totals(side: str, figures: dict[str, TaskArm]) -> dict[str, Any]:
        medians = [figures[t].medians.get(policy.metric) for t in both]
        return {"scored_runs": sum(f.valid for f in figures.values()),
                "resolved_runs": sum(f.resolved for f in figures.values()),
                "resolved_tasks": sum(1 for t in tasks if t[side]["resolved"]),
                "median_sum": None if None in medians
                else sum(m for m in medians if m is not None)}

    return {"tasks": len(both), "candidate": totals("candidate", candidate),
            "incumbent": totals("incumbent", incumbent), "improvement_pct": value,
            "interval_pct": _interval(interval)}


def _conditions(policy: PromotionPolicy, context: PromotionContext, health: dict[str, Health],
                excluded: list[str], tasks: list[dict[str, Any]],
                overall: dict[str, Any]) -> list[Condition]:
    metric = policy.metric
    unusable = [arm for arm, status in health.items() if status is Health.UNUSABLE]
    short = [f"{t['task']} (candidate {t['candidate']['scored_runs']}, incumbent "
             f"{t['incumbent']['scored_runs']})" for t in tasks
             if min(t["candidate"]["scored_runs"], t["incumbent"]["scored_runs"])
             < policy.min_runs]
    unpaired = [f"{t['task']} (candidate {t['candidate']['scored_runs']}, incumbent "
                f"{t['incumbent']['scored_runs']})" for t in tasks
                if t["candidate"]["scored_runs"] != t["incumbent"]["scored_runs"]]
    resolved = (overall["candidate"]["resolved_tasks"], overall["incumbent"]["resolved_tasks"])
    gain, interval = overall["improvement_pct"], overall["interval_pct"]
    regressed = [f"{t['task']} ({_pct(t['improvement_pct'])})" for t in tasks
                 if t["improvement_pct"] is None
                 or t["improvement_pct"] < -policy.max_task_regression]
    return [
        Condition("sweep_complete", True, context.sweep_state == "complete",
                  f"the sweep is {context.sweep_state}"
                  + ("" if context.sweep_state == "complete" else ": its evidence is partial")),
        Condition("arms_usable", True, not unusable,
                  f"UNUSABLE arms: {', '.join(unusable)}" if unusable
                  else "neither arm is UNUSABLE"),
        Condition("no_excluded_candidate_runs", True, not excluded,
                  f"excluded candidate runs: {', '.join(excluded)}" if excluded
                  else "no candidate run was excluded"),
        Condition("min_runs", True, bool(tasks) and not short,
                  "no task ran" if not tasks else
                  f"fewer than {policy.min_runs} scored runs: {', '.join(short)}" if short
                  else f"every task has at least {policy.min_runs} scored runs for both arms"),
        Condition("paired_runs", True, bool(tasks) and not unpaired,
                  "no task ran" if not tasks else
                  f"different numbers of scored runs: {', '.join(unpaired)}" if unpaired
                  else "both arms have the same number of scored runs on every task"),
        Condition("resolved_tasks", True, resolved[0] >= resolved[1],
                  f"candidate resolved {resolved[0]} tasks, incumbent {resolved[1]}"),
        Condition("min_improvement", True, gain is not None and gain >= policy.min_improvement,
                  f"{metric} is not known on every task" if gain is None else
                  f"{metric} improved by {_pct(gain)} overall (minimum "
                  f"{policy.min_improvement:g}%)"),
        Condition("max_task_regression", True, bool(tasks) and not regressed,
                  f"tasks worse by more than {policy.max_task_regression:g}% or not "
                  f"comparable: {', '.join(regressed)}" if regressed
                  else f"no task worse by more than {policy.max_task_regression:g}%"),
        Condition("significance", policy.require_significance,
                  interval is not None and interval[0] > 0,
                  "no interval for the overall improvement" if interval is None else
                  f"{policy.confidence:.0%} interval of the improvement "
                  f"{_pct(interval[0])} to {_pct(interval[1])}"
                  + (" lies above zero" if interval[0] > 0 else " includes or is below zero")),
    ]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"
