"""The cell lifecycle as fixtures (SPEC §3), one per stage, in the order data
flows: record -> template -> clone -> sandbox -> setup -> session -> verify ->
capture -> evidence -> oracle -> row.

Each stage runs inside :func:`stage` so that whatever it raises becomes the
cell's error kind, and the record fixture's teardown writes the row whatever
happened before it. After the session, the harness reads the workspace once,
by capturing it into a tree of its own (bounded, never following a link);
evidence and the oracle work on that tree. From then on nothing the arm left
can make a cell excluded: a failure is ``evidence-tampered`` (or
``limit-exceeded``) and counts as unresolved.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from pytest_wfbench.agents.phases import AgentCell, run_agent_arm
from pytest_wfbench.cells import AnyCell, Cell, ScenarioCell
from pytest_wfbench.control.budget import row_cost
from pytest_wfbench.control.stop import BUDGET, request_stop, stop_of
from pytest_wfbench.judge.suspicion import scan_patch
from pytest_wfbench.oracle import OracleResult, run_oracle
from pytest_wfbench.outcomes import ERROR_KINDS, CellFailure
from pytest_wfbench.row import CellRecord, Row, utc_now
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.session import SessionResult, run_session
from pytest_wfbench.skills import SKILLS_DIR, install_skills
from pytest_wfbench.stages import (
    AFTER_SESSION,
    CellPaths,
    FinalTree,
    python_sources,
    record_session,
    stage,
)
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.verify import VerifyResult, run_verify
from pytest_wfbench.workspace.capture import (
    TreeBounds,
    capture_tree,
)
from pytest_wfbench.workspace.clone import make_clone
from pytest_wfbench.workspace.evidence import diff_against_base
from pytest_wfbench.workspace.fs import remove_tree
from pytest_wfbench.workspace.layers import JudgedTree, materialize
from pytest_wfbench.workspace.template import Template

SWEEP_KEY = pytest.StashKey[Sweep]()
RECORD_KEY = pytest.StashKey[CellRecord]()
REPLAYED_KEY = pytest.StashKey[Row]()


@pytest.fixture
def wfbench_sweep(request: pytest.FixtureRequest) -> Sweep:
    """The sweep this cell belongs to."""
    return request.config.stash[SWEEP_KEY]


@pytest.fixture
def wfbench_outcome(
    wfbench_cell: AnyCell, wfbench_sweep: Sweep, request: pytest.FixtureRequest
) -> Row:
    """The cell's row: measured now by its lifecycle's fixtures, or, for a cell the
    sweep's plan gives a row (kept on resume, reused from an earlier sweep), that
    row, with its own outcome (a counted evidence failure is an error again)."""
    planned = wfbench_sweep.plan().planned.get(wfbench_cell.cell_id)
    if planned is None:
        name = ("wfbench_lane_row" if isinstance(wfbench_cell, ScenarioCell) else
                "wfbench_review_row" if wfbench_cell.task.is_review else "wfbench_row")
        measured: Row = request.getfixturevalue(name)
        return measured
    row = wfbench_sweep.replay(wfbench_cell, planned)
    request.node.stash[REPLAYED_KEY] = row
    request.node.user_properties.extend(row.properties())
    if row.error_kind is not None and ERROR_KINDS[row.error_kind].is_failure:
        raise CellFailure(row.error_kind, row.error_detail or "")
    return row


@pytest.fixture
def wfbench_record(
    wfbench_cell: AnyCell, wfbench_sweep: Sweep, request: pytest.FixtureRequest
) -> Iterator[CellRecord]:
    """The cell's record; its teardown writes the row and the junit properties.
    No cell starts once the sweep is stopped (a signal, the outage breaker, the
    cost budget): it is a skip with the reason."""
    sweep, cell_id = wfbench_sweep, wfbench_cell.cell_id
    stop = stop_of(sweep.identity.work_dir)
    if stop is not None:
        pytest.skip(stop.skip_reason)
    if sweep.ledger is not None:
        refused = sweep.ledger.admit(cell_id, wfbench_cell.arm_name)
        if refused is not None:
            pytest.skip(request_stop(sweep.identity.work_dir, BUDGET, refused).skip_reason)
    arm = getattr(wfbench_cell, "arm", None)
    audit = arm.audit if arm is not None else None
    record = CellRecord(cell_id=cell_id, started=time.monotonic(),
                        started_at=utc_now("milliseconds"),
                        # An exploit that is only flagged is still caught, not a win.
                        suspicious_fails=sweep.options.suspicious == "fail" or audit == "hack",
                        audit=None if arm is None or audit is None else {
                            "role": audit, "name": arm.audit_name,
                            "description": arm.description, "counts": dict(arm.audit_counts)},
                        progress=lambda name: sweep.stages.stage(cell_id, name))
    request.node.stash[RECORD_KEY] = record
    try:
        yield record
    finally:
        row = sweep.record_row(wfbench_cell, record, time.monotonic() - record.started)
        request.node.user_properties.extend(row.properties())
        sweep.stages.done(cell_id)
        if sweep.ledger is not None:
            sweep.ledger.settle(cell_id, wfbench_cell.arm_name,
                                row_cost(row.to_json(), sweep.prices))


@pytest.fixture
def wfbench_template(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord
) -> Template:
    """The sanitized checkout of the task's repo at its SHA (built once per sweep)."""
    with stage(wfbench_record, "template"):
        template = wfbench_sweep.templates().get(wfbench_cell.task, wfbench_record.stage_ms)
    wfbench_record.task_base_sha = template.base_sha
    wfbench_record.sanitized_sha = template.sanitized_sha
    return template


