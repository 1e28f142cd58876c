"""The controller's sweep control as pytest hooks: the outage breaker counts
rows as they arrive, the progress monitor shows what runs. Registered by the
plugin on the controller only (serially, the controller runs the cells)."""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

from pytest_wfbench.control.breaker import OutageBreaker
from pytest_wfbench.control.progress import ProgressMonitor, Tally
from pytest_wfbench.control.stop import ABORTED, request_stop
from pytest_wfbench.sweep import Sweep


def _properties(report: pytest.TestReport) -> dict[str, Any]:
    return {str(name): value for name, value in report.user_properties}


class ControlHooks:
    """Who calls what: pytest calls ``pytest_runtest_logreport`` on the
    controller for every report (xdist forwards the workers'); the cell's row
    properties ride on its teardown report."""

    def __init__(self, sweep: Sweep, config: pytest.Config) -> None:
        self.sweep = sweep
        self.config = config
        self.breaker = OutageBreaker(sweep.options.outage_streak)
        self.kinds: dict[str, str | None] = {}
        self.tally = Tally()
        self.monitor: ProgressMonitor | None = None
        self.session: pytest.Session | None = None

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")

        def write_line(line: str) -> None:
            if reporter is None:
                return
            # xdist writes its progress characters without telling the reporter:
            # start a line of our own where the writer is not at one's start.
            writer = getattr(reporter, "_tw", None)
            if getattr(writer, "width_of_current_line", 0):
                reporter.write("\n")
            reporter.ensure_newline()
            reporter.write_line(self.sweep.redactor.clean(line))

        self.monitor = ProgressMonitor(self.sweep.identity.work_dir, self.sweep.identity.out_dir,
                                       self.tally, write_line, tty=sys.stdout.isatty())
        self.monitor.start()
        try:
            return (yield)
        finally:
            self.monitor.stop()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        data = _properties(report)
        cell_id = data.get("wfbench.cell_id")
        if not cell_id or data.get("wfbench.status") == "skipped":
            return
        kind = data.get("wfbench.error_kind") or None
        self.kinds[str(cell_id)] = kind
        tokens = sum(float(data.get(f"wfbench.{key}") or 0) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "output_tokens"))
        cost = data.get("wfbench.cost_usd")
        self.tally.add(str(data.get("wfbench.arm")), tokens,
                       float(cost) if cost not in (None, "") else None)
        if self.breaker.observe(str(cell_id), kind):
            reason = self.breaker.reason(self.kinds)
            request_stop(self.sweep.identity.work_dir, ABORTED, reason)
            if self.session is not None:
                # Serially this ends the run loop; under xdist the workers see the stop
                # mark before each cell and start none.
                self.session.shouldfail = f"wfbench: {reason}"
