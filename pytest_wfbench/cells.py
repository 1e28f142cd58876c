"""Cells: the expansion of task files into (task, arm, run) items, and the one
test function every cell runs.

Expansion is pure and deterministic, because every xdist worker collects again
and all must agree on the same items in the same order.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeAlias

import pytest

from pytest_wfbench.agents import PRESETS
from pytest_wfbench.audit.expand import GROUPS as AUDIT_GROUPS
from pytest_wfbench.audit.expand import AuditSettings, audit_arms
from pytest_wfbench.outcomes import CellUnresolved
from pytest_wfbench.row import Row
from pytest_wfbench.tasks import (
    ArmDefinition,
    ScenarioSpec,
    SubjectSpec,
    Task,
    TaskFile,
    TaskFileError,
)
from pytest_wfbench.tasks.arms import candidate_arm

KNOWN_ARMS = ("gold", "noop", *PRESETS, *AUDIT_GROUPS)
CELL_ID_RE = re.compile(r"::test_(?:cell|scenario|review)\[(?P<cell>[^\]]+)\]$")
"""A cell's id in its pytest node id."""
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

    @property
    def task_id(self) -> str:
        return self.task.id

    @property
    def task_class(self) -> str:
        return self.task.task_class

    @property
    def arm_name(self) -> str:
        return self.arm.name

    @property
    def arm_kind(self) -> str:
        return self.arm.kind

    @property
    def prompt_text(self) -> str:
        return self.task.prompt

    @property
    def noop_resolves(self) -> bool:
        """A noop cell that must resolve: a review task's clean control, whose right
        review is noop's empty approval (every other noop cell is strict xfail)."""
        labels = self.task.oracle.review
        return self.arm.kind == "noop" and labels is not None and labels.clean_control

    def skip_reason(self, include_expensive: bool) -> str | None:
        """Why this cell cannot run in this sweep, or None when it can. (Agent
        arms that cannot run here are a usage error, not skips.)"""
        if self.task.expensive and not include_expensive:
            return "expensive task: pass --wfbench-include-expensive to run it"
        if self.arm.kind == "gold" and self.task.gold is None and not self.task.is_review:
            return f"task {self.task.id!r} has no gold patch"
        if self.task.is_review and self.arm.changes_workspace:
            return (f"arm {self.arm.name!r} has phases that must change the workspace; "
                    f"task {self.task.id!r} is a review task (its workspace is read-only)")
        if self.arm.reviews and not self.task.is_review:
            return (f"arm {self.arm.name!r} reviews a change; task {self.task.id!r} is not a "
                    "review task")
        return None


def definitions(task_file: TaskFile) -> dict[str, ArmDefinition]:
    """Every arm a task file can use: built in, presets, then its own (which win)."""
    found = BUILTIN_ARM_DEFINITIONS | PRESETS | task_file.arm_definitions
    if task_file.skills is None:
        return found
    # Agent arms without a skills folder of their own use the file's.
    return {name: replace(arm, skills=task_file.skills)
            if arm.is_agent and arm.skills is None and not arm.plugin
            and any(p.skill for p in arm.phases) else arm
            for name, arm in found.items()}


def arm_names(task_file: TaskFile, selected: Sequence[str] | None) -> list[str]:
    """The arms to run for one task file: the command line's choice, else the file's."""
    names = list(selected) if selected else list(task_file.arms)
    known = definitions(task_file)
    for name in names:
        if name not in known and name not in AUDIT_GROUPS:
            defined = ", ".join(known)
            raise TaskFileError(
                task_file.path, None,
                f"arm {name!r} from --wfbench-arms is not defined here (known: {defined})",
                field="arms",
            )
    return names


def with_candidates(known: dict[str, ArmDefinition], names: list[str],
                    overlay: Path | None) -> tuple[dict[str, ArmDefinition], list[str]]:
    """With a candidate overlay, each skill-bearing arm ``X`` is followed by
    ``candidate_X``: the same arm with the overlay's files over its skills."""
    if overlay is None:
        return known, names
    arms, ordered = dict(known), []
    for name in names:
        ordered.append(name)
        arm = known[name]
        if arm.skills is not None and arm.overlay is None:
            candidate = candidate_arm(name)
            arms[candidate] = replace(arm, name=candidate, overlay=overlay,
                                      description=f"{arm.description} (candidate overlay)")
            ordered.append(candidate)
    return arms, ordered


