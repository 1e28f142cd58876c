"""The cell lifecycle as fixtures (SPEC §3), one per stage, in the order data
flows: record -> template -> clone -> sandbox -> setup -> session -> verify ->
oracle -> evidence -> row.

Each stage runs inside :meth:`StageGuard` so that whatever it raises becomes
the cell's error kind, and the record fixture's teardown writes the row
whatever happened before it.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_wfbench.agents.phases import AgentCell, run_agent_arm, token_totals
from pytest_wfbench.cells import AnyCell, Cell, ScenarioCell
from pytest_wfbench.git import GitError
from pytest_wfbench.lanes import run_scenario
from pytest_wfbench.oracle import OracleResult, run_oracle
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.row import CellRecord, Row
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.session import SessionResult, run_session
from pytest_wfbench.skills import SKILLS_DIR, install_skills
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.verify import VerifyResult, run_verify
from pytest_wfbench.workspace.clone import make_clone
from pytest_wfbench.workspace.evidence import diff_against_base
from pytest_wfbench.workspace.template import Template, TemplateError

SWEEP_KEY = pytest.StashKey[Sweep]()
RECORD_KEY = pytest.StashKey[CellRecord]()


@contextmanager
def stage(record: CellRecord, name: str, default_kind: str = "infra-error") -> Iterator[None]:
    """Turn whatever a stage raises into the record's error kind, then re-raise."""
    try:
        yield
    except CellFailure as failure:
        record.fail(failure.kind, failure.detail)
        raise
    except (TemplateError, GitError, OSError) as exc:
        record.fail(default_kind, f"{name}: {exc}")
        raise CellFailure(default_kind, f"{name}: {exc}") from exc
    except KeyboardInterrupt:
        record.fail("cancelled", f"interrupted during {name}")
        raise
    except Exception as exc:
        record.fail(default_kind, f"{name}: {type(exc).__name__}: {exc}")
        raise


@dataclass(frozen=True)
class CellPaths:
    """A cell's private host directories: its workspace and its agent HOME."""

    root: Path
    workspace: Path
    home: Path


@pytest.fixture
def wfbench_sweep(request: pytest.FixtureRequest) -> Sweep:
    """The sweep this cell belongs to."""
    return request.config.stash[SWEEP_KEY]


@pytest.fixture
def wfbench_record(
    wfbench_cell: AnyCell, wfbench_sweep: Sweep, request: pytest.FixtureRequest
) -> Iterator[CellRecord]:
    """The cell's record; its teardown writes the row and the junit properties."""
    record = CellRecord(cell_id=wfbench_cell.cell_id, started=time.monotonic())
    request.node.stash[RECORD_KEY] = record
    try:
        yield record
    finally:
        row = wfbench_sweep.record_row(wfbench_cell, record, time.monotonic() - record.started)
        request.node.user_properties.extend(row.properties())


@pytest.fixture
def wfbench_template(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord
) -> Template:
    """The sanitized checkout of the task's repo at its SHA (built once per sweep)."""
    with stage(wfbench_record, "template"):
        template = wfbench_sweep.templates().get(wfbench_cell.task)
    wfbench_record.task_base_sha = template.base_sha
    wfbench_record.sanitized_sha = template.sanitized_sha
    return template


@pytest.fixture
def wfbench_clone(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template,
) -> Iterator[CellPaths]:
    """A private copy of the template, erased after the cell."""
    with stage(wfbench_record, "clone"):
        root = wfbench_sweep.cell_dir(wfbench_cell)
        workspace = make_clone(wfbench_template, root)
        home = root / "home"
        home.mkdir()
        if wfbench_cell.arm.skills is not None:
            wfbench_record.skills_fingerprint = install_skills(wfbench_cell.arm.skills,
                                                               workspace)
        if wfbench_cell.arm.plugin and wfbench_sweep.plugin is not None:
            wfbench_record.plugin = wfbench_sweep.plugin.to_json()
    yield CellPaths(root=root, workspace=workspace, home=home)
    if not wfbench_sweep.options.keep_workspaces and root.exists():
        with stage(wfbench_record, "cleanup", "cleanup-failure"):
            shutil.rmtree(root)


@pytest.fixture
def wfbench_sandbox(wfbench_cell: Cell, wfbench_sweep: Sweep) -> Sandbox:
    """The sandbox every command of this cell runs in."""
    return wfbench_sweep.sandbox_for(wfbench_cell)


@pytest.fixture
def wfbench_setup(
    wfbench_cell: Cell, wfbench_record: CellRecord, wfbench_clone: CellPaths,
    wfbench_sandbox: Sandbox,
) -> CellPaths:
    """The task's setup, untrusted, in the sandbox; hidden paths must stay absent."""
    task = wfbench_cell.task
    with stage(wfbench_record, "setup"):
        if task.setup:
            result = wfbench_sandbox.run(task.setup, workspace=wfbench_clone.workspace,
                                         home=wfbench_clone.home, writable=True, network=True,
                                         timeout_s=task.timeout_s)
            if not result.ok:
                raise CellFailure("infra-error", f"setup exited {result.returncode}"
                                  f"{' (timed out)' if result.timed_out else ''}: "
                                  f"{result.tail()}")
        for hidden in task.oracle.hidden_paths:
            if (wfbench_clone.workspace / hidden).exists():
                raise CellFailure("infra-error", f"hidden path {hidden!r} exists after setup")
    return wfbench_clone


