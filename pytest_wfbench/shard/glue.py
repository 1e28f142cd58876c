"""The thin part of sharding: a sweep's expanded cells to :mod:`.plan`'s tasks,
the earlier out dir that weighs them (``--wfbench-shard-balance``), and what
sweep.json records of the shard. Every process of a sweep (controller and
xdist workers) calls :func:`apply_shard` on the same cells with the same
options and gets the same cells back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_wfbench.cells import AnyCell, Cell, ScenarioCell
from pytest_wfbench.shard.plan import (
    Shard,
    ShardError,
    TaskCells,
    expected_costs,
    shard_loads,
    split,
)
from pytest_wfbench.store import RESULTS, iter_rows

C = TypeVar("C", Cell, ScenarioCell)


@dataclass(frozen=True)
class ShardPlan:
    """This sweep's shard and the whole sweep's assignment of tasks to shards."""

    shard: Shard
    assignment: dict[str, int]
    """task -> shard index, for every task of the sweep (the same in every shard)."""
    loads: list[float] = field(default_factory=list)
    """Each shard's expected cost (seconds with a balance dir, else cells)."""
    balance_dir: Path | None = None

    @property
    def tasks(self) -> list[str]:
        """This shard's tasks, in sweep order."""
        return [task for task, index in self.assignment.items() if index == self.shard.index]

    def to_json(self) -> dict[str, Any]:
        """sweep.json's ``shard``: enough for ``wfbench merge`` to check that its
        inputs are the shards of one sweep, all of them, each with its own tasks."""
        return {"index": self.shard.index, "count": self.shard.count,
                "label": self.shard.label,
                "balance": str(self.balance_dir) if self.balance_dir else None,
                "weighed_by": "duration_s" if self.balance_dir else "cells",
                "expected_loads": [round(load, 3) for load in self.loads],
                "assignment": dict(self.assignment)}


def sweep_tasks(cells: Mapping[Path, Sequence[Cell]],
                scenario_cells: Mapping[Path, Sequence[ScenarioCell]]) -> list[TaskCells]:
    """The sweep's tasks (and scenarios) in sweep order, each with its cells."""
    grouped: dict[str, list[tuple[str, str]]] = {}
    for path in [*cells, *(p for p in scenario_cells if p not in cells)]:
        found: list[AnyCell] = [*cells.get(path, ()), *scenario_cells.get(path, ())]
        for cell in found:
            grouped.setdefault(cell.task_id, []).append((cell.cell_id, cell.arm_name))
    return [TaskCells(task, tuple(members)) for task, members in grouped.items()]


def balance_rows(out_dir: Path | None) -> list[dict[str, Any]]:
    """An earlier out dir's rows (every one: the last of a cell wins in the plan)."""
    return [] if out_dir is None else list(iter_rows(out_dir / RESULTS))


def _keep(found: Mapping[Path, Sequence[C]], tasks: set[str]) -> dict[Path, list[C]]:
    return {path: [cell for cell in members if cell.task_id in tasks]
            for path, members in found.items()}


def apply_shard(
    cells: dict[Path, list[Cell]], scenario_cells: dict[Path, list[ScenarioCell]],
    shard: Shard | None, balance_dir: Path | None = None,
) -> tuple[dict[Path, list[Cell]], dict[Path, list[ScenarioCell]], ShardPlan | None]:
    """The cells of this shard (all of them without ``--wfbench-shard``), and the plan."""
    if shard is None:
        return cells, scenario_cells, None
    tasks = sweep_tasks(cells, scenario_cells)
    earlier = balance_rows(balance_dir)
    try:
        assignment = split(tasks, shard.count, earlier)
    except ShardError as error:
        raise ShardError(f"--wfbench-shard {shard.label}: {error}") from error
    loads = shard_loads(tasks, assignment, expected_costs(tasks, earlier), shard.count)
    plan = ShardPlan(shard, assignment, loads, balance_dir)
    mine = set(plan.tasks)
    return _keep(cells, mine), _keep(scenario_cells, mine), plan
