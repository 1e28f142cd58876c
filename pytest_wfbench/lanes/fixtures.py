"""The tool-cost lane's cell as a fixture: a subject performs its scenario,
step by step, then the untimed oracle (the agent lane's stages are in
:mod:`pytest_wfbench.fixtures`)."""

from __future__ import annotations

import time

import pytest

from pytest_wfbench.cells import ScenarioCell, subject_order
from pytest_wfbench.lanes import run_scenario, skipped_step
from pytest_wfbench.row import CellRecord, Row
from pytest_wfbench.stages import stage
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.workspace.fs import remove_tree


@pytest.fixture
def wfbench_lane_row(
    wfbench_cell: ScenarioCell, wfbench_sweep: Sweep, wfbench_record: CellRecord
) -> Row:
    """A tool-cost cell: the subject performs the scenario, step by step, under
    the machine-wide measurement lock; then the untimed oracle."""
    cell, sweep, record = wfbench_cell, wfbench_sweep, wfbench_record
    record.lane = "tool-cost"
    record.extras["scenario_kind"] = cell.scenario.kind
    record.random_seed = cell.random_seed
    record.subject_version = sweep.subject_versions.get(cell.subject.name)
    # The order the subjects of this (scenario, run) were collected in: a bias of
    # order (warm caches for the later ones) is visible in the row.
    record.extras["subject_order"] = subject_order(cell.scenario.subjects, cell.random_seed,
                                                   cell.scenario.id, cell.run)
    root = sweep.cell_dir(cell)
    try:
        with stage(record, "scenario"):
            result = run_scenario(cell.subject, cell.scenario, root,
                                  admitted_chars=sweep.options.admitted_output_chars)
    finally:
        if not sweep.options.keep_workspaces:
            remove_tree(root)
    if result.skip_reason is not None:
        # A helper (seeding, the oracle's reads) failed: nothing to judge, a skip row.
        record.skip_reason = result.skip_reason
        record.steps = [*result.steps, skipped_step(result.skip_reason, "harness.helper")]
        record.transport = result.transport
        return sweep.build_row(cell, record, time.monotonic() - record.started)
    record.session_completed = True
    record.steps = result.steps
    record.transport = result.transport
    record.totals = result.totals
    record.extras.update(result.extras)
    record.measurement_lock_wait_ms = result.lock_wait_ms
    record.tool_calls = result.totals["tool_calls"]["total"]
    record.estimated_tokens = result.totals["estimated_tokens"]
    record.session_duration_s = result.totals["elapsed_ms"] / 1000
    record.extras["oracle_checks"] = result.oracle.get("checks", [])
    record.oracle_passed = result.oracle.get("passed")
    # A scenario has no separate visible check: its steps are the visible part.
    step_failed = result.failure is not None and result.failure[0] == "step-failed"
    record.verify_passed = not step_failed
    if result.failure is not None and step_failed:
        record.verify_detail = result.failure[1]
    return sweep.build_row(cell, record, time.monotonic() - record.started)
