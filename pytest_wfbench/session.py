"""The arm's session(s) (SPEC §3 step 5, §4): scripted arms.

Scripted arms spend no model tokens: their rows report zero model tokens and
``cost_usd`` null, and for ``script`` steps an estimate of the tokens an agent
would have read (command plus admitted output, characters / 4).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_wfbench.cells import Cell
from pytest_wfbench.outcomes import CellFailure, CellVerdict
from pytest_wfbench.sandbox import Mount, Sandbox
from pytest_wfbench.skills import fingerprint, read_only_mount
from pytest_wfbench.tasks import Limits
from pytest_wfbench.workspace.clone import Workspace

CHARS_PER_TOKEN = 4
DEFAULT_ADMITTED_OUTPUT_CHARS = 20_000


@dataclass
class SessionResult:
    """What the arm did, as the row reports it. Filled as the arm runs, so a
    session that fails half-way still reports what it spent."""

    duration_s: float = 0.0
    tool_calls: int | None = None
    estimated_tokens: int | None = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    num_turns: int | None = None
    session_ids: list[str] = field(default_factory=list)
    phases: list[dict[str, Any]] = field(default_factory=list)
    main_usage: dict[str, int] = field(default_factory=dict)
    model_usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    cost_usd: float | None = None
    artifacts: list[str] = field(default_factory=list)
    evidence_failure: tuple[str, str] | None = None
    """An evidence failure of the arm's own checks (SPEC §4), raised by the
    evidence stage after verify and the oracle have run."""
    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    """Agent arms: every tool call the model made (``name``, ``input``), as read
    from the harness's API proxy. Kept out of the row (inputs can be large)."""


@dataclass(frozen=True)
class StepAccess:
    """What a scripted arm's steps may reach besides the defaults (a writable
    workspace and nothing else): a review task's steps get a read-only workspace
    and the writable folder of their review artifact."""

    workspace_writable: bool = True
    mounts: tuple[Mount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    watch: tuple[Path, ...] = ()
    """More writable host folders whose disk use and files are watched."""


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def run_script_step(
    sandbox: Sandbox, command: str, *, index: int, workspace: Workspace, home: Path,
    timeout_s: float, admitted_chars: int, network: bool, limits: Limits,
    access: StepAccess | None = None,
) -> dict[str, Any]:
    """Run one step as one tool call and measure what an agent would read of it."""
    access = access or StepAccess()
    result = sandbox.run(command, workspace=workspace.mount(), home=home,
                         writable=access.workspace_writable, network=network,
                         timeout_s=timeout_s, limits=limits, mounts=access.mounts,
                         env=access.env, watch=(workspace.files, home, *access.watch))
    output = result.stdout + result.stderr
    admitted = output[:admitted_chars]
    return {
        "operation": "script.step",
        "index": index,
        "command": command,
        "returncode": result.returncode,
        "timed_out": result.timed_out,
        "elapsed_ms": round(result.elapsed_s * 1000, 1),
        "stdout_bytes": result.stdout_bytes,
        "stderr_bytes": result.stderr_bytes,
        "output_cut": len(output) > admitted_chars or result.stdout_bytes
        + result.stderr_bytes > len(output.encode()),
        "limit_exceeded": result.limit_hit.to_json() if result.limit_hit else None,
        "estimated_tokens": estimate_tokens(command) + estimate_tokens(admitted),
    }


def run_session(
    cell: Cell, sandbox: Sandbox, workspace: Workspace, home: Path, result: SessionResult, *,
    admitted_chars: int, access: StepAccess | None = None,
) -> None:
    """Run a scripted arm to completion into ``result``; raise CellVerdict when it
    times out or goes over a limit (its failure), CellFailure when it cannot
    complete for another reason."""
    limits = cell.task.sandbox.resolved_limits()
    kind = cell.arm.kind
    started = time.monotonic()
    if kind == "script":
        result.tool_calls = 0
    if kind == "noop":
        pass
    elif kind == "gold":
        assert cell.task.gold is not None, "collection skips gold cells without a patch"
        applied = sandbox.run("git apply --whitespace=nowarn -", workspace=workspace.mount(),
                              home=home, writable=True, timeout_s=cell.task.timeout_s,
                              stdin=cell.task.gold.read_bytes(), limits=limits)
        if not applied.ok:
            raise CellFailure("session-error", f"the gold patch does not apply: {applied.tail()}")
    elif kind == "script":
        deadline = started + cell.task.timeout_s
        # Skills under test, as for agent arms: read-only during the steps.
        skills = (fingerprint(workspace.files) if cell.arm.skills is not None else None)
        access = access or StepAccess()
        if skills is not None:
            skills_mount = read_only_mount(workspace.files,
                                           sandbox.workspace_path(workspace.mount()))
            access = dataclasses.replace(access, mounts=(*access.mounts, skills_mount))
        for index, command in enumerate(cell.arm.steps):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CellVerdict("session-timeout",
                                  f"timed out after {cell.task.timeout_s:g}s before step {index}")
            step = run_script_step(sandbox, command, index=index, workspace=workspace,
                                   home=home, timeout_s=remaining, admitted_chars=admitted_chars,
                                   network=cell.arm.network, limits=limits, access=access)
            result.steps.append(step)
            result.tool_calls = (result.tool_calls or 0) + 1
            result.estimated_tokens = (result.estimated_tokens or 0) + step["estimated_tokens"]
            result.duration_s = time.monotonic() - started
            if step["limit_exceeded"] is not None:
                hit = step["limit_exceeded"]
                raise CellVerdict("limit-exceeded",
                                  f"step {index} went over its {hit['limit']} limit "
                                  f"({hit['value']:,}); its process tree was killed", hit)
            if step["timed_out"]:
                raise CellVerdict("session-timeout",
                                  f"timed out after {cell.task.timeout_s:g}s in step {index}: "
                                  "its process tree was killed")
        if skills is not None and fingerprint(workspace.files) != skills:
            result.evidence_failure = ("evidence-tampered",
                                       "the skills under test changed during the steps")
    else:
        raise CellFailure("infra-error", f"arm kind {kind!r} cannot run in this harness")
    result.duration_s = time.monotonic() - started
