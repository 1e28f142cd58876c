"""The tool-cost lane: scenarios whose arms are subjects (command-line tools
such as git and Mercurial) performing a fixed whole-task motion, measured step
by step, with an untimed oracle that checks the work really arrived.

Each driver (:mod:`.git`, :mod:`.hg`) implements the scenarios for one kind of
subject and gives it a clean environment; :func:`run_scenario` runs one under
the machine-wide measurement lock and turns what happened into a result.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_wfbench.lanes import git, hg
from pytest_wfbench.lanes.scenario import Scenario
from pytest_wfbench.lanes.steps import (
    HELPER_TIMEOUT_S,
    SKIPPED_RETURNCODE,
    HelperFailed,
    StepFailed,
    StepRecorder,
)
from pytest_wfbench.tasks import ScenarioSpec, SubjectSpec


@dataclass(frozen=True)
class Driver:
    """How one kind of subject performs the scenarios."""

    scenarios: dict[str, Scenario]
    environment: Callable[[Path], dict[str, str]]
    """The subject's clean environment, given the cell's private HOME."""


DRIVERS: dict[str, Driver] = {
    "git": Driver(git.SCENARIOS, git.environment),
    "hg": Driver(hg.SCENARIOS, hg.environment),
}
MEASUREMENT_LOCK = Path("/tmp/wfbench-measurement.lock")


def unavailable(subject: SubjectSpec, scenario: ScenarioSpec) -> str | None:
    """Why a subject cannot perform a scenario here, or None."""
    if shutil.which(subject.binary) is None:
        return f"subject {subject.name!r}: binary {subject.binary!r} is not installed here"
    driver = DRIVERS.get(subject.driver)
    if driver is None or scenario.kind not in driver.scenarios:
        return (f"subject {subject.name!r}: no {scenario.kind!r} scenario for driver "
                f"{subject.driver!r} (drivers: {', '.join(DRIVERS)})")
    return None


def skipped_step(reason: str, operation: str = "harness.subject_probe") -> dict[str, Any]:
    """A skip keeps the exit code 77 convention in the row's step data."""
    return {"operation": operation, "step_kind": "harness", "measured": False,
            "returncode": SKIPPED_RETURNCODE, "expected": False, "reason": reason}


def subject_version(subject: SubjectSpec) -> str | None:
    try:
        result = subprocess.run(list(subject.version_command), capture_output=True, check=False,
                                timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.decode("utf-8", "replace").strip() or None


@dataclass
class LaneResult:
    transport: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    totals: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    oracle: dict[str, Any] = field(default_factory=dict)
    failure: tuple[str, str] | None = None
    skip_reason: str | None = None
    """A helper command failed or timed out: nothing was measured (a skip row)."""
    lock_wait_ms: float = 0.0


@contextmanager
def measurement_lock(path: Path = MEASUREMENT_LOCK) -> Iterator[float]:
    """Machine-wide: two sweeps never time at once. Yields the wait in ms."""
    started = time.perf_counter()
    with FileLock(str(path)):
        yield round((time.perf_counter() - started) * 1000, 3)


def run_scenario(subject: SubjectSpec, scenario: ScenarioSpec, root: Path, *,
                 admitted_chars: int, lock_path: Path = MEASUREMENT_LOCK,
                 helper_timeout_s: float = HELPER_TIMEOUT_S) -> LaneResult:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    driver = DRIVERS[subject.driver]
    recorder = StepRecorder(admitted_chars=admitted_chars, env=driver.environment(home),
                            timeout_s=scenario.timeout_s, helper_timeout_s=helper_timeout_s)
    result = LaneResult()
    implementation = driver.scenarios[scenario.kind]
    try:
        with measurement_lock(lock_path) as waited:
            result.lock_wait_ms = waited
            oracle = implementation(subject, scenario, recorder, root, result.extras)
        result.oracle = oracle
        if not oracle["passed"]:
            failed = [c["detail"] for c in oracle["checks"] if not c["passed"]]
            result.failure = ("oracle-failed", "; ".join(failed))
    except StepFailed as failed:
        result.failure = ("step-failed", str(failed))
        result.oracle = {"passed": None, "checks": []}
    except HelperFailed as failed:
        result.skip_reason = f"subject {subject.name!r}: {failed}"
        result.oracle = {"passed": None, "checks": []}
    finally:
        result.transport = result.extras.pop("transport", None)
        result.steps = [step.to_json() for step in recorder.steps]
        for step in result.steps:
            if step["step_kind"] != "summary":
                step.pop("value", None)
        result.totals = recorder.totals()
        result.totals["oracle_passed"] = result.oracle.get("passed")
    return result
