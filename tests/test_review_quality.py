"""The report's "Review quality" section (review.quality), from plain rows."""

from __future__ import annotations

from typing import Any

from pytest_wfbench.review.artifact import ReviewArtifact, ReviewFinding
from pytest_wfbench.review.quality import (
    HEADERS,
    render_review_quality,
    review_quality,
    review_quality_section,
)
from pytest_wfbench.review.score import score_review
from pytest_wfbench.tasks import ReviewLabel, ReviewLabels

BUG = ReviewLabels((ReviewLabel("a.py", 10, 10, "high", "correctness", True),
                    ReviewLabel("a.py", 40, 40, "low", "tests", False)), "request_changes")
CLEAN = ReviewLabels((), "approve")
CHANGED = {"a.py": ((1, 50),)}


def _finding(line: int, *, blocking: bool = True, path: str = "a.py") -> ReviewFinding:
    return ReviewFinding(id=f"F{line}", severity="high", path=path, line=line, end_line=line,
                         category="correctness", scenario="s", evidence="e",
                         recommendation="r", blocking=blocking)


def _row(task: str, arm: str, labels: ReviewLabels | None, *lines: int,
         verdict: str = "request_changes", blocking: bool = True) -> dict[str, Any]:
    """A review row; ``labels`` None: a run whose review could not be scored."""
    row: dict[str, Any] = {"task": task, "arm": arm, "error_kind": None}
    if labels is None:
        row.update(review_scored=False, error_kind="review-evidence-invalid")
        return row
    artifact = ReviewArtifact(verdict, tuple(_finding(n, blocking=blocking) for n in lines))
    row.update(review_scored=True, review=score_review(artifact, labels, CHANGED).to_json())
    return row


def test_medians_and_worst_runs_per_task_and_arm() -> None:
    rows = [
        _row("bug", "review", BUG, 10, 40),          # tp 2 fp 0 fn 0
        _row("bug", "review", BUG, 10, 40, 25),      # tp 2 fp 1 fn 0
        _row("bug", "review", BUG, 10, blocking=False),  # tp 1 fn 1, the blocker not blocked
        {"task": "bug", "arm": "review", "resolved": True},  # not a review row
    ]
    (quality,) = review_quality(rows)
    assert (quality.task, quality.arm, quality.runs, quality.scored) == ("bug", "review", 3, 3)
    assert quality.medians["tp"] == 2 and quality.medians["fp"] == 0
    assert quality.medians["fn"] == 0
    assert quality.medians["precision"] == 1.0  # of 1.0, 2/3, 1.0
    assert quality.medians["recall"] == 1.0     # of 1.0, 1.0, 0.5
    assert quality.blocker_recall == 0.0        # the worst run
    assert quality.verdict_correct is True
    assert quality.clean_control_pass is None   # not a clean control


def test_unscored_runs_are_counted_but_never_in_medians() -> None:
    rows = [_row("bug", "review", BUG, 10), _row("bug", "review", None),
            _row("bug", "review", None)]
    (quality,) = review_quality(rows)
    assert (quality.runs, quality.scored) == (3, 1)
    assert quality.medians["recall"] == 0.5 and quality.medians["fn"] == 1
    lines = render_review_quality([quality])
    assert "| bug | review | 1/3 |" in "\n".join(lines)
    assert lines[-1] == "Scored review runs per arm: review 1/3."


def test_no_scored_run_shows_na_not_a_vacuous_pass() -> None:
    (quality,) = review_quality([_row("clean", "review", None)])
    assert quality.scored == 0
    assert set(quality.medians.values()) == {None}
    assert (quality.blocker_recall, quality.verdict_correct, quality.clean_control_pass) == (
        None, None, None)
    (row,) = [line for line in render_review_quality([quality]) if line.startswith("| clean")]
    assert row == "| clean | review | 0/1 | " + " | ".join(["n/a"] * 10) + " |"


def test_verdict_and_clean_control_hold_only_if_every_run_holds() -> None:
    rows = [
        _row("clean", "review", CLEAN, verdict="approve"),
        _row("clean", "review", CLEAN, 12, verdict="comment"),
        _row("clean", "noop", CLEAN, verdict="approve"),
        _row("clean", "noop", CLEAN, verdict="approve"),
    ]
    noop, reviewed = review_quality(rows)
    assert (noop.arm, noop.verdict_correct, noop.clean_control_pass) == ("noop", True, True)
    assert (reviewed.arm, reviewed.verdict_correct, reviewed.clean_control_pass) == (
        "review", False, False)
    assert noop.blocker_recall is None  # a clean control has no blocker


def test_rendered_section() -> None:
    rows = [
        _row("bug", "review", BUG, 10, 40),
        _row("bug", "review_baseline", BUG, 10, 40, 25, verdict="comment"),
        _row("bug", "review_baseline", None),
        _row("clean", "review", CLEAN, verdict="approve"),
        _row("clean", "review_baseline", CLEAN, 3, verdict="comment"),
    ]
    lines = review_quality_section(rows)
    assert lines[0] == "## Review quality"
    assert "within 3 lines" in lines[2] and "critical 8, high 4, medium 2, low 1" in lines[2]
    assert lines[4] == "| " + " | ".join(HEADERS) + " |"
    table = lines[6:10]
    assert table == [
        "| bug | review | 1/1 | 2 | 0 | 0 | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | yes | n/a |",
        "| bug | review_baseline | 1/2 | 2 | 1 | 0 | 0.67 | 1.00 | 0.80 | 1.00 | 1.00 | NO "
        "| n/a |",
        "| clean | review | 1/1 | 0 | 0 | 0 | 1.00 | 1.00 | 1.00 | 1.00 | n/a | yes | yes |",
        "| clean | review_baseline | 1/1 | 0 | 1 | 0 | 0.00 | 1.00 | 0.00 | 1.00 | n/a | NO "
        "| NO |",
    ]
    assert lines[10] == ""
    assert lines[-1] == "Scored review runs per arm: review 2/2, review_baseline 2/3."


def test_weighted_f1_in_the_table_is_the_scores() -> None:
    # bug/review_baseline above: findings high(4) x3, two matched: precision 8/12;
    # labels high(4) + low(1), both found: recall 1. F1 = 2 * (2/3) / (5/3) = 0.8.
    row = _row("bug", "review_baseline", BUG, 10, 40, 25)
    assert round(row["review"]["weighted_f1"], 6) == 0.8


def test_no_review_rows_no_section() -> None:
    assert review_quality_section([{"task": "t", "arm": "gold", "resolved": True}]) == []
