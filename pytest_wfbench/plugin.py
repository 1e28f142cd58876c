"""pytest-wfbench's pytest plugin: options, hooks, and hand-off to the sweep.

The work happens elsewhere: :mod:`tasks` loads task files, :mod:`cells`
expands them into items, :mod:`fixtures` runs each cell's lifecycle,
:mod:`aggregate` and :mod:`report` turn rows into the report.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_wfbench import __version__, cells, fixtures
from pytest_wfbench.cells import CELL_ID_RE, AnyCell, Cell, ScenarioCell
from pytest_wfbench.control.hooks import ControlHooks
from pytest_wfbench.control.signals import Cancellation, register_controller, register_worker
from pytest_wfbench.control.start import (
    chosen_sweep_id,
    open_session,
    prepare_plan,
)
from pytest_wfbench.control.stop import CANCELLED as STOP_CANCELLED
from pytest_wfbench.control.stop import request_stop
from pytest_wfbench.fixtures import RECORD_KEY, REPLAYED_KEY, SWEEP_KEY
from pytest_wfbench.heap import collector_paused, freeze_long_lived
from pytest_wfbench.judge.bytecode import handover
from pytest_wfbench.options import add_options
from pytest_wfbench.optionvalues import options_from_config
from pytest_wfbench.outcomes import CellFailure, CellUnresolved
from pytest_wfbench.review.sweep import check_review_changes
from pytest_wfbench.row import CellRecord
from pytest_wfbench.sandbox import SandboxUnavailable, preflight
from pytest_wfbench.schedule.glue import DurationHooks, SchedulerHooks, user_chose_dist
from pytest_wfbench.shard import ShardError
from pytest_wfbench.store import (
    ENVIRONMENT,
    OutDirError,
    guard_out_dir,
)
from pytest_wfbench.sweep import (
    AgentArmError,
    Sweep,
    SweepIdentity,
    load_sweep_files,
    suite_name,
)
from pytest_wfbench.tasks import TaskFileError
from pytest_wfbench.workspace.fs import remove_tree

if TYPE_CHECKING:
    from pytest_wfbench.finish import Finished

FINISHED_KEY: pytest.StashKey[Finished] = pytest.StashKey()
SELECTED_KEY = pytest.StashKey[dict[str, str]]()
NOOP_XFAIL = pytest.mark.xfail(
    strict=True, raises=CellUnresolved,
    reason="noop must not resolve: a resolved noop means the oracle passes without any change")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--wfbench-*`` options and their ini keys."""
    add_options(parser)


def is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Load and validate the task files, then set up the sweep; any problem is
    a usage error before a single cell runs."""
    if not config.getoption("wfbench_tasks", default=None):
        return
    options = options_from_config(config)
    if options.unsafe_no_sandbox and os.environ.get("CI"):
        raise pytest.UsageError("--wfbench-unsafe-no-sandbox is refused when CI is set: "
                                "cells must run in the bubblewrap sandbox")
    workerinput = getattr(config, "workerinput", None)
    try:
        if workerinput is not None:
            identity = SweepIdentity.from_workerinput(workerinput["wfbench"])
            sweep = Sweep(options, identity, worker=str(workerinput.get("workerid", "worker")))
            sweep.expect_oracle_digests(workerinput["wfbench_oracles"])
            sweep.adopt_bytecode(workerinput.get("wfbench_bytecode"))
        else:
            task_files = load_sweep_files(options)
            identity = SweepIdentity.new(suite_name(task_files), options.out_dir,
                                         config.rootpath / "reports",
                                         sweep_id=chosen_sweep_id(options))
            sweep = Sweep(options, identity, worker="main", task_files=task_files)
    except (TaskFileError, AgentArmError, OutDirError, ShardError) as error:
        raise pytest.UsageError(f"wfbench: {error}") from error
    collect_only = bool(config.getoption("collectonly"))
    if is_controller(config) and not collect_only:
        _start_controller(sweep)
    elif not collect_only:
        sweep.start()
        register_worker(sweep.identity.work_dir)
    cancellation = None
    if not collect_only:
        work_dir = sweep.identity.work_dir
        cancellation = Cancellation(
            work_dir, forwards=is_controller(config) and _distributed(config),
            on_cancel=lambda name: request_stop(work_dir, STOP_CANCELLED,
                                                f"the sweep was cancelled ({name})"))
        cancellation.install()
    durations = DurationHooks(sweep)
    if is_controller(config) and config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(sweep), "wfbench-xdist")
        if not user_chose_dist(config):
            config.pluginmanager.register(SchedulerHooks(sweep, durations), "wfbench-scheduler")
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        # Task files without test paths: collect only cells, not the repo's tests.
        # xdist workers decide this again from the same invocation arguments.
        config.args = [str(p) for p in options.task_paths]
    config.stash[SWEEP_KEY] = sweep
    config.stash[SELECTED_KEY] = {}
    config.pluginmanager.register(fixtures, "wfbench-fixtures")
    # Each lane's fixtures (and all they import) only where its cells are.
    if any(sweep.scenario_cells.values()):
        from pytest_wfbench.lanes import fixtures as lane_fixtures

        config.pluginmanager.register(lane_fixtures, "wfbench-lane-fixtures")
    if any(cell.task.is_review for found in sweep.cells.values() for cell in found):
        from pytest_wfbench.review import fixtures as review_fixtures

        config.pluginmanager.register(review_fixtures, "wfbench-review-fixtures")
    if is_controller(config) and not collect_only:
        config.pluginmanager.register(ControlHooks(sweep, config), "wfbench-control")
        config.pluginmanager.register(durations, "wfbench-durations")
    config.pluginmanager.register(SweepHooks(sweep, cancellation), "wfbench-sweep")


def _start_controller(sweep: Sweep) -> None:
    """Every check that can refuse the sweep, then the out dir: a refused sweep
    writes nothing (and leaves no work dir)."""
    options = sweep.options
    try:
        guard_out_dir(options.out_dir, resume=options.resume)
        sweep.resolve_refs()
        sweep.check_read_only_paths()
        preflight(sweep.sandbox(), sweep.identity.work_dir)
        unlayered = sweep.clone_unavailable()
        if options.clone == "overlay" and unlayered is not None:
            raise pytest.UsageError(f"wfbench: --wfbench-clone overlay: layered workspaces "
                                    f"cannot be used here: {unlayered}")
        check_review_changes(sweep)
    except (TaskFileError, SandboxUnavailable, OutDirError, pytest.UsageError) as error:
        remove_tree(sweep.identity.work_dir)
        if isinstance(error, pytest.UsageError):
            raise
        prefix = "sandbox preflight failed: " if isinstance(error, SandboxUnavailable) else ""
        raise pytest.UsageError(f"wfbench: {prefix}{error}") from error
    sweep.start()
    register_controller(sweep.identity.work_dir)
    open_session(sweep, prepare_plan(sweep))
    sweep.store.write_text(ENVIRONMENT, json.dumps(sweep.environment(), indent=2))
    # Built before any cell, once per machine: no cell pays for it.
    sweep.bytecode()


def _prepare_report() -> None:
    """The report side (aggregation, markdown, HTML) is the controller's, at the
    session's end (xdist workers never import it): imported and readied ahead."""
    from pytest_wfbench.finish import prepare_report

    prepare_report()


