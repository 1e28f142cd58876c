"""The review artifact, ``review.json``: parsed strictly, or refused with the reason.

An arm's review is the only thing its cell is scored on, so nothing about it is
guessed: the bytes must be at most 256 KiB of UTF-8, strict JSON (no duplicate
keys, no NaN or Infinity, no lone surrogate escapes) and valid against the shipped
``review.schema.json``, plus the rules JSON Schema cannot state (``end_line >=
line``, ids unique). Reading the file from the arm's folder (no link followed,
bounded) is glue; this module starts from its bytes. It also writes the reviews of
the scripted arms: ``gold`` (the labelled findings) and ``noop`` (an empty review).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

from pytest_wfbench.review.schema import violations
from pytest_wfbench.tasks.model import ReviewLabels

ARTIFACT_NAME = "review.json"
ARTIFACT_SCHEMA_VERSION = 1
MAX_ARTIFACT_BYTES = 256 * 1024
# How many schema violations a reason names (the rest are counted).
MAX_REASONS = 3


class ReviewArtifactError(Exception):
    """The artifact cannot be scored; ``reason`` says why, for the row's error detail."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ReviewFinding:
    """One finding of a review, as its author wrote it."""

    id: str
    severity: str
    path: str
    line: int
    end_line: int
    category: str
    scenario: str
    evidence: str
    recommendation: str
    blocking: bool


@dataclass(frozen=True)
class ReviewArtifact:
    verdict: str
    findings: tuple[ReviewFinding, ...]
    schema_version: int = ARTIFACT_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "verdict": self.verdict,
            "findings": [
                {"id": f.id, "severity": f.severity, "path": f.path, "line": f.line,
                 "end_line": f.end_line, "category": f.category, "scenario": f.scenario,
                 "evidence": f.evidence, "recommendation": f.recommendation,
                 "blocking": f.blocking}
                for f in self.findings
            ],
        }


def _fail(reason: str) -> NoReturn:
    raise ReviewArtifactError(reason)


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            _fail(f"not strict JSON: duplicate key {json.dumps(key, ensure_ascii=False)}")
        result[key] = value
    return result


def _no_constant(name: str) -> NoReturn:
    _fail(f"not strict JSON: {name} is not a JSON value")


def _lone_surrogate(value: Any) -> bool:
    """A ``\\udXXX`` escape without its pair: Python's json takes it, UTF-8 cannot hold it."""
    if isinstance(value, str):
        return any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(key) or _lone_surrogate(item) for key, item in value.items())
    return False


def load_json(data: bytes) -> Any:
    """Strict JSON from bytes, or :class:`ReviewArtifactError` naming what is wrong."""
    if len(data) > MAX_ARTIFACT_BYTES:
        # The glue may read one byte past the limit and no more: "at least".
        _fail(f"oversized: at least {len(data):,} bytes, over the limit of "
              f"{MAX_ARTIFACT_BYTES:,} (256 KiB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        _fail(f"not UTF-8: {error.reason} at byte {error.start}")
    if not text.strip():
        _fail("not JSON: the file is empty")
    try:
        document = json.loads(text, object_pairs_hook=_strict_object,
                              parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        _fail(f"not JSON: {error.msg} at line {error.lineno} column {error.colno}")
    except RecursionError:
        _fail("not JSON this harness reads: nested too deeply")
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        _fail(f"not JSON: {error}")
    if _lone_surrogate(document):
        _fail("not strict JSON: a \\u escape is a lone surrogate (not a character)")
    return document


def parse_review(data: bytes) -> ReviewArtifact:
    """The artifact in ``data``; :class:`ReviewArtifactError` when it cannot be scored."""
    document = load_json(data)
    found = violations(document)
    if found:
        shown = "; ".join(f"{path}: {message}" for path, message in found[:MAX_REASONS])
        more = f" (and {len(found) - MAX_REASONS} more)" if len(found) > MAX_REASONS else ""
        _fail(f"violates the review schema: {shown}{more}")
    findings = tuple(
        ReviewFinding(
            id=item["id"], severity=item["severity"], path=item["path"],
            line=int(item["line"]), end_line=int(item["end_line"]), category=item["category"],
            scenario=item["scenario"], evidence=item["evidence"],
            recommendation=item["recommendation"], blocking=item["blocking"],
        )
        for item in document["findings"]
    )
    seen: dict[str, int] = {}
    for index, finding in enumerate(findings):
        if finding.end_line < finding.line:
            _fail(f"violates the review schema: $.findings[{index}].end_line: "
                  f"{finding.end_line} is before line {finding.line}")
        if finding.id in seen:
            _fail(f"violates the review schema: $.findings[{index}].id: {finding.id!r} is "
                  f"already the id of $.findings[{seen[finding.id]}]")
        seen[finding.id] = index
    return ReviewArtifact(verdict=document["verdict"], findings=findings,
                          schema_version=int(document["schema_version"]))


def render_review(artifact: ReviewArtifact) -> bytes:
    """The artifact as the bytes of a ``review.json`` (sorted keys, UTF-8)."""
    text = json.dumps(artifact.to_json(), indent=2, sort_keys=True, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def gold_review(labels: ReviewLabels) -> ReviewArtifact:
    """What the ``gold`` arm writes: exactly the labelled findings and verdict, so it
    scores as resolved on every sound review task. (Its artifact holds the labels'
    content; no agent ever sees it.)"""
    given = {label.id for label in labels.findings if label.id is not None}
    ids: list[str] = []
    for index, label in enumerate(labels.findings):
        generated = f"L{index + 1}"
        while label.id is None and (generated in given or generated in ids):
            generated += "x"  # a label's own id is taken: unique, in a stable way
        ids.append(label.id if label.id is not None else generated)
    findings = tuple(
        ReviewFinding(
            id=ids[index], severity=label.severity, path=label.path,
            line=label.line, end_line=label.end_line, category=label.category,
            scenario="the labelled finding", evidence="the task's label",
            recommendation="fix what the label names", blocking=label.blocking,
        )
        for index, label in enumerate(labels.findings)
    )
    return ReviewArtifact(verdict=labels.verdict, findings=findings)


def noop_review() -> ReviewArtifact:
    """What the ``noop`` arm writes: approve, no finding (resolves only a clean control)."""
    return ReviewArtifact(verdict="approve", findings=())
