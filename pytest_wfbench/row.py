"""The row: the JSON record of one cell (SPEC §6), and the record a cell's
stages fill in as it runs."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pytest_wfbench import __version__
from pytest_wfbench.outcomes import ERROR_KINDS, counted

ROW_SCHEMA_VERSION = 1
MAX_ERROR_DETAIL_CHARS = 2000


@dataclass
class Row:
    """One cell's measurement. Field names are the JSON keys."""

    schema_version: int
    sweep_id: str
    cell_id: str
    suite: str
    task: str
    task_class: str
    arm: str
    arm_kind: str
    run: int
    status: str  # "ran" or "skipped"
    resolved: bool
    ok: bool
    error_kind: str | None
    error_class: str | None
    error_detail: str | None
    counted: bool
    skip_reason: str | None
    authored_tests_passed: bool | None
    oracle_passed: bool | None
    duration_s: float
    session_duration_s: float | None
    num_turns: int | None
    tool_calls: int | None
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    output_tokens: int
    estimated_tokens: int | None
    cost_usd: float | None
    diff_files: int | None
    diff_insertions: int | None
    diff_deletions: int | None
    artifacts: list[str]
    session_ids: list[str]
    steps: list[dict[str, Any]]
    task_base_sha: str | None
    sanitized_sha: str | None
    task_prompt_digest: str
    oracle_digest: str | None
    harness_version: str
    sandbox_backend: str
    model: str | None
    effort: str | None
    phases: list[dict[str, Any]]
    main_usage: dict[str, int]
    """The CLI's ``usage`` (main loop only), summed over phases."""
    model_usage: dict[str, dict[str, Any]]
    """The CLI's ``modelUsage`` (every model), summed over phases; the token fields
    above are its totals."""
    plugin: dict[str, str] | None
    skills_fingerprint: str | None
    overlay_digest: str | None
    """A candidate arm's overlay (--wfbench-candidate-overlay): its content digest."""
    audit: dict[str, Any] | None
    """An audit arm's cell: its role (hack, probe, mutant), name and description."""
    lane: str
    """``agent`` (tasks and arms) or ``tool-cost`` (scenarios and subjects)."""
    transport: str | None
    totals: dict[str, Any]
    extras: dict[str, Any]
    random_seed: int | None
    measurement_lock_wait_ms: float | None
    subject_version: str | None
    suspicious: list[str]
    """What the final patch does that reaches into its judges (judge/suspicion.py)."""
    oracle_judged_by: str | None
    """``tests`` (each expected test reported as passed) or ``exit-code``."""
    oracle_tests_expected: int | None
    limit_exceeded: dict[str, Any] | None
    """The limit a session or its leftovers went over: its name and value."""
    evidence_notes: list[str]
    """What the patch artifact could not show as a diff (nested repositories,
    special files, large files summarized, caches left out, a cut)."""
    stage_ms: dict[str, float]
    """Milliseconds spent in each stage of the cell: template (split into its
    lock wait and its build when this cell built it), clone, setup, session,
    verify, capture, evidence, expected_tests, oracle, cleanup, row."""
    harness_overhead_s: float | None
    """The cell's duration minus its session's: what the harness cost."""
    clone: str | None
    """How the workspace was made: ``overlay`` (layered over the template) or ``copy``."""
    kept_workspace: str | None
    """With --wfbench-keep-workspaces: where the cell's workspace was kept."""
    identity: dict[str, Any]
    """What decides what the measurement means (:mod:`pytest_wfbench.identity`):
    a row is kept on resume, or reused, only when this matches the cell's."""
    reused: bool
    reused_from: str | None
    """A reused row: the sweep it was measured in (its recorded_at is that sweep's)."""
    worker: str
    started_at: str | None
    """When the cell started (UTC, milliseconds); None for a cell that never ran."""
    recorded_at: str
    review_scored: bool | None = None
    """Review tasks only (None otherwise): whether the arm's review artifact was
    valid and scored against the task's hidden labels."""
    review: dict[str, Any] | None = None
    """The review's score (``ReviewScore.to_json``: counts and shares, never the
    labels' content) when it was scored."""
    shard: str | None = None
    """``I/N`` when the sweep ran as shards (--wfbench-shard), else None."""
    merged_from: str | None = None
    """A row ``wfbench merge`` took from another sweep: the id it was measured in
    (``sweep_id`` is then the merged sweep's). None otherwise."""

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["class"] = data.pop("task_class")
        return data

    def properties(self) -> list[tuple[str, object]]:
        """The figures a CI dashboard reads, as junit properties."""
        keys = (
            "cell_id", "task", "arm", "run", "status", "resolved", "error_kind", "duration_s",
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "output_tokens", "estimated_tokens", "cost_usd", "num_turns", "tool_calls",
            "diff_files", "diff_insertions", "diff_deletions", "oracle_passed",
            "authored_tests_passed", "sandbox_backend", "model", "sweep_id",
        )
        data = self.to_json()
        properties = [(f"wfbench.{key}", "" if data[key] is None else data[key])
                      for key in keys]
        properties.append(("wfbench.suspicious", "; ".join(self.suspicious)))
        return properties


