"""The report's "Review quality" section, from rows. Pure.

A review task's row carries ``review_scored`` (whether its artifact was valid and
scored; null in other rows) and, when scored, ``review``: the :meth:`ReviewScore.to_json` of its
score. Per (task, arm), the section gives medians over scored rows only, the
worst run's blocker recall, and verdict and clean-control results that hold only
if they hold in every scored run; it shows how many rows were scored, so runs
that could not be scored never quietly improve an arm's figures. Rows without
``review_scored`` (or with it null) are not review rows and are ignored.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_wfbench.review.score import SEVERITY_WEIGHTS, TOLERANCE_LINES

Row = Mapping[str, Any]
MEDIANS = ("tp", "fp", "fn", "precision", "recall", "weighted_f1", "grounding")


@dataclass(frozen=True)
class ReviewQuality:
    """The review figures of one (task, arm)."""

    task: str
    arm: str
    runs: int
    """Review rows of the (task, arm), scored or not."""
    scored: int
    medians: dict[str, float | None]
    """Median of each of :data:`MEDIANS` over scored rows; None without any."""
    blocker_recall: float | None
    """The worst scored run's; None without scored runs or blocking labels."""
    verdict_correct: bool | None
    """True only if every scored run's verdict was right; None without scored runs."""
    clean_control_pass: bool | None
    """For a clean control: True only if every scored run passed; else None."""


def is_review_row(row: Row) -> bool:
    return row.get("review_scored") is not None


def _score(row: Row) -> Mapping[str, Any] | None:
    score = row.get("review")
    return score if row.get("review_scored") is True and isinstance(score, Mapping) else None


def _all(values: Sequence[Any]) -> bool | None:
    return all(value is True for value in values) if values else None


def review_quality(rows: Sequence[Row]) -> list[ReviewQuality]:
    """One :class:`ReviewQuality` per (task, arm) of the review rows, sorted."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if is_review_row(row):
            groups.setdefault((str(row.get("task")), str(row.get("arm"))), []).append(row)
    qualities = []
    for (task, arm), members in sorted(groups.items()):
        scores = [score for score in map(_score, members) if score is not None]
        medians: dict[str, float | None] = {}
        for name in MEDIANS:
            values = [float(score[name]) for score in scores if score.get(name) is not None]
            medians[name] = statistics.median(values) if values else None
        blocker = [float(s["blocker_recall"]) for s in scores
                   if s.get("blocker_recall") is not None]
        clean = [s.get("clean_control_pass") for s in scores if s.get("clean_control")]
        qualities.append(ReviewQuality(
            task=task, arm=arm, runs=len(members), scored=len(scores), medians=medians,
            blocker_recall=min(blocker) if blocker else None,
            verdict_correct=_all([s.get("verdict_correct") for s in scores]),
            clean_control_pass=_all(clean),
        ))
    return qualities


def _number(value: float | None, *, share: bool) -> str:
    if value is None:
        return "n/a"
    if share:
        return f"{value:.2f}"
    return f"{value:g}"


def _yes_no(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "NO")


HEADERS = ("task", "arm", "scored", "TP", "FP", "FN", "precision", "recall", "weighted F1",
           "grounding", "blocker recall (worst)", "verdict (every run)",
           "clean control (every run)")


def render_review_quality(qualities: Sequence[ReviewQuality]) -> list[str]:
    """The section's Markdown lines; none when there is no review row."""
    if not qualities:
        return []
    weights = ", ".join(f"{name} {weight}" for name, weight in SEVERITY_WEIGHTS.items())
    lines = [
        "## Review quality", "",
        "Medians over scored runs only (a valid review artifact, scored against the "
        "task's hidden labels); 'scored' shows how many of the (task, arm)'s runs that is. "
        "A finding matches a label on the same path when their lines overlap within "
        f"{TOLERANCE_LINES} lines; weighted F1 weighs severities {weights}; grounding is "
        "the share of findings on the change's lines. Blocker recall is the worst run's; "
        "verdict and clean control hold only if they hold in every scored run.", "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
    ]
    for quality in qualities:
        m = quality.medians
        cells = [
            quality.task, quality.arm, f"{quality.scored}/{quality.runs}",
            *(_number(m[name], share=False) for name in ("tp", "fp", "fn")),
            *(_number(m[name], share=True)
              for name in ("precision", "recall", "weighted_f1", "grounding")),
            _number(quality.blocker_recall, share=True),
            _yes_no(quality.verdict_correct), _yes_no(quality.clean_control_pass),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    per_arm: dict[str, list[int]] = {}
    for quality in qualities:
        counts = per_arm.setdefault(quality.arm, [0, 0])
        counts[0] += quality.scored
        counts[1] += quality.runs
    lines += ["", "Scored review runs per arm: " + ", ".join(
        f"{arm} {scored}/{runs}" for arm, (scored, runs) in sorted(per_arm.items())) + "."]
    return lines


def review_quality_section(rows: Sequence[Row]) -> list[str]:
    """:func:`render_review_quality` of :func:`review_quality` of ``rows``."""
    return render_review_quality(review_quality(rows))