@pytest.fixture
def wfbench_clone(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template,
) -> Iterator[CellPaths]:
    """A private copy of the template, erased after the cell (without following
    anything the arm left there, however deep)."""
    with stage(wfbench_record, "clone"):
        root = wfbench_sweep.cell_dir(wfbench_cell)
        workspace = make_clone(wfbench_template, root, layered=wfbench_sweep.layered_clones())
        wfbench_record.clone = workspace.method
        home = root / "home"
        home.mkdir()
        arm = wfbench_cell.arm
        if arm.skills is not None:
            wfbench_record.skills_fingerprint = install_skills(arm.skills, workspace.files,
                                                               arm.overlay)
        if arm.overlay is not None:
            wfbench_record.overlay_digest = wfbench_sweep.overlay_digest()
        if wfbench_cell.arm.plugin and wfbench_sweep.plugin is not None:
            wfbench_record.plugin = wfbench_sweep.plugin.to_json()
    yield CellPaths(root=root, workspace=workspace, home=home)
    if wfbench_sweep.options.keep_workspaces:
        if workspace.layered:
            # For people: the merged tree as a folder, where a copied one would be.
            with stage(wfbench_record, "cleanup"):
                kept = root / "kept-layer"
                capture_tree(workspace.files, kept, TreeBounds(), layered=True)
                materialize(JudgedTree(kept, workspace.lower), root / "workspace")
        wfbench_record.kept_workspace = str(root / "workspace")
    if not wfbench_sweep.options.keep_workspaces:
        kind = AFTER_SESSION if wfbench_record.session_completed else "cleanup-failure"
        with stage(wfbench_record, "cleanup", kind):
            remove_tree(root)


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
            result = wfbench_sandbox.run(task.setup, workspace=wfbench_clone.workspace.mount(),
                                         home=wfbench_clone.home, writable=True, network=True,
                                         timeout_s=task.timeout_s,
                                         limits=task.sandbox.resolved_limits())
            if not result.ok:
                reason = (f" ({result.limit_hit.describe()})" if result.limit_hit else
                          " (timed out)" if result.timed_out else "")
                raise CellFailure("infra-error", f"setup exited {result.returncode}{reason}: "
                                  f"{result.tail()}")
        for hidden in task.oracle.hidden_paths:
            if (wfbench_clone.workspace.files / hidden).exists():
                raise CellFailure("infra-error", f"hidden path {hidden!r} exists after setup")
    return wfbench_clone


@pytest.fixture
def wfbench_session(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
) -> SessionResult:
    """The arm's session(s); on return every process of the arm has exited.
    A session that timed out or went over a limit returns too (a verdict)."""
    cell, sweep, record = wfbench_cell, wfbench_sweep, wfbench_record
    result = SessionResult()
    try:
        with stage(record, "session", "session-error"):
            if cell.arm.is_agent:
                record.model = sweep.agent_settings.model
                record.effort = sweep.agent_settings.effort
                agent = AgentCell(
                    progress=record.progress,
                    settings=sweep.agent_settings, plugin=sweep.plugin,
                    template=wfbench_template, scratch=wfbench_setup.root, store=sweep.store,
                    skills_fingerprint=record.skills_fingerprint, proxy=sweep.api_proxy(),
                    limits=cell.task.sandbox.resolved_limits(),
                    bounds=sweep.tree_bounds(cell.task))
                run_agent_arm(cell, wfbench_sandbox, wfbench_setup.workspace,
                              wfbench_setup.home, result, agent)
            else:
                run_session(cell, wfbench_sandbox, wfbench_setup.workspace, wfbench_setup.home,
                            result, admitted_chars=sweep.options.admitted_output_chars)
            record.session_completed = True
            sweep.session_completed(cell)
    finally:
        record_session(record, result)
    return result


