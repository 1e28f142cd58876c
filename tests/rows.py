"""Hand-built rows for the pure tests of aggregation, rendering and the gate."""

from __future__ import annotations

from typing import Any

from pytest_wfbench.outcomes import ERROR_KINDS, counted


def row(task: str, arm: str, run: int = 1, *, kind: str | None = None, resolved: bool = False,
        status: str = "ran", **figures: Any) -> dict[str, Any]:
    """A row as the store holds it; ``figures`` override any field."""
    base: dict[str, Any] = {
        "cell_id": f"{task}-{arm}-r{run}", "task": task, "class": "bug", "arm": arm,
        "run": run, "status": status, "resolved": resolved, "error_kind": kind,
        "error_class": None if kind is None else ERROR_KINDS[kind].error_class.value,
        "error_detail": f"{kind} detail" if kind else None,
        "counted": status == "ran" and counted(kind), "reused": False, "lane": "agent",
        "input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "output_tokens": 0, "estimated_tokens": None, "cost_usd": None, "duration_s": 1.0,
        "session_duration_s": 0.5, "harness_overhead_s": 0.5,
        "num_turns": None, "diff_files": 1, "diff_insertions": 2, "diff_deletions": 0,
        "skip_reason": "expensive" if status == "skipped" else None,
    }
    base.update(figures)
    return base


def runs(task: str, arm: str, outcomes: str, **figures: Any) -> list[dict[str, Any]]:
    """One row per character of ``outcomes``, runs numbered from 1: ``R`` resolved,
    ``F`` oracle-failed, ``T`` session-timeout, ``S`` skill-not-invoked, ``X``
    session-error (excluded), ``-`` skipped."""
    kinds = {"R": None, "F": "oracle-failed", "T": "session-timeout", "S": "skill-not-invoked",
             "X": "session-error", "-": None}
    return [row(task, arm, i, kind=kinds[c], resolved=c == "R",
                status="skipped" if c == "-" else "ran", **figures)
            for i, c in enumerate(outcomes, start=1)]
