"""Running a real sweep as a measured subprocess, and what its out dir says.

Every sweep of the benchmark runs this interpreter's pytest with the plugin,
``-p benchmarks.phases`` (phase times) and without the plugins of the dev
environment that a user of pytest-wfbench does not have (hypothesis's).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.runner import Measured, pytest_argv, run_measured

UNRELATED_PLUGINS = ("hypothesispytest",)
"""pytest plugins of the dev extra, disabled in measured runs (hypothesis's
imports hypothesis at every session's end)."""


class BenchmarkError(Exception):
    """A measured run did not do the work it was measured for."""


def unrelated_plugin_args() -> list[str]:
    args = []
    if importlib.util.find_spec("_hypothesis_pytestplugin") is not None:
        for name in UNRELATED_PLUGINS:
            args += ["-p", f"no:{name}"]
    return args


def read_rows(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def builds_logged(cache_dir: Path) -> int:
    """Template builds recorded in the cache dir's builds.log so far."""
    log = cache_dir / "templates" / "templates" / "builds.log"
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text(encoding="utf-8").splitlines()
               if line.startswith("built "))


@dataclass(frozen=True)
class SweepRun:
    label: str
    measured: Measured
    rows: list[dict[str, Any]]
    builds: int
    """Template builds this sweep logged."""
    workers: int
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def wall_s(self) -> float:
        return self.measured.wall_s

    def ran(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") == "ran"]

    def figures(self) -> dict[str, Any]:
        ran = self.ran()
        durations = [float(r["duration_s"]) for r in ran]
        return {
            "label": self.label, "workers": self.workers, "wall_s": round(self.wall_s, 3),
            "cpu_s": round(self.measured.cpu_user_s + self.measured.cpu_sys_s, 3),
            "max_rss_mib": round(self.measured.max_rss_mib, 1),
            "returncode": self.measured.returncode, "cells": len(ran),
            "template_builds": self.builds,
            "cell_sum_s": round(sum(durations), 3),
            "cell_median_s": round(statistics.median(durations), 3) if durations else None,
            **{k: (round(v, 3) if isinstance(v, float) else v)
               for k, v in self.measured.phases.items()},
            **({"stalled": sorted(self.measured.stalls)} if self.measured.stalls else {}),
            **self.extra,
        }


def run_sweep(task_file: Path, scratch: Path, label: str, *, cache_dir: Path,
              workers: int = 0, args: Sequence[str] = (), expect_cells: int | None = None,
              env: dict[str, str] | None = None) -> SweepRun:
    """One sweep of ``task_file`` into a fresh out dir under ``scratch``."""
    out = scratch / f"out-{label}"
    shutil.rmtree(out, ignore_errors=True)
    # A basetemp of its own: else pytest makes one under /tmp/pytest-of-<user>
    # and, at the session's end, deletes the oldest there, whatever left them (a
    # test suite's tree took 7.6 s to delete: an end of sweep that was not ours).
    (scratch / "basetemp").mkdir(parents=True, exist_ok=True)
    argv = pytest_argv(*unrelated_plugin_args(), "--rootdir", str(task_file.parent),
                       "--basetemp", str(scratch / "basetemp" / label),
                       "--wfbench-tasks", str(task_file), "--wfbench-out", str(out),
                       "--wfbench-cache-dir", str(cache_dir), "-q", *args)
    if workers:
        argv += ["-n", str(workers)]
    before = builds_logged(cache_dir)
    measured = run_measured(argv, cwd=task_file.parent, log=scratch / "logs" / f"{label}.log",
                            env_extra=env)
    run = SweepRun(label, measured, read_rows(out), builds_logged(cache_dir) - before, workers)
    for who, stacks in measured.stalls.items():
        print(f"[bench] sweep {label}: the session end of {who} stalled; its stacks:\n{stacks}",
              file=sys.stderr, flush=True)
    if expect_cells is not None and len(run.ran()) != expect_cells:
        raise BenchmarkError(f"sweep {label}: {len(run.ran())} cells ran, expected "
                             f"{expect_cells} (exit {measured.returncode}); "
                             f"command: {' '.join(argv)}\n--- last lines of {measured.log} "
                             f"---\n{measured.tail()}")
    harness = [r["cell_id"] for r in run.ran() if r.get("error_kind") in (
        "harness-error", "infra-error")]
    if harness:
        raise BenchmarkError(f"sweep {label}: cells ended in a harness or infra error: "
                             f"{harness}; see {measured.log} and {out}")
    return run


def per_cell(runs: Sequence[SweepRun], field_name: str = "duration_s") -> dict[str, float]:
    """The median of a row field per cell over several sweeps."""
    values: dict[str, list[float]] = {}
    for run in runs:
        for row in run.ran():
            if row.get(field_name) is not None:
                values.setdefault(str(row["cell_id"]), []).append(float(row[field_name]))
    return {cell: statistics.median(v) for cell, v in sorted(values.items())}
