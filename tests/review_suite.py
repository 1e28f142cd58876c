"""Review tasks on the tests' tiny calc project (tests/conftest.py): a change that
adds ``clamp()`` with a planted bug, its labels, and reviews as scripted arms
write them."""

from __future__ import annotations

import difflib
import json
import shlex
from pathlib import Path
from typing import Any

from tests.conftest import CALC, Suite, write_suite

CLAMP = CALC + '''

def clamp(x, low, high):
    """x, limited to the range from low to high."""
    if x < low:
        return low
    if x > high:
        return low
    return x
'''
TIDY = CALC.replace("def double(x):\n", 'def double(x):\n    """Twice x."""\n')
# The planted bug: clamp() returns `low` for an x above `high` (lines 13-14 of
# calc.py as changed).
BUG_LINES = (13, 14)
BUG_LABEL = {"id": "clamp-high", "path": "calc.py", "line": 13, "end_line": 14,
             "severity": "high", "category": "correctness", "blocking": True}


def unified_diff(path: str, old: str, new: str) -> str:
    """A patch ``git apply -p1`` takes (a/ and b/ prefixes)."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True),
                                        new.splitlines(keepends=True), f"a/{path}",
                                        f"b/{path}"))


CLAMP_PATCH = unified_diff("calc.py", CALC, CLAMP)
TIDY_PATCH = unified_diff("calc.py", CALC, TIDY)


def review_task(task_id: str = "review-clamp", *, change: str = "clamp.patch",
                findings: list[dict[str, Any]] | None = None, verdict: str = "request_changes",
                **fields: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "id": task_id, "kind": "review", "class": "review-bug",
        "prompt": "Add clamp(x, low, high) to calc.py: x limited to [low, high].",
        "change": change,
        "oracle": {"findings": [BUG_LABEL] if findings is None else findings,
                   "verdict": verdict},
        "timeout": 60,
    }
    task.update(fields)
    return task


def clean_control(task_id: str = "review-tidy") -> dict[str, Any]:
    return review_task(task_id, change="tidy.patch", findings=[], verdict="approve",
                       prompt="Document double() in calc.py.", **{"class": "review-clean"})


def review_suite(base: Path, *, tasks: list[dict[str, Any]] | None = None,
                 arms: list[str] | None = None, **kwargs: Any) -> Suite:
    suite = write_suite(base, tasks=tasks or [review_task()], arms=arms, **kwargs)
    (base / "clamp.patch").write_text(CLAMP_PATCH)
    (base / "tidy.patch").write_text(TIDY_PATCH)
    return suite


def finding(finding_id: str = "F1", *, path: str = "calc.py", line: int = BUG_LINES[0],
            end_line: int = BUG_LINES[1], severity: str = "high",
            category: str = "correctness", blocking: bool = True,
            evidence: str = "`return low` where x is above high.") -> dict[str, Any]:
    return {"id": finding_id, "severity": severity, "path": path, "line": line,
            "end_line": end_line, "category": category,
            "scenario": "clamp(5, 0, 3) returns 0, not 3.", "evidence": evidence,
            "recommendation": "Return high there, and test a value above the range.",
            "blocking": blocking}


def review_json(*findings: dict[str, Any], verdict: str = "request_changes") -> str:
    return json.dumps({"schema_version": 1, "verdict": verdict, "findings": list(findings)},
                      indent=2)


def write_review_step(text: str, target: str = '"$WFBENCH_REVIEW_DIR/review.json"') -> str:
    """A script step writing ``text`` (quoted for the shell) to ``target``."""
    return f"printf '%s' {shlex.quote(text)} > {target}"