@dataclass
class CellRecord:
    """What the stages of one cell learn, in the order they learn it.

    The ``wfbench_record`` fixture creates it; each stage fixture writes its
    part; the record fixture's teardown turns it into a :class:`Row` whatever
    happened, so no finished cell goes unrecorded.
    """

    cell_id: str
    started: float
    started_at: str | None = None
    failure_kind: str | None = None
    failure_detail: str | None = None
    skip_reason: str | None = None
    task_base_sha: str | None = None
    sanitized_sha: str | None = None
    oracle_digest: str | None = None
    session_completed: bool = False
    session_duration_s: float | None = None
    num_turns: int | None = None
    tool_calls: int | None = None
    estimated_tokens: int | None = None
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    session_ids: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    verify_passed: bool | None = None
    verify_detail: str | None = None
    oracle_passed: bool | None = None
    diff_files: int | None = None
    diff_insertions: int | None = None
    diff_deletions: int | None = None
    artifacts: list[str] = field(default_factory=list)
    model: str | None = None
    effort: str | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    main_usage: dict[str, int] = field(default_factory=dict)
    model_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    plugin: dict[str, str] | None = None
    skills_fingerprint: str | None = None
    overlay_digest: str | None = None
    audit: dict[str, Any] | None = None
    lane: str = "agent"
    transport: str | None = None
    totals: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    random_seed: int | None = None
    measurement_lock_wait_ms: float | None = None
    subject_version: str | None = None
    suspicious: list[str] = field(default_factory=list)
    suspicious_fails: bool = False
    """--wfbench-suspicious fail: a suspicious resolved cell counts as unresolved."""
    oracle_judged_by: str | None = None
    oracle_tests_expected: int | None = None
    oracle_detail: str | None = None
    limit_exceeded: dict[str, Any] | None = None
    evidence_notes: list[str] = field(default_factory=list)
    stage_ms: dict[str, float] = field(default_factory=dict)
    clone: str | None = None
    kept_workspace: str | None = None
    progress: Callable[[str], None] | None = None
    """Told each stage's name as it starts (the sweep's live progress)."""
    review_scored: bool | None = None
    review: dict[str, Any] | None = None
    row: Row | None = None

    def add_stage_time(self, name: str, seconds: float) -> None:
        self.stage_ms[name] = round(self.stage_ms.get(name, 0.0) + seconds * 1000, 1)

    def fail(self, kind: str, detail: str) -> None:
        """Record the first failure; later ones are consequences of it."""
        if self.failure_kind is None:
            self.failure_kind, self.failure_detail = kind, detail

    def outcome(self) -> tuple[bool, str | None, str | None]:
        """(resolved, error_kind, error_detail) by the rule of SPEC §3 and §5."""
        if self.failure_kind is not None:
            return False, self.failure_kind, self.failure_detail
        if not self.session_completed:
            return False, "infra-error", "the cell ended before its session completed"
        if self.review_scored is not None:
            return self._review_outcome()
        if self.verify_passed is not True:
            kind = "step-failed" if self.lane == "tool-cost" else "verify-failed"
            return False, kind, self.verify_detail
        if self.oracle_passed is not True:
            if self.lane == "tool-cost":
                failed = [c["detail"] for c in self.extras.get("oracle_checks", [])
                          if not c["passed"]]
                return False, "oracle-failed", "; ".join(failed) or "the oracle failed"
            return False, "oracle-failed", (self.oracle_detail or
                                            "the hidden oracle failed (its output is not kept)")
        if self.suspicious and self.suspicious_fails:
            return False, "suspicious", ("resolved, but the patch reaches into its judges "
                                         f"(--wfbench-suspicious fail): "
                                         f"{'; '.join(self.suspicious)}")
        return True, None, None

    def _review_outcome(self) -> tuple[bool, str | None, str | None]:
        """A review cell has no verify and no oracle command: it is resolved when
        its scored review matches the hidden labels (review/score.py)."""
        if not self.review_scored or self.review is None:
            return False, "harness-error", "the review cell ended without a score"
        if self.review.get("resolved") is True:
            return True, None, None
        return False, "oracle-failed", (self.oracle_detail or
                                        "the review does not match the hidden labels")


