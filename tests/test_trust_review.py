"""Red-team round 4, review cells: a review resolves only by finding the labelled
problems, never by covering the files the change touches."""

from __future__ import annotations

import json

import pytest

from pytest_wfbench.review.artifact import ReviewArtifact, ReviewFinding
from pytest_wfbench.review.score import score_review
from pytest_wfbench.tasks import ReviewLabel, ReviewLabels
from tests.conftest import script_arm
from tests.review_suite import BUG_LABEL, review_suite

# A review that reads nothing: one finding over the whole of every file the
# change touches (git diff names them), request_changes.
SHOTGUN = r"""
python - <<'EOF'
import json, os, subprocess
paths = subprocess.run(["git", "diff", "--name-only"], capture_output=True, text=True,
                       check=True).stdout.split()
findings = [{"id": f"F{i}", "severity": "high", "path": path, "line": 1,
             "end_line": 10_000_000, "category": "correctness", "scenario": "somewhere",
             "evidence": "somewhere", "recommendation": "fix it", "blocking": True}
            for i, path in enumerate(paths)]
review = {"schema_version": 1, "verdict": "request_changes", "findings": findings}
with open(os.path.join(os.environ["WFBENCH_REVIEW_DIR"], "review.json"), "w") as out:
    json.dump(review, out)
EOF
"""


def whole_file(path: str) -> ReviewFinding:
    return ReviewFinding(id="F", severity="high", path=path, line=1, end_line=10_000_000,
                         category="correctness", scenario="s", evidence="e",
                         recommendation="r", blocking=True)


def test_a_finding_over_a_whole_file_locates_no_label() -> None:
    label = ReviewLabel(path="a.py", line=120, end_line=121, severity="high",
                        category="correctness", blocking=True)
    score = score_review(ReviewArtifact("request_changes", (whole_file("a.py"),)),
                         ReviewLabels(findings=(label,), verdict="request_changes"),
                         {"a.py": ((100, 130),)})
    assert (score.tp, score.fp, score.fn, score.resolved) == (0, 1, 1, False)


def test_a_review_of_whole_file_findings_does_not_resolve(pytester: pytest.Pytester) -> None:
    suite = review_suite(pytester.path, arms=["shotgun"],
                         arm_definitions={"shotgun": script_arm(SHOTGUN)})
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(failed=1)
    row = suite.row("review-clamp-shotgun-r1")
    artifact = json.loads((suite.out / "artifacts" / "review-clamp-shotgun-r1.review.json")
                          .read_text())
    assert [f["path"] for f in artifact["findings"]] == [BUG_LABEL["path"]]
    assert row["review_scored"] is True and row["resolved"] is False
    assert (row["review"]["tp"], row["review"]["fp"], row["review"]["fn"]) == (0, 1, 1)
    assert row["error_kind"] == "oracle-failed" and row["counted"] is True


def test_a_review_arm_that_keeps_writing_bad_artifacts_does_not_stop_the_sweep(
    pytester: pytest.Pytester
) -> None:
    """review-evidence-invalid is the reviewing arm's doing (counted); it was one
    of the outage breaker's systemic failures, so an arm writing a broken
    review.json a few times in a row aborted the sweep and every other arm's
    cells went unrun."""
    bad = script_arm("echo 'not json' > \"$WFBENCH_REVIEW_DIR/review.json\"")
    suite = review_suite(pytester.path, arms=["broken", "gold"],
                         arm_definitions={"broken": bad})
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-runs", "3",
                                                       "--wfbench-outage-streak", "2"))
    result.assert_outcomes(passed=3, errors=3)
    rows = suite.rows()
    assert sorted((r["arm"], r["status"], r["error_kind"]) for r in rows) == [
        *[("broken", "ran", "review-evidence-invalid")] * 3, *[("gold", "ran", None)] * 3]
    assert "aborted" not in (suite.out / "report.md").read_text()
