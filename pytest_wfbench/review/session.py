"""A review cell's session: the arm reviews the change with the workspace
read-only, and writes ``review.json`` into its folder outside the workspace.

- ``gold`` and ``noop``: the harness writes their reviews (the labelled findings,
  an empty approval) into the folder; nothing runs.
- ``script``: the steps run with a read-only workspace and the folder bound
  writable, its path in ``WFBENCH_REVIEW_DIR``.
- Agent arms: every phase runs with a read-only workspace and the folder bound
  writable; ``{task}`` in their prompts is :func:`review_task_text` (what the change
  is for, and the artifact contract of :mod:`.prompt`).

Also here: the change applied to the clone after setup, and the tool calls of a
session that aimed at the workspace (:func:`workspace_write_attempts`, pure).
"""

from __future__ import annotations

import posixpath
import shlex
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_wfbench.agents.phases import AgentCell, run_agent_arm
from pytest_wfbench.cells import Cell
from pytest_wfbench.outcomes import CellFailure
from pytest_wfbench.review.artifact import gold_review, noop_review
from pytest_wfbench.review.change import APPLY_ARGS
from pytest_wfbench.review.folder import REVIEW_DIR_ENV, ReviewFolder
from pytest_wfbench.review.prompt import review_contract
from pytest_wfbench.sandbox import Sandbox
from pytest_wfbench.session import SessionResult, StepAccess, run_session
from pytest_wfbench.tasks import Task
from pytest_wfbench.workspace.clone import Workspace

REVIEW_TASK = """\
Review the change in the repository at {workspace}. It is not committed: `git diff`
shows it, and `git diff --stat` lists the files it touches. Read whatever you need,
run what helps you judge it, but do not change any file of the repository.

What the change is for, as its author says it:

{prompt}

{contract}"""
# The file-writing tools of the Claude Code CLI, and the input naming their target.
WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
               "NotebookEdit": "notebook_path"}


def review_task_text(prompt: str, workspace: str, folder: str) -> str:
    """What a review arm is asked: review the change at ``workspace``, whose author
    says ``prompt``, and write the artifact into ``folder`` (sandbox paths)."""
    return REVIEW_TASK.format(workspace=workspace, prompt=prompt.strip(),
                              contract=review_contract(folder))


def workspace_write_attempts(tool_uses: Iterable[Mapping[str, Any]], workspace: str) -> list[str]:
    """The calls of file-writing tools whose target is in ``workspace`` (relative
    targets are relative to it, the session's working directory): a review that
    tries to edit the code it reviews, whether or not the read-only workspace let it."""
    attempts = []
    for use in tool_uses:
        name = use.get("name")
        key = WRITE_TOOLS.get(name) if isinstance(name, str) else None
        arguments = use.get("input")
        target = arguments.get(key) if key is not None and isinstance(arguments, dict) else None
        if not isinstance(target, str):
            continue
        path = posixpath.normpath(posixpath.join(workspace, target))
        if path == workspace or path.startswith(workspace.rstrip("/") + "/"):
            attempts.append(f"{name} {path}")
    return attempts


def apply_change(task: Task, sandbox: Sandbox, workspace: Workspace, home: Path) -> None:
    """Apply the task's change to the clone, in the sandbox, as the harness applies
    every patch; the sweep checked at its start that it applies to the template."""
    assert task.change is not None, "a review task has a change"
    applied = sandbox.run(shlex.join(["git", *APPLY_ARGS, "-"]), workspace=workspace.mount(),
                          home=home, writable=True, timeout_s=task.timeout_s,
                          stdin=task.change.read_bytes(), limits=task.sandbox.resolved_limits())
    if not applied.ok:
        raise CellFailure("infra-error", f"the change does not apply after setup: "
                          f"{applied.tail()}")


def run_review_session(cell: Cell, sandbox: Sandbox, workspace: Workspace, home: Path,
                       result: SessionResult, folder: ReviewFolder, *, admitted_chars: int,
                       agent: AgentCell | None = None) -> None:
    """Run the arm's review into ``result``; it ends with every process of the arm
    gone. ``agent`` is the agent arm's settings, without the review's own (added here)."""
    labels = cell.task.oracle.review
    assert labels is not None, "a review task has labels"
    kind = cell.arm.kind
    if kind in ("gold", "noop"):
        started = time.monotonic()
        folder.write(gold_review(labels) if kind == "gold" else noop_review())
        result.duration_s = time.monotonic() - started
        return
    target = sandbox.mount_path(folder.mount)
    if cell.arm.is_agent:
        assert agent is not None, "agent arms come with their settings"
        workspace_path = sandbox.workspace_path(workspace.mount())
        reviewing = replace(
            agent, task_prompt=review_task_text(cell.task.prompt, workspace_path, target),
            workspace_writable=False, mounts=(*agent.mounts, folder.mount),
            env=(*agent.env, (REVIEW_DIR_ENV, target)), add_dirs=(*agent.add_dirs, target))
        run_agent_arm(cell, sandbox, workspace, home, result, reviewing)
        return
    access = StepAccess(workspace_writable=False, mounts=(folder.mount,),
                        env={REVIEW_DIR_ENV: target}, watch=(folder.host,))
    run_session(cell, sandbox, workspace, home, result, admitted_chars=admitted_chars,
                access=access)
