"""Running a command as a measured subprocess: wall time, CPU time and peak RSS.

The resource usage comes from ``os.wait4`` on that one child, so it covers the
child and every descendant it waited for (for a sweep: the pytest process,
its xdist workers, git, cp, bwrap) and nothing the benchmark ran before.
``ru_maxrss`` is the largest single process of that tree, not a sum.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import phases as phases_plugin

REPO_ROOT = Path(__file__).resolve().parent.parent
# Variables that would change what pytest runs; the benchmark's runs are
# reproducible only without them. PYTHONDONTWRITEBYTECODE too: a user's
# interpreter keeps the bytecode of pytest and of the plugin, and a run without
# it compiles them at every start.
SCRUBBED_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_AUTO_NUM_WORKERS",
                "PYTHONDONTWRITEBYTECODE", "WFBENCH_CACHE_DIR")


@dataclass(frozen=True)
class Measured:
    argv: tuple[str, ...]
    returncode: int
    wall_s: float
    cpu_user_s: float
    cpu_sys_s: float
    max_rss_mib: float
    log: Path
    phases: dict[str, float | None]
    """Phase lengths from :mod:`benchmarks.phases` (empty if it did not report)."""
    stalls: dict[str, str] = field(default_factory=dict)
    """Processes whose session end stalled: who -> stacks (:func:`phases.stalls`)."""

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.output().splitlines()[-lines:])


def pytest_argv(*args: str) -> list[str]:
    """This interpreter's pytest (the one with pytest-wfbench installed), with
    the phase-timing plugin."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            "-p", "benchmarks.phases", *args]


def run_measured(
    argv: Sequence[str], *, cwd: Path, log: Path, env_extra: Mapping[str, str] | None = None
) -> Measured:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV}
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    marks_file = log.with_suffix(".phases.json")
    marks_file.unlink(missing_ok=True)
    for old in marks_file.parent.glob(f"{marks_file.name}.stall-*.txt"):
        old.unlink()
    env[phases_plugin.ENV_OUT] = str(marks_file)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        env[phases_plugin.ENV_T0] = repr(time.time())
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        wall = time.perf_counter() - start
        end = time.time()
    marks: dict[str, float] = {}
    if marks_file.exists():
        marks = json.loads(marks_file.read_text(encoding="utf-8"))
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Measured(
        argv=tuple(argv),
        returncode=proc.returncode,
        wall_s=wall,
        cpu_user_s=usage.ru_utime,
        cpu_sys_s=usage.ru_stime,
        max_rss_mib=usage.ru_maxrss / 1024,  # KiB on Linux
        log=log,
        phases=phases_plugin.durations(marks, end) if marks else {},
        stalls=phases_plugin.stalls(marks_file),
    )