def utc_now(timespec: str = "seconds") -> str:
    return datetime.now(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def bounded(detail: str | None) -> str | None:
    if detail is None or len(detail) <= MAX_ERROR_DETAIL_CHARS:
        return detail
    half = MAX_ERROR_DETAIL_CHARS // 2
    return f"{detail[:half]}\n[... {len(detail) - 2 * half} characters cut ...]\n{detail[-half:]}"


def error_class(error_kind: str | None) -> str | None:
    return None if error_kind is None else ERROR_KINDS[error_kind].error_class.value




class RowCell(Protocol):
    """What a row needs to know of its cell (an agent cell or a scenario cell)."""

    @property
    def cell_id(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def run(self) -> int: ...
    @property
    def task_id(self) -> str: ...
    @property
    def task_class(self) -> str: ...
    @property
    def arm_name(self) -> str: ...
    @property
    def arm_kind(self) -> str: ...
    @property
    def prompt_text(self) -> str: ...


def make_row(
    *, cell: RowCell, record: CellRecord, sweep_id: str, sandbox_backend: str, worker: str,
    duration_s: float, identity: dict[str, Any] | None = None, shard: str | None = None,
) -> Row:
    """Turn a cell's record into its row: outcome, figures and provenance."""
    skipped = record.skip_reason is not None
    resolved, kind, detail = (False, None, None) if skipped else record.outcome()
    return Row(
        schema_version=ROW_SCHEMA_VERSION, sweep_id=sweep_id, cell_id=cell.cell_id,
        suite=cell.suite, task=cell.task_id, task_class=cell.task_class, arm=cell.arm_name,
        arm_kind=cell.arm_kind, run=cell.run,
        status="skipped" if skipped else "ran", resolved=resolved,
        ok=not skipped and (kind is None or not ERROR_KINDS[kind].is_failure),
        error_kind=kind, error_class=error_class(kind), error_detail=bounded(detail),
        counted=not skipped and counted(kind, record.session_completed),
        skip_reason=record.skip_reason,
        authored_tests_passed=record.verify_passed, oracle_passed=record.oracle_passed,
        duration_s=round(duration_s, 3),
        session_duration_s=None if record.session_duration_s is None
        else round(record.session_duration_s, 3),
        num_turns=record.num_turns, tool_calls=record.tool_calls,
        input_tokens=record.input_tokens,
        cache_creation_input_tokens=record.cache_creation_input_tokens,
        cache_read_input_tokens=record.cache_read_input_tokens,
        output_tokens=record.output_tokens, estimated_tokens=record.estimated_tokens,
        cost_usd=record.cost_usd, diff_files=record.diff_files,
        diff_insertions=record.diff_insertions, diff_deletions=record.diff_deletions,
        artifacts=list(record.artifacts), session_ids=list(record.session_ids),
        steps=list(record.steps), task_base_sha=record.task_base_sha,
        sanitized_sha=record.sanitized_sha,
        task_prompt_digest=hashlib.sha256(cell.prompt_text.encode()).hexdigest(),
        oracle_digest=record.oracle_digest, harness_version=__version__,
        sandbox_backend=sandbox_backend, model=record.model, effort=record.effort,
        phases=list(record.phases), main_usage=dict(record.main_usage),
        model_usage=dict(record.model_usage), plugin=record.plugin,
        skills_fingerprint=record.skills_fingerprint, overlay_digest=record.overlay_digest,
        audit=record.audit,
        lane=record.lane,
        transport=record.transport, totals=dict(record.totals), extras=dict(record.extras),
        random_seed=record.random_seed, measurement_lock_wait_ms=record.measurement_lock_wait_ms,
        subject_version=record.subject_version, suspicious=list(record.suspicious),
        oracle_judged_by=record.oracle_judged_by,
        oracle_tests_expected=record.oracle_tests_expected,
        limit_exceeded=record.limit_exceeded, evidence_notes=list(record.evidence_notes),
        stage_ms=dict(record.stage_ms),
        harness_overhead_s=None if skipped else round(
            duration_s - (record.session_duration_s or 0.0), 3),
        clone=record.clone, kept_workspace=record.kept_workspace,
        identity=dict(identity or {}), reused=False, reused_from=None, worker=worker,
        started_at=record.started_at, recorded_at=utc_now(),
        review_scored=record.review_scored,
        review=None if record.review is None else dict(record.review),
        shard=shard,
    )
