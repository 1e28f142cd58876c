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

from pytest_wfbench.cells import Cell
from pytest_wfbench.clone import make_clone
from pytest_wfbench.evidence import diff_against_base
from pytest_wfbench.git import GitError
from pytest_wfbench.oracle import OracleResult, run_oracle
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.row import CellRecord, Row
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.session import SessionResult, run_session
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.template import Template, TemplateError
from pytest_wfbench.verify import VerifyResult, run_verify

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
    wfbench_cell: Cell, wfbench_sweep: Sweep, request: pytest.FixtureRequest
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
    yield CellPaths(root=root, workspace=workspace, home=home)
    if not wfbench_sweep.options.keep_workspaces:
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
    wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
) -> SessionResult:
    """The arm's session(s); on return every process of the arm has exited."""
    with stage(wfbench_record, "session", "session-error"):
        result = run_session(wfbench_cell, wfbench_sandbox, wfbench_setup.workspace,
                             wfbench_setup.home,
                             admitted_chars=wfbench_sweep.options.admitted_output_chars)
    record = wfbench_record
    record.session_completed = True
    record.session_duration_s = result.duration_s
    record.tool_calls = result.tool_calls
    record.estimated_tokens = result.estimated_tokens
    record.steps = result.steps
    return result


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
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_oracle: OracleResult,
) -> CellRecord:
    """Churn against the sanitized base, and the final patch as an artifact."""
    with stage(wfbench_record, "evidence", "evidence-unverified"):
        churn = diff_against_base(wfbench_template, wfbench_setup.workspace, wfbench_setup.root)
        name = wfbench_sweep.store.write_artifact(f"{wfbench_cell.cell_id}.patch", churn.patch)
    wfbench_record.diff_files = churn.files
    wfbench_record.diff_insertions = churn.insertions
    wfbench_record.diff_deletions = churn.deletions
    wfbench_record.artifacts.append(name)
    return wfbench_record


@pytest.fixture
def wfbench_row(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_evidence: CellRecord
) -> Row:
    """The cell's outcome as its row will say it (written by the record's teardown)."""
    record = wfbench_evidence
    return wfbench_sweep.build_row(wfbench_cell, record, time.monotonic() - record.started)
