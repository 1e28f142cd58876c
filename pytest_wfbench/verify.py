"""Verify: the task's visible check (SPEC §3, step 6), read-only and offline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.judge.config import JUDGE_ENV
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.tasks import Task


@dataclass(frozen=True)
class VerifyResult:
    passed: bool
    detail: str


def run_verify(task: Task, sandbox: Sandbox, workspace: Path) -> VerifyResult:
    result = sandbox.run(task.verify, workspace=workspace, writable=False, network=False,
                         timeout_s=task.timeout_s, env=JUDGE_ENV)
    if result.timed_out:
        return VerifyResult(False, f"verify timed out after {task.timeout_s:g}s")
    return VerifyResult(result.ok, f"verify exited {result.returncode}: {result.tail()}")
