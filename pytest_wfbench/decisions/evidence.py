"""promotion.json's evidence from a report's table: the gate (:func:`decide`)
given the rows of each candidate and its incumbent, a few fields each, the
report's figures, and the digests that determine the evidence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pytest_wfbench.aggregate import Health, Summary, TaskArm, task_arm
from pytest_wfbench.aggregate.figures import groups_in_run_order
from pytest_wfbench.aggregate.health import arm_health_at
from pytest_wfbench.decisions.gate import Weighed, weigh
from pytest_wfbench.decisions.policy import Digests, PromotionContext, PromotionPolicy
from pytest_wfbench.store import CANCELLED, COMPLETE, sweep_state
from pytest_wfbench.table import Table, gather
from pytest_wfbench.tasks.arms import candidate_pairs

DIGEST_FIELDS = ("overlay_digest", "skills_fingerprint", "model", "effort", "identity")
"""What the promotion evidence's digests read of a row."""
GATE_STATES = {COMPLETE: "complete", CANCELLED: "cancelled"}
"""The gate's sweep states; anything else that stopped a sweep early (the
outage breaker, the budget, a dead process) is an aborted sweep to it."""


def promotion_evidence(table: Table, positions: Sequence[int], summary: Summary,
                       record: dict[str, Any]) -> list[dict[str, Any]]:
    """promotion.json's evidence, one per candidate arm that ran beside its
    incumbent: the gate (decisions/) on these rows, with the policy the sweep
    was given and the digests that determine it, dated by the sweep's end (so a
    re-render says the same)."""
    arms = list(map(str, gather(table.obj("arm"), positions)))
    pairs = candidate_pairs(set(arms))
    if not pairs:
        return []
    settings = record.get("settings") or {}
    policy = PromotionPolicy.of_settings(settings.get("promotion") or None)
    of_arm: dict[str, list[int]] = {arm: [] for pair in pairs for arm in pair}
    for i, arm in zip(positions, arms, strict=True):
        if arm in of_arm:
            of_arm[arm].append(i)
    figures = {(cell.task, cell.arm): cell for cell in summary.cells}
    sessions = record.get("sessions") or [{}]
    ended = sessions[-1].get("finished_at") or sessions[-1].get("started_at")
    now = (datetime.fromisoformat(str(ended).replace("Z", "+00:00")) if ended
           else datetime(1970, 1, 1, tzinfo=UTC))
    state = GATE_STATES.get(sweep_state(record), "aborted")
    evidence = []
    for candidate, incumbent in pairs:
        own = [i for i, arm in zip(positions, arms, strict=True) if arm in (candidate, incumbent)]
        digests = _digests(table, own, of_arm[candidate], of_arm[incumbent],
                           str(record.get("harness_version")))
        health = {arm: summary.health[arm] if arm in summary.health
                  else arm_health_at(table, of_arm[arm]).status
                  for arm in (candidate, incumbent)}
        context = PromotionContext(state, digests, now, health)  # type: ignore[arg-type]
        weighed = _weighed(table, of_arm, candidate, incumbent, policy.metric, figures, health)
        evidence.append(weigh(weighed, candidate, incumbent, policy, context))
    return evidence


def _weighed(table: Table, of_arm: Mapping[str, Sequence[int]], candidate: str, incumbent: str,
             metric: str, figures_of: Mapping[tuple[str, str], TaskArm],
             health: dict[str, Health]) -> Weighed:
    """What the gate weighs (:func:`pytest_wfbench.decisions.gate.weighed`) of
    the two arms' rows, read from the table's columns, with their figures: as
    the report's figures take the rows (an arm and a task by their text, a run
    by the run column, where a run that is no number is 0), where weighed() of
    whole rows takes a run as the row has it (``int(run or 0)``: a ``true`` run
    is 1, and a run that is no number fails it)."""
    status, cell_id = table.texts("status"), table.obj("cell_id")
    codes, ran = status.codes, status.code("ran")
    counted, reused = table.flag("counted"), table.flag("reused")
    groups: dict[str, dict[str, list[int]]] = {}
    ran_tasks: set[str] = set()
    for arm in (candidate, incumbent):
        of_task: dict[str, list[int]] = {}
        groups[arm] = of_task
        for i, task in zip(of_arm[arm], map(str, gather(table.obj("task"), of_arm[arm])),
                           strict=True):
            of_task.setdefault(task, []).append(i)
            if codes[i] == ran:
                ran_tasks.add(task)
    tasks = sorted(ran_tasks)
    keys = [(arm, task) for arm, of_task in groups.items() for task in sorted(of_task)]
    in_order: dict[str, dict[str, list[int]]] = {arm: {} for arm in groups}
    for (arm, task), members in zip(keys, groups_in_run_order(
            table, [groups[arm][task] for arm, task in keys]), strict=True):
        in_order[arm][task] = members
    numbers = table.number(metric) if metric != "tokens" else None

    def values(positions: list[int]) -> list[float]:
        ran_counted = [i for i in positions if codes[i] == ran and counted[i] == 1]
        return table.tokens(ran_counted) if numbers is None else [numbers[i] for i in ran_counted]

    def figures(task: str, arm: str) -> TaskArm:
        found = figures_of.get((task, arm))
        if found is None:
            if task in groups[arm]:
                raise ValueError(f"no figures of {arm} on {task}, whose rows are not whole")
            return task_arm([], task, arm)
        return found

    return Weighed(
        ran_tasks=tasks,
        not_run=sorted({task for of_task in groups.values() for task in of_task} - ran_tasks),
        figures={arm: {task: figures(task, arm) for task in tasks}
                 for arm in (candidate, incumbent)},
        values={arm: {task: values(in_order[arm].get(task, [])) for task in tasks}
                for arm in (candidate, incumbent)},
        health=health,
        excluded=[str(cell_id[i]) for positions in in_order[candidate].values()
                  for i in positions
                  if codes[i] == ran and reused[i] != 1 and counted[i] != 1])


def _first(table: Table, name: str, positions: Sequence[int]) -> str | None:
    """The field's first value among these rows that is not empty, as text."""
    return next((str(value) for value in table.column(name, positions) if value), None)


def _digests(table: Table, own: Sequence[int], candidate: Sequence[int],
             incumbent: Sequence[int], harness_version: str) -> Digests:
    """The digests of a candidate's evidence: of its overlay (the candidate's
    rows), the incumbent's skills, each task's prompt and oracle (by the task's
    text: its first row's that has one), the model and effort (both arms' rows)."""
    tasks = table.column("task", own)
    by_task = []
    for part in ("task", "oracle"):
        found: dict[str, str] = {}
        for task, value in zip(tasks, table.column("identity", own, part), strict=True):
            if value is not None:
                found.setdefault(str(task), str(value))
        by_task.append(found)
    return Digests(
        overlay=_first(table, "overlay_digest", candidate),
        incumbent_skills=_first(table, "skills_fingerprint", incumbent),
        task_prompts=by_task[0], oracles=by_task[1], model=_first(table, "model", own),
        effort=_first(table, "effort", own), harness_version=harness_version)