@pytest.fixture
def wfbench_verify(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_setup: CellPaths, wfbench_sandbox: Sandbox, wfbench_session: SessionResult,
) -> VerifyResult:
    """The task's visible verify command, read-only and offline."""
    if wfbench_record.failure_kind is not None:
        return VerifyResult(False, "not run: the session did not complete")
    with stage(wfbench_record, "verify", AFTER_SESSION):
        result = run_verify(wfbench_cell.task, wfbench_sandbox, wfbench_setup.workspace.mount(),
                            bytecode=wfbench_sweep.bytecode())
        wfbench_record.verify_passed = result.passed
        wfbench_record.verify_detail = result.detail
        return result
    return VerifyResult(False, "not run")


@pytest.fixture
def wfbench_final(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_setup: CellPaths, wfbench_verify: VerifyResult,
) -> FinalTree | None:
    """The workspace as the arm left it, captured into the harness's own tree
    (bounded; links copied as links, special files and nested ``.git`` left out);
    None when the capture went over a bound (a counted ``limit-exceeded``)."""
    path = wfbench_setup.root / f"final-{secrets.token_hex(6)}"
    workspace = wfbench_setup.workspace
    with stage(wfbench_record, "capture", AFTER_SESSION):
        capture = capture_tree(workspace.files, path, wfbench_sweep.tree_bounds(wfbench_cell.task),
                               layered=workspace.layered)
        return FinalTree(JudgedTree(path, workspace.lower), capture)
    return None


@pytest.fixture
def wfbench_evidence(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_final: FinalTree | None,
) -> CellRecord:
    """Churn against the sanitized base, the final patch as an artifact (with
    notes on what it cannot show), and the suspicion scan of the patch."""
    record = wfbench_record
    if wfbench_final is None:
        return record
    exclude = (SKILLS_DIR,) if record.skills_fingerprint is not None else ()
    with stage(record, "evidence", AFTER_SESSION):
        churn = diff_against_base(wfbench_template, wfbench_final.tree.root,
                                  wfbench_final.capture, wfbench_setup.root, exclude)
        name = wfbench_sweep.store.write_artifact(f"{wfbench_cell.cell_id}.patch", churn.patch)
        record.diff_files = churn.files
        record.diff_insertions = churn.insertions
        record.diff_deletions = churn.deletions
        record.artifacts.append(name)
        record.evidence_notes = list(churn.notes)
        patch = churn.patch.decode("utf-8", "replace")
        record.suspicious = scan_patch(patch, churn.notes,
                                       python_sources(wfbench_final, patch, churn.notes))
    return record


@pytest.fixture
def wfbench_oracle(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
    wfbench_final: FinalTree | None, wfbench_evidence: CellRecord,
) -> OracleResult | None:
    """The hidden oracle, staged now that the arm has exited, on the captured
    tree; then erased. Not run for a cell that already failed."""
    record, task = wfbench_record, wfbench_cell.task
    if record.failure_kind is not None or wfbench_final is None:
        return None
    snapshot = wfbench_sweep.oracles[task.id]
    with stage(record, "expected_tests", "oracle-unavailable"):
        expectation = wfbench_sweep.expectations().get(task, snapshot, wfbench_template,
                                                        wfbench_sandbox)
    if record.failure_kind is not None:
        return None
    with stage(record, "oracle", AFTER_SESSION):
        result = run_oracle(task, snapshot, wfbench_template, wfbench_sandbox,
                            wfbench_final.tree, wfbench_setup.root, expectation,
                            bytecode=wfbench_sweep.bytecode())
        record.oracle_passed = result.passed
        record.oracle_digest = result.digest
        record.oracle_judged_by = result.judged_by
        record.oracle_tests_expected = result.expected_tests
        record.oracle_detail = None if result.passed else result.detail
        return result
    return None


@pytest.fixture
def wfbench_row(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_session: SessionResult, wfbench_oracle: OracleResult | None,
) -> Row:
    """The cell's outcome as its row will say it (written by the record's
    teardown); the arm's own evidence checks (SPEC §4) make it an error."""
    record = wfbench_record
    if record.failure_kind is None and wfbench_session.evidence_failure is not None:
        record.fail(*wfbench_session.evidence_failure)
        raise CellFailure(*wfbench_session.evidence_failure)
    return wfbench_sweep.build_row(wfbench_cell, record, time.monotonic() - record.started)
