"""Steps of a tool-cost scenario, each measured as an agent would pay for it:
elapsed time, tool calls, the bytes a command printed, and the tokens of what
an agent would read (command plus admitted output, characters / 4)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_wfbench.session import estimate_tokens

# A step that could not run is recorded with the exit code of a skipped test.
SKIPPED_RETURNCODE = 77
# A step killed at the scenario's timeout, as a shell reports a SIGKILL.
TIMED_OUT_RETURNCODE = 137


class StepFailed(Exception):
    """A step's return code was not one of the expected ones: the cell fails."""

    def __init__(self, step: Step) -> None:
        super().__init__(f"{step.operation} exited {step.returncode} (expected "
                         f"{list(step.expected_returncodes)}): {step.command}")
        self.step = step


@dataclass
class Step:
    operation: str
    step_kind: str
    phase: str
    command: str
    measured: bool = True
    elapsed_ms: float | None = None
    returncode: int | None = None
    expected_returncodes: tuple[int, ...] = (0,)
    expected: bool | None = None
    tool_calls: dict[str, int] = field(default_factory=lambda: {"total": 0, "terminal": 0,
                                                                 "vcs": 0})
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    output_cut: bool = False
    estimated_tokens: int = 0
    reason: str | None = None
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["expected_returncodes"] = list(self.expected_returncodes)
        return data


class StepRecorder:
    """Runs and records a scenario's steps, in order."""

    def __init__(self, *, admitted_chars: int, env: Mapping[str, str],
                 timeout_s: float = 1800.0) -> None:
        self.admitted_chars = admitted_chars
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.env = dict(env)
        self.steps: list[Step] = []
        self.phase = "setup"

    def _tokens_of(self, command: str, output: str) -> tuple[int, bool]:
        cut = len(output) > self.admitted_chars
        return estimate_tokens(command) + estimate_tokens(output[: self.admitted_chars]), cut

    def run(self, operation: str, argv: Sequence[str], *, cwd: Path, kind: str = "vcs",
            expected: Sequence[int] = (0,), check: bool = True) -> Step:
        """Run one command as one tool call of an agent's terminal."""
        command = " ".join(argv)
        started = time.perf_counter()
        # Its own process group, so a timeout kills what it started too (hooks).
        process = subprocess.Popen(list(argv), cwd=cwd, env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
        try:
            stdout, stderr = process.communicate(
                timeout=max(self.deadline - time.monotonic(), 0.001))
            returncode = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            returncode = TIMED_OUT_RETURNCODE
        result = subprocess.CompletedProcess(list(argv), returncode, stdout, stderr)
        elapsed = (time.perf_counter() - started) * 1000
        out = result.stdout.decode("utf-8", "replace")
        err = result.stderr.decode("utf-8", "replace")
        tokens, cut = self._tokens_of(command, out + err)
        step = Step(
            operation=operation, step_kind=kind, phase=self.phase, command=command,
            elapsed_ms=round(elapsed, 3), returncode=result.returncode,
            expected_returncodes=tuple(expected), expected=result.returncode in expected,
            tool_calls={"total": 1, "terminal": 1, "vcs": 1 if kind == "vcs" else 0},
            stdout_bytes=len(result.stdout), stderr_bytes=len(result.stderr), output_cut=cut,
            estimated_tokens=tokens, value=out,
            reason=f"timed out (scenario timeout {self.timeout_s:g}s)"
            if result.returncode == TIMED_OUT_RETURNCODE else None,
        )
        self.steps.append(step)
        if check and not step.expected:
            raise StepFailed(step)
        return step

    def edit(self, operation: str, path: Path, content: str) -> Step:
        """Write a file as an agent's edit tool would: one tool call, no terminal."""
        started = time.perf_counter()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        elapsed = (time.perf_counter() - started) * 1000
        command = f"write {path.name}"
        step = Step(operation=operation, step_kind="edit", phase=self.phase, command=command,
                    elapsed_ms=round(elapsed, 3), returncode=0, expected=True,
                    tool_calls={"total": 1, "terminal": 0, "vcs": 0},
                    estimated_tokens=estimate_tokens(command) + estimate_tokens(content))
        self.steps.append(step)
        return step

    def unmeasured(self, operation: str, reason: str) -> Step:
        step = Step(operation=operation, step_kind="vcs", phase=self.phase, command="",
                    measured=False, reason=reason)
        self.steps.append(step)
        return step

    def summary(self, operation: str, value: Any) -> Step:
        step = Step(operation=operation, step_kind="summary", phase=self.phase, command="",
                    measured=False, reason="a figure, not an action", value=value)
        self.steps.append(step)
        return step

    def find(self, operation: str) -> Step:
        return next(step for step in self.steps if step.operation == operation)

    def totals(self) -> dict[str, Any]:
        """Summed figures of the timed, agent-facing steps (harness steps are setup)."""
        acting = [s for s in self.steps if s.step_kind in ("vcs", "edit") and s.measured]
        per_phase: dict[str, float] = {}
        for step in acting:
            per_phase[step.phase] = round(per_phase.get(step.phase, 0.0)
                                          + (step.elapsed_ms or 0.0), 3)
        unmeasured = [s.operation for s in self.steps if s.step_kind == "vcs" and not s.measured]
        return {
            "elapsed_ms": round(sum(s.elapsed_ms or 0.0 for s in acting), 3),
            "phase_elapsed_ms": per_phase,
            "tool_calls": {key: sum(s.tool_calls[key] for s in acting)
                           for key in ("total", "terminal", "vcs")},
            "estimated_tokens": sum(s.estimated_tokens for s in acting),
            "stdout_bytes": sum(s.stdout_bytes for s in acting),
            "stderr_bytes": sum(s.stderr_bytes for s in acting),
            "coverage_complete": not unmeasured,
            "unmeasured_operations": unmeasured,
        }


def subject_env(home: Path) -> dict[str, str]:
    """A clean environment for a subject: no user config, a fixed identity."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "wfbench",
        "GIT_AUTHOR_EMAIL": "wfbench@localhost",
        "GIT_COMMITTER_NAME": "wfbench",
        "GIT_COMMITTER_EMAIL": "wfbench@localhost",
    }
