"""Scoring a review against a task's hidden labels. Pure.

Rules (docs/review.md states them for users):

- A finding **matches** a label when both name the same path and their line ranges
  overlap once the label's range is widened by :data:`TOLERANCE_LINES` on each
  side (a finding two lines off still counts), and the finding spans no more
  lines than that widened range (a finding must say where the problem is: one
  over a whole file would otherwise match any label in it). Each label takes at
  most one finding and each finding at most one label: a maximum matching, found by
  augmenting paths with labels taken in the task file's order and each label
  trying its candidate findings nearest first (then in the artifact's order), so
  the result is deterministic.
- TP = matched pairs, FP = unmatched findings, FN = unmatched labels. Precision
  is 1.0 when there are no findings and recall 1.0 when there are no labels
  (nothing was claimed wrongly, nothing was missed); F1 is 0.0 when both are 0.
- Severity-weighted precision and recall weigh each finding by the severity it
  claims and each label by its own, with :data:`SEVERITY_WEIGHTS`: a false alarm
  raised as critical costs eight times one raised as low.
- Blocker recall: the share of blocking labels matched by a finding that is
  itself blocking (a blocker mentioned as a nit would still be merged); None
  when the task has no blocking label.
- Severity and category accuracy: the share of matched pairs that agree; None
  without matches.
- Grounding: the share of findings whose path the change touches and whose
  lines overlap its changed lines (same tolerance); 1.0 without findings.
- Verdict correct: the artifact's verdict is the labelled one. A clean control
  (no labels) passes when its review approves with no finding.
- Resolved: no false positive, no false negative, and the right verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_wfbench.review.artifact import ReviewArtifact, ReviewFinding
from pytest_wfbench.review.change import Range
from pytest_wfbench.tasks.model import ReviewLabel, ReviewLabels

TOLERANCE_LINES = 3
SEVERITY_WEIGHTS = {"critical": 8, "high": 4, "medium": 2, "low": 1}


@dataclass(frozen=True)
class ReviewScore:
    """A review's score; ``to_json`` is what a row carries (no label content: only
    counts, shares, and label positions by index)."""

    findings: int
    labels: int
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float
    weighted_precision: float
    weighted_recall: float
    weighted_f1: float
    blocking_labels: int
    blockers_found: int
    blocker_recall: float | None
    severity_accuracy: float | None
    category_accuracy: float | None
    grounded_findings: int
    grounding: float
    verdict: str
    verdict_correct: bool
    clean_control: bool
    clean_control_pass: bool | None
    """None when the task is not a clean control."""
    resolved: bool
    matches: tuple[tuple[int, int], ...]
    """(finding index in the artifact, label index in the task file) pairs."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["matches"] = [list(pair) for pair in self.matches]
        return data


def gap(left: Range, right: Range) -> int:
    """Lines between two ranges; 0 when they overlap."""
    return max(0, left[0] - right[1], right[0] - left[1])


def _span(item: ReviewFinding | ReviewLabel) -> Range:
    return (item.line, item.end_line)


def _lines(item: ReviewFinding | ReviewLabel) -> int:
    return item.end_line - item.line + 1


def locates(finding: ReviewFinding, label: ReviewLabel, tolerance: int = TOLERANCE_LINES) -> bool:
    """Whether ``finding`` points at ``label``'s problem: the same path, a range that
    overlaps the label's widened by ``tolerance`` on each side, and no longer than it."""
    return (finding.path == label.path and gap(_span(finding), _span(label)) <= tolerance
            and _lines(finding) <= _lines(label) + 2 * tolerance)


def match_findings(findings: Sequence[ReviewFinding], labels: Sequence[ReviewLabel],
                   tolerance: int = TOLERANCE_LINES) -> tuple[tuple[int, int], ...]:
    """A maximum matching of findings to labels (see the module's rules), as
    (finding index, label index) pairs sorted by label."""
    candidates = [
        sorted((index for index, finding in enumerate(findings)
                if locates(finding, label, tolerance)),
               key=lambda index: (gap(_span(findings[index]), _span(label)), index))
        for label in labels
    ]
    owner: dict[int, int] = {}  # finding -> label

    def augment(label: int, visited: set[int]) -> bool:
        for finding in candidates[label]:
            if finding in visited:
                continue
            visited.add(finding)
            if finding not in owner or augment(owner[finding], visited):
                owner[finding] = label
                return True
        return False

    for label in range(len(labels)):
        augment(label, set())
    return tuple(sorted(((finding, label) for finding, label in owner.items()),
                        key=lambda pair: pair[1]))


def is_grounded(finding: ReviewFinding, changed: Mapping[str, Sequence[Range]],
                tolerance: int = TOLERANCE_LINES) -> bool:
    """Whether the finding points at lines the change touched (within the tolerance)."""
    return any(gap(_span(finding), span) <= tolerance for span in changed.get(finding.path, ()))


def _share(part: float, whole: float, empty: float) -> float:
    return part / whole if whole else empty


def _f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 2 * precision * recall / total if total else 0.0


def _accuracy(agreeing: int, pairs: int) -> float | None:
    return agreeing / pairs if pairs else None


def score_review(artifact: ReviewArtifact, labels: ReviewLabels,
                 changed: Mapping[str, Sequence[Range]]) -> ReviewScore:
    """Score ``artifact`` against ``labels``; ``changed`` is the change's changed
    line ranges per path (:attr:`Change.changed_ranges`)."""
    findings, expected = artifact.findings, labels.findings
    matches = match_findings(findings, expected)
    tp = len(matches)
    fp, fn = len(findings) - tp, len(expected) - tp
    precision = _share(tp, len(findings), 1.0)
    recall = _share(tp, len(expected), 1.0)
    weight = SEVERITY_WEIGHTS.__getitem__
    weighted_precision = _share(sum(weight(findings[f].severity) for f, _ in matches),
                                sum(weight(f.severity) for f in findings), 1.0)
    weighted_recall = _share(sum(weight(expected[lab].severity) for _, lab in matches),
                             sum(weight(lab.severity) for lab in expected), 1.0)
    blocking = sum(1 for label in expected if label.blocking)
    blockers_found = sum(1 for f, lab in matches
                         if expected[lab].blocking and findings[f].blocking)
    grounded = sum(1 for finding in findings if is_grounded(finding, changed))
    verdict_correct = artifact.verdict == labels.verdict
    clean = labels.clean_control
    return ReviewScore(
        findings=len(findings), labels=len(expected), tp=tp, fp=fp, fn=fn,
        precision=precision, recall=recall, f1=_f1(precision, recall),
        weighted_precision=weighted_precision, weighted_recall=weighted_recall,
        weighted_f1=_f1(weighted_precision, weighted_recall),
        blocking_labels=blocking, blockers_found=blockers_found,
        blocker_recall=blockers_found / blocking if blocking else None,
        severity_accuracy=_accuracy(
            sum(1 for f, lab in matches if findings[f].severity == expected[lab].severity), tp),
        category_accuracy=_accuracy(
            sum(1 for f, lab in matches if findings[f].category == expected[lab].category), tp),
        grounded_findings=grounded, grounding=_share(grounded, len(findings), 1.0),
        verdict=artifact.verdict, verdict_correct=verdict_correct, clean_control=clean,
        clean_control_pass=(fp == 0 and artifact.verdict == "approve") if clean else None,
        resolved=fp == 0 and fn == 0 and verdict_correct,
        matches=matches,
    )
