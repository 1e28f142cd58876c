"""A review cell's lifecycle as a fixture (docs/review.md): record -> template ->
clone -> setup (the change cells' own fixtures, :mod:`pytest_wfbench.fixtures`),
then the change applied, the session with the workspace read-only, the review
artifact read from its folder, the workspace checked unchanged, the review scored
against the hidden labels, and the row.

Whatever makes the review untrustworthy to score (a changed workspace, an attempt
to edit it, an artifact that is missing, oversized, not JSON, invalid, or a link
or special file in its place) is ``review-evidence-invalid``, with the reason.
The labels never leave the harness: the clone, the prompt and the sandbox have
none of them, and the row holds the score's counts and shares only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import pytest

from pytest_wfbench.agents.phases import AgentCell, phase_changes
from pytest_wfbench.cells import Cell
from pytest_wfbench.oracle import OracleSnapshot, combined_digest
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.review.artifact import (
    ARTIFACT_NAME,
    MAX_ARTIFACT_BYTES,
    ReviewArtifactError,
    parse_review,
)
from pytest_wfbench.review.change import parse_change
from pytest_wfbench.review.folder import ReviewFolder, read_artifact
from pytest_wfbench.review.score import ReviewScore, score_review
from pytest_wfbench.review.session import (
    apply_change,
    run_review_session,
    workspace_write_attempts,
)
from pytest_wfbench.row import CellRecord, Row
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.session import SessionResult
from pytest_wfbench.stages import AFTER_SESSION, CellPaths, record_session, stage
from pytest_wfbench.sweep import Sweep
from pytest_wfbench.workspace.evidence import workspace_changes
from pytest_wfbench.workspace.template import Template

INVALID = "review-evidence-invalid"
MAX_LISTED = 5


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" (and {len(items) - MAX_LISTED} more)" if len(items) > MAX_LISTED else "")


def unresolved_detail(score: ReviewScore) -> str:
    """Why a scored review does not resolve, in counts only (never the labels)."""
    return (f"the review does not match the hidden labels: {score.fp} false positive(s), "
            f"{score.fn} missed label(s) of {score.labels}, verdict "
            f"{'right' if score.verdict_correct else 'wrong'}")


@pytest.fixture
def wfbench_review_row(
    wfbench_cell: Cell, wfbench_sweep: Sweep, wfbench_record: CellRecord,
    wfbench_template: Template, wfbench_setup: CellPaths, wfbench_sandbox: Sandbox,
) -> Row:
    """A review cell from its applied change to its row (written by the record's
    teardown): session, artifact, workspace check, score."""
    cell, sweep, record, paths = wfbench_cell, wfbench_sweep, wfbench_record, wfbench_setup
    task = cell.task
    record.review_scored = False
    record.oracle_digest = combined_digest(sweep.oracles[task.id], wfbench_template)
    bounds = sweep.tree_bounds(task)
    with stage(record, "change"):
        folder = ReviewFolder.create(paths.root)
        apply_change(task, wfbench_sandbox, paths.workspace, paths.home)
        # The workspace as the session must leave it: the template, set up, changed.
        expected = workspace_changes(wfbench_template, paths.workspace, paths.root, bounds)
    if record.failure_kind is not None:
        return sweep.build_row(cell, record, time.monotonic() - record.started)
    result = SessionResult()
    try:
        with stage(record, "session", "session-error"):
            agent = None
            if cell.arm.is_agent:
                record.model = sweep.agent_settings.model
                record.effort = sweep.agent_settings.effort
                agent = AgentCell(
                    settings=sweep.agent_settings, plugin=sweep.plugin,
                    template=wfbench_template, scratch=paths.root, store=sweep.store,
                    skills_fingerprint=record.skills_fingerprint, proxy=sweep.api_proxy(),
                    limits=task.sandbox.resolved_limits(), bounds=bounds)
            run_review_session(cell, wfbench_sandbox, paths.workspace, paths.home, result,
                               folder, admitted_chars=sweep.options.admitted_output_chars,
                               agent=agent)
            record.session_completed = True
            sweep.session_completed(cell)
    finally:
        record_session(record, result)
    if record.failure_kind is None:
        with stage(record, "review", AFTER_SESSION):
            judge_review(cell, sweep, record, wfbench_template, paths, wfbench_sandbox, folder,
                         expected, result)
    if record.failure_kind is None and result.evidence_failure is not None:
        # The arm's own checks (a skill never invoked, ...): the review was scored,
        # measured but not trusted, as a change cell's oracle is.
        record.fail(*result.evidence_failure)
        raise CellFailure(*result.evidence_failure)
    return sweep.build_row(cell, record, time.monotonic() - record.started)


def judge_review(cell: Cell, sweep: Sweep, record: CellRecord, template: Template,
                 paths: CellPaths, sandbox: Sandbox, folder: ReviewFolder,
                 expected: Mapping[str, str], result: SessionResult) -> None:
    """Read, check and score the arm's review into ``record``; CellFailure when
    there is nothing trustworthy to score."""
    task, labels = cell.task, cell.task.oracle.review
    assert labels is not None and task.change is not None
    try:
        data: bytes | None = read_artifact(folder.host)
        unreadable = None
    except ReviewArtifactError as error:
        data, unreadable = None, error.reason
    if data is not None and len(data) <= MAX_ARTIFACT_BYTES:
        # Kept whatever it holds (redacted like every artifact), to see why it failed.
        record.artifacts.append(sweep.store.write_artifact(f"{cell.cell_id}.review.json", data))
    after = workspace_changes(template, paths.workspace, paths.root, sweep.tree_bounds(task))
    changed = sorted(phase_changes(dict(expected), after))
    if changed:
        raise CellFailure(INVALID, "the session changed the workspace, which is read-only for "
                          f"a review: {_listed(changed)}")
    attempts = workspace_write_attempts(result.tool_uses,
                                        sandbox.workspace_path(paths.workspace.mount()))
    if attempts:
        raise CellFailure(INVALID, f"the session tried to change the workspace it reviews: "
                          f"{_listed(attempts)}")
    if OracleSnapshot.capture(task).digest != sweep.oracles[task.id].digest:
        raise CellFailure("oracle-unavailable",
                          f"the hidden labels of {task.id!r} changed during the sweep")
    if unreadable is not None or data is None:
        raise CellFailure(INVALID, f"{ARTIFACT_NAME}: {unreadable}")
    try:
        artifact = parse_review(data)
    except ReviewArtifactError as error:
        raise CellFailure(INVALID, f"{ARTIFACT_NAME}: {error.reason}") from None
    score = score_review(artifact, labels, parse_change(task.change.read_bytes()).changed_ranges)
    record.review = score.to_json()
    record.review_scored = True
    record.oracle_passed = score.resolved
    record.oracle_detail = None if score.resolved else unresolved_detail(score)
