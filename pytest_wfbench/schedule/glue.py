"""The scheduling rules applied to a sweep: the controller's hooks.

:class:`DurationHooks` (every controller, serial or not) gathers the cells'
durations as their reports arrive and merges their medians into the cache
dir's history at the end; :class:`SchedulerHooks` (registered only with
xdist, and only when the user chose no ``--dist``) makes xdist's controller
hand the cells out longest expected first.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_wfbench.cells import CELL_ID_RE, Cell, ScenarioCell
from pytest_wfbench.schedule.history import DurationHistory
from pytest_wfbench.schedule.order import (
    AGENT_PHASE_PRIOR_S,
    SCRIPTED_PRIOR_S,
    CellCost,
    Plan,
    dispatch_plan,
    medians,
)
from pytest_wfbench.schedule.xdist import CostFirstScheduling
from pytest_wfbench.sweep import Sweep


def _prior(cell: Cell | ScenarioCell | None) -> float:
    if isinstance(cell, Cell) and cell.arm.is_agent:
        return AGENT_PHASE_PRIOR_S * len(cell.arm.phases)
    return SCRIPTED_PRIOR_S


class DurationHooks:
    """Who calls what: pytest calls ``pytest_runtest_logreport`` on the
    controller for every report (xdist forwards the workers'); a cell's row
    properties ride on its teardown report."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep
        self.samples: list[tuple[str, str, float]] = []

    def history(self) -> DurationHistory | None:
        cache_dir = self.sweep.options.cache_dir
        return DurationHistory(cache_dir) if cache_dir is not None else None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        data = {str(name): value for name, value in report.user_properties}
        duration = data.get("wfbench.duration_s")
        if data.get("wfbench.status") != "ran" or not isinstance(duration, int | float) \
                or isinstance(duration, bool) or duration < 0:
            return
        self.samples.append((str(data.get("wfbench.task")), str(data.get("wfbench.arm")),
                             float(duration)))

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        history = self.history()
        if history is not None:
            history.record(medians(self.samples))


class SchedulerHooks:
    """xdist's controller calls ``pytest_xdist_make_scheduler`` once, before
    any worker collects."""

    def __init__(self, sweep: Sweep, durations: DurationHooks) -> None:
        self.sweep = sweep
        self.durations = durations

    def plan(self, collection: Sequence[str]) -> Plan:
        """The collection's indices in dispatch order, with their expected
        seconds (see :mod:`.order`)."""
        history = self.durations.history()
        known = history.load() if history is not None else {}
        cells = self.sweep.all_cells()
        costs = []
        for nodeid in collection:
            match = CELL_ID_RE.search(nodeid)
            cell = cells.get(match["cell"]) if match else None
            if cell is None:
                costs.append(CellCost(nodeid, "", 0, SCRIPTED_PRIOR_S))
            else:
                costs.append(CellCost(cell.task_id, cell.arm_name, cell.run, _prior(cell)))
        return dispatch_plan(costs, known)

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return CostFirstScheduling(self.plan, log)


def user_chose_dist(config: pytest.Config) -> bool:
    """Whether ``--dist`` (or ``-d``) was given on the command line, in
    PYTEST_ADDOPTS or in the ini file's addopts."""
    given = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(),
             *config.getini("addopts")]
    return any(arg == "-d" or arg.startswith("--dist") for arg in given)