def expand(task_file: TaskFile, arms: Sequence[str] | None, runs: int,
           overlay: Path | None = None, audit: AuditSettings | None = None) -> list[Cell]:
    """Every cell of a task file, task-major, in file order (each candidate arm
    right after its incumbent; an audit group, ``hack``, ``probes`` or
    ``mutants``, as the arms it gives each task)."""
    known, names = with_candidates(definitions(task_file), arm_names(task_file, arms), overlay)
    settings = audit or AuditSettings()
    return [
        Cell(task=task, arm=arm, run=run, suite=task_file.name)
        for task in task_file.tasks
        for name in names
        for arm in (audit_arms(task, name, settings) if name in AUDIT_GROUPS
                    else [known[name]])
        for run in range(1, runs + 1)
    ]


@dataclass(frozen=True)
class ScenarioCell:
    """A tool-cost cell: one subject performing one scenario, once."""

    scenario: ScenarioSpec
    subject: SubjectSpec
    run: int
    suite: str
    random_seed: int | None = None

    @property
    def cell_id(self) -> str:
        return f"{self.scenario.id}-{self.subject.name}-r{self.run}"

    @property
    def task_id(self) -> str:
        return self.scenario.id

    @property
    def task_class(self) -> str:
        return self.scenario.scenario_class

    @property
    def arm_name(self) -> str:
        return self.subject.name

    @property
    def arm_kind(self) -> str:
        return f"subject:{self.subject.driver}"

    @property
    def prompt_text(self) -> str:
        return f"{self.scenario.kind}:{self.scenario.id}"


def subject_order(subjects: Sequence[str], seed: int | None, scenario: str,
                  run: int) -> list[str]:
    """The declared order, or a shuffle that the seed makes reproducible per run
    (the same on every xdist worker)."""
    order = list(subjects)
    if seed is not None:
        random.Random(f"{seed}:{scenario}:{run}").shuffle(order)
    return order


def expand_scenarios(task_file: TaskFile, runs: int, seed: int | None) -> list[ScenarioCell]:
    """Every scenario cell of a task file, scenario-major, subjects per run."""
    return [
        ScenarioCell(scenario=scenario, subject=task_file.subjects[name], run=run,
                     suite=task_file.name, random_seed=seed)
        for scenario in task_file.scenarios
        for run in range(1, runs + 1)
        for name in subject_order(scenario.subjects, seed, scenario.id, run)
    ]


AnyCell: TypeAlias = Cell | ScenarioCell


def test_scenario(wfbench_outcome: Row) -> None:
    """A scenario cell passes when every step returned an expected code and the
    untimed oracle found the work where it must be; a skip when a helper failed."""
    __tracebackhide__ = True
    if wfbench_outcome.status == "skipped":
        pytest.skip(wfbench_outcome.skip_reason or "skipped")
    if not wfbench_outcome.resolved:
        raise CellUnresolved(f"{wfbench_outcome.cell_id}: {wfbench_outcome.error_kind}: "
                             f"{wfbench_outcome.error_detail}")


def test_cell(wfbench_outcome: Row) -> None:
    """A cell passes when its arm resolved the task (SPEC §3: sessions completed,
    verify passed and the hidden oracle passed). An audit's probe passes when the
    hidden oracle rejects it (whatever verify said), and a mutant when it is
    killed; a surviving mutant is an xfail, measured by the task's kill rate."""
    __tracebackhide__ = True
    audit = wfbench_outcome.audit or {}
    if audit.get("role") == "probe":
        if wfbench_outcome.oracle_passed:
            raise CellUnresolved(f"{wfbench_outcome.cell_id}: weak oracle: the probe "
                                 f"{audit.get('name')} passed task {wfbench_outcome.task!r}'s "
                                 "hidden oracle")
        return
    if audit.get("role") == "mutant":
        if wfbench_outcome.resolved:
            pytest.xfail(f"mutant survived: {audit.get('description')}")
        return
    if not wfbench_outcome.resolved:
        raise CellUnresolved(f"{wfbench_outcome.cell_id}: {wfbench_outcome.error_kind}: "
                             f"{wfbench_outcome.error_detail}")


def test_review(wfbench_outcome: Row) -> None:
    """A review cell passes when its review matches the task's hidden labels: no
    false positive, no false negative, the right verdict (review/score.py)."""
    __tracebackhide__ = True
    if not wfbench_outcome.resolved:
        raise CellUnresolved(f"{wfbench_outcome.cell_id}: {wfbench_outcome.error_kind}: "
                             f"{wfbench_outcome.error_detail}")
