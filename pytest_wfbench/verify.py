"""Verify: the task's visible check (SPEC §3, step 6), read-only and offline,
with the judges' environment (:mod:`judge.environment`). A signal of its own,
never enough to resolve a task: it runs on the workspace as the arm left it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_wfbench.judge.environment import bytecode_mount, judge_env
from pytest_wfbench.sandbox import Sandbox, WorkspaceMount
from pytest_wfbench.tasks import Task


@dataclass(frozen=True)
class VerifyResult:
    passed: bool
    detail: str


def run_verify(task: Task, sandbox: Sandbox, workspace: WorkspaceMount,
               bytecode: Path | None = None) -> VerifyResult:
    mounts = bytecode_mount(bytecode)
    env = judge_env(sandbox.workspace_path(workspace), task.oracle.plugins,
                    bytecode=sandbox.mount_path(mounts[0]) if mounts else None)
    result = sandbox.run(task.verify, workspace=workspace, writable=False, network=False,
                         timeout_s=task.timeout_s, env=env, mounts=mounts)
    if result.timed_out:
        return VerifyResult(False, f"verify timed out after {task.timeout_s:g}s")
    return VerifyResult(result.ok, f"verify exited {result.returncode}: {result.tail()}")