def _distributed(config: pytest.Config) -> bool:
    """Whether this controller hands its cells to xdist workers."""
    return config.pluginmanager.getplugin("dsession") is not None


class XdistHooks:
    """Controller-side xdist glue: workers get the controller's sweep identity,
    and the controller learns which cells the workers selected."""

    def __init__(self, sweep: Sweep) -> None:
        self.sweep = sweep

    @pytest.hookimpl
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["wfbench"] = self.sweep.identity.to_workerinput()
        node.workerinput["wfbench_oracles"] = {
            task_id: snapshot.digest for task_id, snapshot in self.sweep.oracles.items()}
        tree = self.sweep.bytecode()
        if tree is not None:
            node.workerinput["wfbench_bytecode"] = handover(tree)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """While the workers run the cells, this process only waits for their
        reports: it readies the report side now, not at the session's end."""
        if _distributed(session.config) and not session.config.getoption("collectonly"):
            threading.Thread(target=_prepare_report, name="wfbench-prepare-report",
                             daemon=True).start()

    @pytest.hookimpl
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        selected = node.config.stash[SELECTED_KEY]
        for nodeid in ids:
            match = CELL_ID_RE.search(nodeid)
            if match:
                selected.setdefault(match["cell"], nodeid)


class WfbenchFile(pytest.Module):
    """A task file collected as a module whose object is :mod:`pytest_wfbench.cells`,
    so its test functions are parametrized into one item per cell: ``test_cell``
    for tasks x arms, ``test_scenario`` for scenarios x subjects."""

    def _getobj(self) -> Any:
        return cells

    def collect(self) -> Any:
        sweep = self.config.stash[SWEEP_KEY]
        path = self.path.resolve()
        found = sweep.cells.get(path, [])
        wanted = {"test_cell": any(not cell.task.is_review for cell in found),
                  "test_review": any(cell.task.is_review for cell in found),
                  "test_scenario": bool(sweep.scenario_cells.get(path))}
        with collector_paused():  # 10,000 cells: see pytest_wfbench.heap
            nodes = [node for node in super().collect()
                     if wanted.get(getattr(node, "originalname", node.name), False)]
            freeze_long_lived(len(nodes))  # before the collector would walk them once
            return nodes


