"""Steps of a tool-cost scenario, each measured as an agent would pay for it:
elapsed time, tool calls, the bytes a command printed, and the tokens of what
an agent would read (command plus admitted output, characters / 4).

The harness's own work (creating and seeding remotes, the oracle's reads,
clean-up) is timed too, as ``harness`` steps with their command count, and kept
out of the agent-facing totals.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_wfbench.session import estimate_tokens

# A step that could not run is recorded with the exit code of a skipped test.
SKIPPED_RETURNCODE = 77
# A step killed at the scenario's timeout, as a shell reports a SIGKILL.
TIMED_OUT_RETURNCODE = 137
# Every untimed helper command (seeding, the oracle's reads) is bounded by this.
HELPER_TIMEOUT_S = 300.0
# How much of a step's stderr its row keeps (the end: where the error is).
STDERR_TAIL_CHARS = 4000
# A publication that must fail may fail with any ordinary error code: not 0, and
# not what a shell reports for a killed process (128 + signal).
FAILURE_CODES = tuple(range(1, 128))
# Step kinds whose figures an agent pays for: the agent-facing totals.
ACTING_KINDS = ("vcs", "terminal", "edit")

T = TypeVar("T")


class StepFailed(Exception):
    """A step's return code was not one of the expected ones: the cell fails."""

    def __init__(self, step: Step) -> None:
        super().__init__(f"{step.operation} exited {step.returncode} (expected "
                         f"{describe_codes(step.expected_returncodes)}): {step.command}")
        self.step = step


class HelperFailed(Exception):
    """An untimed helper command failed or timed out: nothing can be measured,
    and the cell is a skip row with this reason (not an infrastructure error)."""


def describe_codes(codes: Sequence[int]) -> str:
    """``[0]``, ``[0, 1]`` or ``[1-127]``: runs of three or more codes shortened."""
    runs: list[list[int]] = []
    for code in sorted(set(codes)):
        if runs and code == runs[-1][-1] + 1:
            runs[-1].append(code)
        else:
            runs.append([code])
    parts = [f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run))
             for run in runs]
    return f"[{', '.join(parts)}]"


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
    stderr_tail: str = ""
    output_cut: bool = False
    estimated_tokens: int = 0
    harness_command_count: int | None = None
    reason: str | None = None
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["expected_returncodes"] = list(self.expected_returncodes)
        return data


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool


def spawn(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float,
          stdin: bytes | None = None) -> Completed:
    """Run a command in its own process group, so a timeout kills what it
    started too (hooks, helpers)."""
    process = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(stdin, timeout=max(timeout_s, 0.001))
        return Completed(process.returncode, stdout, stderr, False)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return Completed(TIMED_OUT_RETURNCODE, stdout, stderr, True)


class HarnessWork:
    """The commands of one harness step (see :meth:`StepRecorder.harness`):
    untimed for the agent, bounded, and counted."""

    def __init__(self, env: Mapping[str, str], timeout_s: float) -> None:
        self.env = env
        self.timeout_s = timeout_s
        self.commands = 0
        self.last_stderr = ""

    def run(self, argv: Sequence[str], cwd: Path, *, stdin: bytes | None = None,
            check: bool = True) -> Completed:
        """A helper command; its failure (or timeout) makes the cell a skip."""
        self.commands += 1
        command = " ".join(argv)
        try:
            done = spawn(argv, cwd=cwd, env=self.env, timeout_s=self.timeout_s, stdin=stdin)
        except OSError as error:
            raise HelperFailed(f"helper command could not start: {command}: {error}") from error
        self.last_stderr = done.stderr.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:]
        if done.timed_out:
            raise HelperFailed(f"helper command timed out after {self.timeout_s:g}s: {command}")
        if check and done.returncode != 0:
            raise HelperFailed(f"helper command exited {done.returncode}: {command}: "
                               f"{self.last_stderr.strip()[-500:]}")
        return done

    def text(self, argv: Sequence[str], cwd: Path) -> str:
        return self.run(argv, cwd).stdout.decode("utf-8", "replace").strip()

    def do(self, description: str, action: Callable[[], T]) -> T:
        """An in-process file operation (a removal, a config file written),
        counted as one harness command."""
        self.commands += 1
        try:
            return action()
        except OSError as error:
            raise HelperFailed(f"harness could not {description}: {error}") from error


class StepRecorder:
    """Runs and records a scenario's steps, in order."""

    def __init__(self, *, admitted_chars: int, env: Mapping[str, str],
                 timeout_s: float = 1800.0, helper_timeout_s: float = HELPER_TIMEOUT_S) -> None:
        self.admitted_chars = admitted_chars
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.helper_timeout_s = helper_timeout_s
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
        result = spawn(argv, cwd=cwd, env=self.env, timeout_s=self.deadline - time.monotonic())
        elapsed = (time.perf_counter() - started) * 1000
        out = result.stdout.decode("utf-8", "replace")
        err = result.stderr.decode("utf-8", "replace")
        tokens, cut = self._tokens_of(command, out + err)
        step = Step(
            operation=operation, step_kind=kind, phase=self.phase, command=command,
            elapsed_ms=round(elapsed, 3), returncode=result.returncode,
            expected_returncodes=tuple(expected), expected=result.returncode in expected,
            tool_calls={"total": 1, "terminal": 1, "vcs": 1 if kind == "vcs" else 0},
            stdout_bytes=len(result.stdout), stderr_bytes=len(result.stderr),
            stderr_tail=err[-STDERR_TAIL_CHARS:], output_cut=cut,
            estimated_tokens=tokens, value=out,
            reason=f"timed out (scenario timeout {self.timeout_s:g}s)"
            if result.timed_out else None,
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

    @contextmanager
    def harness(self, operation: str) -> Iterator[HarnessWork]:
        """Timed harness work, recorded as one ``harness`` step with its command
        count; a failing helper is recorded, then ends the scenario as a skip."""
        work = HarnessWork(self.env, self.helper_timeout_s)
        started = time.perf_counter()
        step = Step(operation=operation, step_kind="harness", phase=self.phase, command="",
                    returncode=0, expected=True)
        try:
            yield work
        except HelperFailed as failed:
            step.returncode, step.expected, step.reason = SKIPPED_RETURNCODE, False, str(failed)
            raise
        finally:
            step.elapsed_ms = round((time.perf_counter() - started) * 1000, 3)
            step.harness_command_count = work.commands
            step.stderr_tail = work.last_stderr
            self.steps.append(step)

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

    def elapsed_of(self, operation: str) -> float:
        """The time of an operation and of its sub-steps (``task.acquire`` and
        ``task.acquire.update``): one motion may take several calls."""
        return round(sum(s.elapsed_ms or 0.0 for s in self.steps
                         if s.operation == operation or s.operation.startswith(f"{operation}.")),
                     3)

    def totals(self) -> dict[str, Any]:
        """Summed figures of the timed, agent-facing steps; the harness's own
        steps are summed apart, under ``harness``."""
        acting = [s for s in self.steps if s.step_kind in ACTING_KINDS and s.measured]
        harness = [s for s in self.steps if s.step_kind == "harness"]
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
            "harness": {
                "elapsed_ms": round(sum(s.elapsed_ms or 0.0 for s in harness), 3),
                "harness_command_count": sum(s.harness_command_count or 0 for s in harness),
            },
        }
