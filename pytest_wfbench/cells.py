"""Cells: the expansion of task files into (task, arm, run) items, and the one
test function every cell runs.

Expansion is pure and deterministic, because every xdist worker collects again
and all must agree on the same items in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_wfbench.outcomes import CellUnresolved
from pytest_wfbench.row import Row
from pytest_wfbench.tasks import BUILTIN_ARMS, ArmDefinition, Task, TaskFile, TaskFileError

BUILTIN_ARM_DEFINITIONS = {
    "gold": ArmDefinition("gold", "gold", description="applies the task's gold patch"),
    "noop": ArmDefinition("noop", "noop", description="changes nothing"),
}


@dataclass(frozen=True)
class Cell:
    task: Task
    arm: ArmDefinition
    run: int
    suite: str

    @property
    def cell_id(self) -> str:
        return f"{self.task.id}-{self.arm.name}-r{self.run}"

    def skip_reason(self, include_expensive: bool) -> str | None:
        """Why this cell cannot run in this sweep, or None when it can."""
        if self.task.expensive and not include_expensive:
            return "expensive task: pass --wfbench-include-expensive to run it"
        if self.arm.kind == "gold" and self.task.gold is None:
            return f"task {self.task.id!r} has no gold patch"
        return None


def arm_names(task_file: TaskFile, selected: Sequence[str] | None) -> list[str]:
    """The arms to run for one task file: the command line's choice, else the file's."""
    names = list(selected) if selected else list(task_file.arms)
    for name in names:
        if name not in BUILTIN_ARMS and name not in task_file.arm_definitions:
            defined = ", ".join([*BUILTIN_ARMS, *task_file.arm_definitions])
            raise TaskFileError(
                task_file.path, None,
                f"arm {name!r} from --wfbench-arms is not defined here (known: {defined})",
                field="arms",
            )
    return names


def expand(task_file: TaskFile, arms: Sequence[str] | None, runs: int) -> list[Cell]:
    """Every cell of a task file, task-major, in file order."""
    definitions = BUILTIN_ARM_DEFINITIONS | task_file.arm_definitions
    names = arm_names(task_file, arms)
    return [
        Cell(task=task, arm=definitions[name], run=run, suite=task_file.name)
        for task in task_file.tasks
        for name in names
        for run in range(1, runs + 1)
    ]


def test_cell(wfbench_row: Row) -> None:
    """A cell passes when its arm resolved the task (SPEC §3: sessions completed,
    verify passed and the hidden oracle passed)."""
    __tracebackhide__ = True
    if not wfbench_row.resolved:
        raise CellUnresolved(f"{wfbench_row.cell_id}: {wfbench_row.error_kind}: "
                             f"{wfbench_row.error_detail}")