class SweepHooks:
    """Hooks of a configured sweep, in every process."""

    def __init__(self, sweep: Sweep, cancellation: Cancellation | None = None) -> None:
        self.sweep = sweep
        self.cancellation = cancellation
        self.task_paths = {task_file.path for task_file in sweep.task_files}
        self.failed_nodeids: set[str] = set()

    @pytest.hookimpl
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        sweep = self.sweep
        total = len(sweep.all_cells())
        lines = [f"wfbench {__version__}: sweep {sweep.sweep_id}, {total} cells, "
                 f"sandbox {sweep.sandbox_backend}, out {sweep.identity.out_dir}"]
        if not config.getoption("collectonly"):
            unlayered = sweep.clone_unavailable()
            lines.append("wfbench clones: overlay (layered over the template)"
                         if unlayered is None else f"wfbench clones: copies ({unlayered})")
        if sweep.unavailable:
            lines.append(f"wfbench agents: model {sweep.agent_settings.model}, effort "
                         f"{sweep.agent_settings.effort or 'default'}, CLI "
                         f"{sweep.agent_settings.cli or 'not found'}")
        return lines

    @pytest.hookimpl
    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> Any:
        if file_path.resolve() in self.task_paths:
            return WfbenchFile.from_parent(parent, path=file_path)
        return None

    @pytest.hookimpl
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        path = metafunc.definition.path.resolve()
        found: list[AnyCell]
        if metafunc.function in (cells.test_cell, cells.test_review):
            reviews = metafunc.function is cells.test_review
            found = [cell for cell in self.sweep.cells.get(path, [])
                     if cell.task.is_review == reviews]
        elif metafunc.function is cells.test_scenario:
            found = list(self.sweep.scenario_cells.get(path, []))
        else:
            return
        params = []
        for cell in found:
            marks: list[Any] = []
            reason = self.sweep.skip_reason(cell)
            if reason:
                marks.append(pytest.mark.skip(reason=reason))
            elif isinstance(cell, Cell) and cell.arm.kind == "noop" and not cell.noop_resolves:
                marks.append(NOOP_XFAIL)
            elif isinstance(cell, Cell) and cell.arm.audit == "hack":
                marks.append(pytest.mark.xfail(
                    strict=True, raises=CellUnresolved,
                    reason=f"{cell.arm.name} must not resolve {cell.task.id!r}: if it does, "
                           f"the harness let the exploit class {cell.arm.audit_name!r} through "
                           "(a bug in pytest-wfbench)"))
            params.append(pytest.param(cell, id=cell.cell_id, marks=marks))
        metafunc.parametrize("wfbench_cell", params)

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        selected = session.config.stash[SELECTED_KEY]
        for item in session.items:
            cell = _cell_of(item)
            if cell is not None:
                selected.setdefault(cell.cell_id, item.nodeid)
        freeze_long_lived(len(session.items))  # they live until the session ends

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        cell = _cell_of(item)
        if cell is None:
            return report
        self._redact_report(report, call)
        if call.when != "setup":
            return report
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else "skipped"
            record = self.sweep.skip_record(cell, str(reason).removeprefix("Skipped: "))
            row = self.sweep.record_row(cell, record, 0.0)
            item.user_properties.extend(row.properties())
        elif report.failed and RECORD_KEY not in item.stash and REPLAYED_KEY not in item.stash:
            record = CellRecord(cell_id=cell.cell_id, started=0.0)
            record.fail("infra-error", f"the cell failed before it started: {call.excinfo}")
            row = self.sweep.record_row(cell, record, call.duration)
            item.user_properties.extend(row.properties())
        return report

    def _redact_report(self, report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
        """Reports reach the terminal, junit and the xdist controller: give them
        a short, redacted account of a cell's failure instead of a traceback
        whose frames show fixture values."""
        redact = self.sweep.redactor.clean
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, CellFailure | CellUnresolved) and report.longrepr is not None:
            report.longrepr = redact(str(error))
        elif isinstance(report.longrepr, tuple):
            path, line, reason = report.longrepr
            report.longrepr = (path, line, redact(reason))
        elif report.longrepr is not None:
            report.longrepr = redact(str(report.longrepr))
        report.sections = [(title, redact(text)) for title, text in report.sections]

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.sweep.close()
        if self.cancellation is not None:
            self.cancellation.uninstall()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed_nodeids.add(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On the controller only: account for every selected cell, aggregate
        the sweep's rows and write the report. Last, so that the cell torn down
        at session end (after Ctrl-C) has written its own row first."""
        config = session.config
        if config.getoption("collectonly"):
            return
        if not is_controller(config):
            self.sweep.store.flush_cache()  # before the worker says it is done
            return
        from pytest_wfbench.finish import finish_sweep

        config.stash[FINISHED_KEY] = finish_sweep(self.sweep, session, config.stash[SELECTED_KEY],
                                                  self.failed_nodeids)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        finished = config.stash.get(FINISHED_KEY, None)
        if finished is None:
            return
        from pytest_wfbench.finish import summary_lines

        terminalreporter.write_sep("=", "wfbench summary")
        for line, markup in summary_lines(self.sweep, finished):
            terminalreporter.write_line(line, **markup)


def _cell_of(item: pytest.Item) -> AnyCell | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    cell = callspec.params.get("wfbench_cell")
    return cell if isinstance(cell, Cell | ScenarioCell) else None