@pytest.fixture
def wfbench_session(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
) -> SessionResult:
    """The arm's session(s); on return every process of the arm has exited."""
    cell, sweep, record = wfbench_cell, wfbench_sweep, wfbench_record
    result = SessionResult()
    try:
        with stage(record, "session", "session-error"):
            if cell.arm.is_agent:
                record.model = sweep.agent_settings.model
                record.effort = sweep.agent_settings.effort
                agent = AgentCell(
                    settings=sweep.agent_settings, plugin=sweep.plugin,
                    template=wfbench_template, scratch=wfbench_setup.root, store=sweep.store,
                    skills_fingerprint=record.skills_fingerprint, proxy=sweep.api_proxy())
                run_agent_arm(cell, wfbench_sandbox, wfbench_setup.workspace,
                              wfbench_setup.home, result, agent)
            else:
                run_session(cell, wfbench_sandbox, wfbench_setup.workspace, wfbench_setup.home,
                            result, admitted_chars=sweep.options.admitted_output_chars)
        record.session_completed = True
    finally:
        _record_session(record, result)
    return result


def _record_session(record: CellRecord, result: SessionResult) -> None:
    """What the arm spent, even when it failed half-way."""
    record.session_duration_s = result.duration_s
    record.tool_calls = result.tool_calls
    record.estimated_tokens = result.estimated_tokens
    record.steps = result.steps
    record.num_turns = result.num_turns
    record.session_ids = list(result.session_ids)
    record.phases = result.phases
    record.main_usage = result.main_usage
    record.model_usage = result.model_usage
    record.artifacts.extend(result.artifacts)
    if record.phases:
        record.cost_usd = result.cost_usd
        totals = token_totals(result)
        record.input_tokens = totals["input_tokens"]
        record.cache_creation_input_tokens = totals["cache_creation_input_tokens"]
        record.cache_read_input_tokens = totals["cache_read_input_tokens"]
        record.output_tokens = totals["output_tokens"]


@pytest.fixture
def wfbench_verify(
    wfbench_cell: Cell, wfbench_record: CellRecord, wfbench_setup: CellPaths,
    wfbench_sandbox: Sandbox, wfbench_session: SessionResult,
) -> VerifyResult:
    """The task's visible verify command, read-only and offline."""
    with stage(wfbench_record, "verify"):
        result = run_verify(wfbench_cell.task, wfbench_sandbox, wfbench_setup.workspace)
    wfbench_record.verify_passed = result.passed
    wfbench_record.verify_detail = result.detail
    return result


@pytest.fixture
def wfbench_oracle(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
    wfbench_verify: VerifyResult,
) -> OracleResult:
    """The hidden oracle, staged now that the arm has exited, then erased."""
    with stage(wfbench_record, "oracle", "oracle-unavailable"):
        result = run_oracle(wfbench_cell.task, wfbench_sweep.oracles[wfbench_cell.task.id],
                            wfbench_template, wfbench_sandbox, wfbench_setup.workspace,
                            wfbench_setup.root)
    wfbench_record.oracle_passed = result.passed
    wfbench_record.oracle_digest = result.digest
    return result


@pytest.fixture
def wfbench_evidence(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_session: SessionResult,
    wfbench_oracle: OracleResult,
) -> CellRecord:
    """Churn against the sanitized base, the final patch as an artifact, and the
    arm's own evidence checks (an evidence failure makes the cell an error)."""
    record = wfbench_record
    exclude = (SKILLS_DIR,) if record.skills_fingerprint is not None else ()
    with stage(record, "evidence", "evidence-unverified"):
        churn = diff_against_base(wfbench_template, wfbench_setup.workspace, wfbench_setup.root,
                                  exclude)
        name = wfbench_sweep.store.write_artifact(f"{wfbench_cell.cell_id}.patch", churn.patch)
        record.diff_files = churn.files
        record.diff_insertions = churn.insertions
        record.diff_deletions = churn.deletions
        record.artifacts.append(name)
        if wfbench_session.evidence_failure is not None:
            raise CellFailure(*wfbench_session.evidence_failure)
    return record


@pytest.fixture
def wfbench_row(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_evidence: CellRecord
) -> Row:
    """The cell's outcome as its row will say it (written by the record's teardown)."""
    record = wfbench_evidence
    return wfbench_sweep.build_row(wfbench_cell, record, time.monotonic() - record.started)


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
    root = sweep.cell_dir(cell)
    try:
        with stage(record, "scenario"):
            result = run_scenario(cell.subject, cell.scenario, root,
                                  admitted_chars=sweep.options.admitted_output_chars)
    finally:
        if not sweep.options.keep_workspaces:
            shutil.rmtree(root, ignore_errors=True)
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
