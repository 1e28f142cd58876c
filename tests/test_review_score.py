"""Scoring a review against hidden labels (review.score), on hand-built cases."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from pytest_wfbench.review.artifact import (
    ReviewArtifact,
    ReviewFinding,
    gold_review,
    noop_review,
    parse_review,
    render_review,
)
from pytest_wfbench.review.change import parse_change
from pytest_wfbench.review.score import (
    SEVERITY_WEIGHTS,
    TOLERANCE_LINES,
    gap,
    match_findings,
    score_review,
)
from pytest_wfbench.tasks import ReviewLabel, ReviewLabels, load_task_file

CORE = "textstats/core.py"
# The change touched core.py lines 20-34 and the test file's lines 36-40.
CHANGED = {CORE: ((20, 34),), "tests/test_core.py": ((36, 40),)}


def finding(line: int, end_line: int | None = None, *, path: str = CORE, severity: str = "medium",
            category: str = "correctness", blocking: bool = True,
            finding_id: str = "F") -> ReviewFinding:
    return ReviewFinding(id=finding_id, severity=severity, path=path, line=line,
                         end_line=end_line if end_line is not None else line,
                         category=category, scenario="s", evidence="e", recommendation="r",
                         blocking=blocking)


def label(line: int, end_line: int | None = None, *, path: str = CORE, severity: str = "medium",
          category: str = "correctness", blocking: bool = True) -> ReviewLabel:
    return ReviewLabel(path=path, line=line, end_line=end_line if end_line is not None else line,
                       severity=severity, category=category, blocking=blocking)


def review(*findings: ReviewFinding, verdict: str = "request_changes") -> ReviewArtifact:
    return ReviewArtifact(verdict=verdict, findings=findings)


def labels(*expected: ReviewLabel, verdict: str = "request_changes") -> ReviewLabels:
    return ReviewLabels(findings=expected, verdict=verdict)


def test_tolerance_and_weights_are_the_documented_ones() -> None:
    assert TOLERANCE_LINES == 3
    assert SEVERITY_WEIGHTS == {"critical": 8, "high": 4, "medium": 2, "low": 1}
    docs = (Path(__file__).resolve().parent.parent / "docs" / "review.md").read_text()
    assert f"**{TOLERANCE_LINES} lines**" in docs
    assert "**critical 8,\n  high 4, medium 2, low 1**" in docs


def test_exact_match_resolves() -> None:
    score = score_review(review(finding(32, 33)), labels(label(32, 33)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (1, 0, 0)
    assert (score.precision, score.recall, score.f1) == (1.0, 1.0, 1.0)
    assert (score.weighted_precision, score.weighted_recall, score.weighted_f1) == (1, 1, 1)
    assert (score.blocker_recall, score.severity_accuracy, score.category_accuracy) == (1, 1, 1)
    assert (score.grounding, score.verdict_correct, score.resolved) == (1.0, True, True)
    assert (score.clean_control, score.clean_control_pass) == (False, None)
    assert score.matches == ((0, 0),)


@pytest.mark.parametrize(("line", "end_line", "matched"), [
    (35, 35, True),    # 2 lines below the label's end
    (36, 40, True),    # 3 below: the edge of the tolerance
    (37, 40, False),   # 4 below
    (29, 29, True),    # 3 above the label's start
    (28, 28, False),   # 4 above
    (30, 36, True),    # around it, no longer than the widened label (29-36)
    (29, 37, False),   # around it, one line longer than that
    (20, 40, False),   # around it, over three times as long: where is the problem?
])
def test_off_by_a_few_lines(line: int, end_line: int, matched: bool) -> None:
    score = score_review(review(finding(line, end_line)), labels(label(32, 33)), CHANGED)
    assert (score.tp, score.fp, score.fn) == ((1, 0, 0) if matched else (0, 1, 1))
    assert score.resolved is matched


def test_the_same_lines_on_another_path_do_not_match() -> None:
    score = score_review(review(finding(32, path="textstats/tokens.py")),
                         labels(label(32)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (0, 1, 1)


def test_two_findings_on_one_label_one_is_a_false_positive() -> None:
    far, near = finding(34, finding_id="far"), finding(32, finding_id="near")
    score = score_review(review(far, near), labels(label(32)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (1, 1, 0)
    assert score.matches == ((1, 0),)  # the nearer finding takes the label
    assert (score.precision, score.recall) == (0.5, 1.0)
    assert score.f1 == pytest.approx(2 * 0.5 * 1.0 / 1.5)
    assert score.resolved is False


def test_one_finding_spanning_two_labels_takes_one() -> None:
    score = score_review(review(finding(21, 26)), labels(label(22), label(25)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (1, 0, 1)
    assert (score.precision, score.recall) == (1.0, 0.5)
    assert score.resolved is False


def test_the_matching_is_maximum_not_greedy() -> None:
    # The wide finding could take the first label, leaving the second unmatched;
    # the narrow one fits only the first. A maximum matching gives both.
    wide, narrow = finding(22, 28, finding_id="wide"), finding(22, finding_id="narrow")
    score = score_review(review(wide, narrow), labels(label(22), label(31)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (2, 0, 0)
    assert score.matches == ((1, 0), (0, 1))


def test_a_finding_outside_the_change_is_not_grounded() -> None:
    inside, outside = finding(32), finding(5, path="README.md")
    score = score_review(review(inside, outside), labels(label(32)), CHANGED)
    assert (score.grounded_findings, score.grounding) == (1, 0.5)
    assert (score.tp, score.fp) == (1, 1)
    # Near the change (within the tolerance) counts; far from it on the same file does not.
    near = score_review(review(finding(37)), labels(), CHANGED)
    far = score_review(review(finding(2)), labels(), CHANGED)
    assert (near.grounding, far.grounding) == (1.0, 0.0)


def test_empty_review_of_a_clean_control_passes() -> None:
    score = score_review(review(verdict="approve"), labels(verdict="approve"), CHANGED)
    assert (score.tp, score.fp, score.fn) == (0, 0, 0)
    assert (score.precision, score.recall, score.f1, score.weighted_f1) == (1, 1, 1, 1)
    assert (score.blocker_recall, score.severity_accuracy, score.category_accuracy) == (
        None, None, None)
    assert (score.grounding, score.clean_control, score.clean_control_pass) == (1.0, True, True)
    assert score.resolved is True


def test_a_finding_on_a_clean_control_fails_it() -> None:
    score = score_review(review(finding(32, severity="low"), verdict="comment"),
                         labels(verdict="approve"), CHANGED)
    assert (score.fp, score.precision, score.recall, score.f1) == (1, 0.0, 1.0, 0.0)
    assert (score.clean_control_pass, score.verdict_correct, score.resolved) == (
        False, False, False)


def test_empty_review_of_a_buggy_change_misses_everything() -> None:
    score = score_review(review(verdict="approve"), labels(label(32)), CHANGED)
    assert (score.tp, score.fp, score.fn) == (0, 0, 1)
    assert (score.precision, score.recall, score.f1) == (1.0, 0.0, 0.0)
    assert (score.blocker_recall, score.verdict_correct, score.resolved) == (0.0, False, False)


def test_wrong_severity_and_category_still_match() -> None:
    score = score_review(review(finding(32, severity="critical", category="security")),
                         labels(label(32, severity="low", category="correctness")), CHANGED)
    assert (score.tp, score.severity_accuracy, score.category_accuracy) == (1, 0.0, 0.0)
    assert score.resolved is True  # resolution asks for the findings and the verdict


def test_severity_weights() -> None:
    expected = labels(label(22, severity="critical"), label(31, severity="low"))
    found = review(finding(31, severity="medium"), finding(5, path="README.md",
                                                            severity="high"))
    score = score_review(found, expected, CHANGED)
    # Recall weighs the labels: the low one found (1) of critical + low (8 + 1).
    assert score.weighted_recall == pytest.approx(1 / 9)
    # Precision weighs the claims: the medium finding matched (2) of medium + high (2 + 4).
    assert score.weighted_precision == pytest.approx(2 / 6)
    p, r = 2 / 6, 1 / 9
    assert score.weighted_f1 == pytest.approx(2 * p * r / (p + r))
    assert (score.precision, score.recall) == (0.5, 0.5)


def test_blocker_recall_needs_the_finding_to_block() -> None:
    expected = labels(label(22, blocking=True), label(31, blocking=True), label(25, blocking=False))
    found = review(finding(22, blocking=True), finding(31, blocking=False),
                   finding(25, blocking=False))
    score = score_review(found, expected, CHANGED)
    assert (score.blocking_labels, score.blockers_found, score.blocker_recall) == (2, 1, 0.5)
    no_blockers = score_review(review(finding(25), verdict="comment"),
                               labels(label(25, blocking=False), verdict="comment"), CHANGED)
    assert (no_blockers.blocking_labels, no_blockers.blocker_recall) == (0, None)


def test_the_wrong_verdict_alone_leaves_it_unresolved() -> None:
    score = score_review(review(finding(32), verdict="comment"), labels(label(32)), CHANGED)
    assert (score.fp, score.fn, score.verdict_correct, score.resolved) == (0, 0, False, False)


def test_score_json_carries_no_label_content() -> None:
    secret = ReviewLabel(path="src/secret_module.py", line=7, end_line=9, severity="high",
                         category="security", blocking=True, id="LABEL-ID-XYZ")
    score = score_review(review(finding(32)), ReviewLabels((secret,), "request_changes"),
                         CHANGED)
    text = json.dumps(score.to_json())
    assert "secret_module" not in text and "LABEL-ID-XYZ" not in text
    assert json.loads(text)["matches"] == [] and json.loads(text)["fn"] == 1
    assert set(json.loads(text)) == set(score.__dataclass_fields__)


def _brute_force_matches(findings: list[ReviewFinding], expected: list[ReviewLabel]) -> int:
    """The largest matching, by trying every assignment (an independent check)."""
    best = 0
    for assigned in itertools.permutations(range(len(findings)), min(len(findings),
                                                                     len(expected))):
        for labels_used in itertools.combinations(range(len(expected)), len(assigned)):
            count = sum(
                1 for f, lab in zip(assigned, labels_used, strict=True)
                if findings[f].path == expected[lab].path
                and gap((findings[f].line, findings[f].end_line),
                        (expected[lab].line, expected[lab].end_line)) <= TOLERANCE_LINES
                and findings[f].end_line - findings[f].line
                <= expected[lab].end_line - expected[lab].line + 2 * TOLERANCE_LINES)
            best = max(best, count)
    return best


def test_matching_size_equals_brute_force_on_random_cases() -> None:
    generator = random.Random(11)
    paths = ("a.py", "b.py")
    for _ in range(300):
        def span() -> tuple[int, int]:
            start = generator.randrange(1, 30)
            return start, start + generator.choice((0, 0, 1, 5, 12))

        findings = [finding(*span(), path=generator.choice(paths))
                    for _ in range(generator.randrange(0, 5))]
        expected = [label(*span(), path=generator.choice(paths))
                    for _ in range(generator.randrange(0, 5))]
        matches = match_findings(findings, expected)
        assert len(matches) == _brute_force_matches(findings, expected)
        assert len({f for f, _ in matches}) == len(matches) == len({lab for _, lab in matches})
        assert matches == match_findings(findings, expected)  # deterministic


def test_gold_resolves_every_demo_review_task_and_noop_only_the_clean_control() -> None:
    demo = Path(__file__).resolve().parent.parent / "tasks" / "demo.yaml"
    outcomes = {}
    for task in [task for task in load_task_file(demo).tasks if task.is_review]:
        assert task.change is not None and task.oracle.review is not None
        changed = parse_change(task.change.read_bytes()).changed_ranges
        for arm, artifact in (("gold", gold_review(task.oracle.review)), ("noop", noop_review())):
            written = parse_review(render_review(artifact))  # as the arm's file is read back
            score = score_review(written, task.oracle.review, changed)
            outcomes[task.id, arm] = (score.resolved, score.grounding)
    assert outcomes == {
        ("review-stop-words", "gold"): (True, 1.0),
        ("review-stop-words", "noop"): (False, 1.0),
        ("review-top-words-doc", "gold"): (True, 1.0),
        ("review-top-words-doc", "noop"): (True, 1.0),
    }
