"""The measurements: a real noop sweep, the collection of many cells, loading a
task file in-process, and (optionally) where the time goes under cProfile.

Exit codes of the measured pytest runs are recorded, never judged: noop cells
are expected XFAILs. What is checked is that the runs did their work (every
cell has a row; every cell was collected), else the figures would be
meaningless and :class:`BenchmarkError` says why.
"""

from __future__ import annotations

import json
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.runner import Measured, pytest_argv, run_measured
from benchmarks.workload import CollectWorkload, SweepWorkload

COLLECTED_RE = re.compile(r"(\d+) tests? collected in ([0-9.]+)s")
CELL_LINE = "::test_cell["


class BenchmarkError(Exception):
    """A measured run did not do the work it was measured for."""


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def read_results(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / "results.jsonl"
    if not path.exists():
        return []
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def _failed(what: str, measured: Measured, detail: str) -> BenchmarkError:
    return BenchmarkError(f"{what}: {detail} (exit {measured.returncode}); command: "
                          f"{' '.join(measured.argv)}\n--- last lines of {measured.log} ---\n"
                          f"{measured.tail()}")


# --------------------------------------------------------------------------- sweep


def sweep_argv(workload: SweepWorkload, out: Path, workers: int, *extra: str) -> list[str]:
    argv = pytest_argv("--rootdir", str(workload.root), "--wfbench-tasks",
                       str(workload.task_file), "--wfbench-arms", "noop",
                       "--wfbench-out", str(out), "-q", *extra)
    if workers:
        argv += ["-n", str(workers)]
    return argv


def sweep_once(
    workload: SweepWorkload, scratch: Path, label: str, workers: int, tmpdir: str | None = None
) -> dict[str, Any]:
    """One real sweep of the workload's noop cells; figures from its rows.
    ``tmpdir`` moves the harness's work dir (templates, clones, staged oracles),
    which lives under ``$TMPDIR``."""
    out = scratch / f"out-{label}"
    shutil.rmtree(out, ignore_errors=True)
    measured = run_measured(sweep_argv(workload, out, workers), cwd=workload.root,
                            log=scratch / "logs" / f"{label}.log",
                            env_extra={"TMPDIR": tmpdir} if tmpdir else None)
    rows = [r for r in read_results(out) if r.get("status") == "ran"]
    if len(rows) != workload.tasks:
        raise _failed(f"sweep {label}", measured,
                      f"{len(rows)} cells ran, expected {workload.tasks}")
    unexpected = sorted({str(r.get("error_kind")) for r in rows} - {"oracle-failed"})
    if unexpected:
        raise _failed(f"sweep {label}", measured,
                      f"cells ended with {unexpected}, expected oracle-failed (a noop XFAIL)")
    durations = [float(r["duration_s"]) for r in rows]
    sessions = [float(r["session_duration_s"]) for r in rows
                if r.get("session_duration_s") is not None]
    result: dict[str, Any] = {
        "wall_s": measured.wall_s,
        "cpu_s": measured.cpu_user_s + measured.cpu_sys_s,
        "max_rss_mib": measured.max_rss_mib,
        "returncode": measured.returncode,
        "cells": len(rows),
        "cell_median_s": _median(durations),
        "cell_min_s": min(durations),
        "cell_max_s": max(durations),
        "cell_sum_s": sum(durations),
        "session_median_s": _median(sessions),
        **measured.phases,
    }
    if not workers:
        # Serial: rows are appended in the order the cells ran, and only the
        # first cell builds the repo's snapshot and template.
        result["first_cell_s"] = durations[0]
        rest = _median(durations[1:])
        result["template_build_estimate_s"] = durations[0] - rest if rest is not None else None
        result["outside_cells_s"] = measured.wall_s - sum(durations)
    return result


def _copy_time(repo: Path, into: Path) -> float | None:
    """Median time of three ``cp -a`` of the repo into the folder ``into``."""
    copies = []
    targets = [into / f"wfbench-reference-copy-{i}" for i in range(3)]
    try:
        for target in targets:
            start = time.perf_counter()
            copied = subprocess.run(["cp", "-a", "--reflink=auto", str(repo), str(target)],
                                    capture_output=True, check=False)
            if copied.returncode != 0:
                break
            copies.append(time.perf_counter() - start)
    finally:
        for target in targets:
            shutil.rmtree(target, ignore_errors=True)
    return _median(copies)


def reference_costs(workload: SweepWorkload, scratch: Path, tmpfs: str | None) -> dict[str, Any]:
    """What a cell cannot avoid on this machine: a ``cp -a`` of the repo (into
    the scratch dir, and into the tmpfs) and one trivial bubblewrap command."""
    repo = workload.root / "repo"
    scratch.mkdir(parents=True, exist_ok=True)
    cp_s = _copy_time(repo, scratch)
    cp_tmpfs_s = None
    if tmpfs:
        with tempfile.TemporaryDirectory(dir=tmpfs) as into:
            cp_tmpfs_s = _copy_time(repo, Path(into))
    bwrap_argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
                  "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                  "--proc", "/proc", "--dev", "/dev", "--unshare-all", "--die-with-parent",
                  "/usr/bin/true"]
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        try:
            ran = subprocess.run(bwrap_argv, capture_output=True, check=False)
        except OSError:
            break
        if ran.returncode != 0:
            break
        samples.append(time.perf_counter() - start)
    return {"cp_repo_s": cp_s, "tmpfs": tmpfs, "cp_repo_tmpfs_s": cp_tmpfs_s,
            "bwrap_true_s": _median(samples)}


# ---------------------------------------------------------------------- collection


def collect_argv(workload: CollectWorkload, out: Path) -> list[str]:
    return pytest_argv("--rootdir", str(workload.task_file.parent), "--collect-only", "-q",
                       "--wfbench-tasks", str(workload.task_file), "--wfbench-arms", "noop",
                       "--wfbench-runs", str(workload.runs), "--wfbench-out", str(out))


def collect_once(workload: CollectWorkload, scratch: Path, label: str) -> dict[str, Any]:
    out = scratch / f"out-{label}"
    shutil.rmtree(out, ignore_errors=True)
    measured = run_measured(collect_argv(workload, out), cwd=workload.task_file.parent,
                            log=scratch / "logs" / f"{label}.log")
    output = measured.output()
    collected = sum(1 for line in output.splitlines() if CELL_LINE in line)
    if collected != workload.cells:
        raise _failed(f"collection {label}", measured,
                      f"{collected} cells collected, expected {workload.cells}")
    match = COLLECTED_RE.search(output)
    return {
        "wall_s": measured.wall_s,
        "cpu_s": measured.cpu_user_s + measured.cpu_sys_s,
        "max_rss_mib": measured.max_rss_mib,
        "returncode": measured.returncode,
        "collected": collected,
        "pytest_collect_s": float(match.group(2)) if match else None,
        # --collect-only still ends the session; rows it writes are reported.
        "rows_written": len(read_results(out)),
        **measured.phases,
    }


def load_in_process(workload: CollectWorkload, repeat: int) -> dict[str, Any]:
    """Loading (parse + validate) the task file, and expanding it into cells."""
    from pytest_wfbench.cells import expand
    from pytest_wfbench.tasks import load_task_file

    loads, expands = [], []
    cells = 0
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        task_file = load_task_file(workload.task_file)
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        cells = len(expand(task_file, ["noop"], workload.runs))
        expands.append(time.perf_counter() - start)
    if cells != workload.cells:
        raise BenchmarkError(f"expand gave {cells} cells, expected {workload.cells}")
    return {"load_task_file_s": _median(loads), "expand_s": _median(expands),
            "load_samples_s": loads}


# ------------------------------------------------------------------------- profile


@dataclass(frozen=True)
class HotSpot:
    function: str
    ncalls: str
    tottime_s: float
    cumtime_s: float

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "ncalls": self.ncalls,
                "tottime_s": round(self.tottime_s, 4), "cumtime_s": round(self.cumtime_s, 4)}


def _short(file_name: str, line: int, name: str) -> str:
    parts = Path(file_name).parts
    for anchor in ("pytest_wfbench", "_pytest", "yaml", "xdist", "filelock", "pluggy"):
        if anchor in parts:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            return f"{'/'.join(parts[index:])}:{line}({name})"
    if not file_name or file_name == "~":
        return name
    return f"{'/'.join(parts[-2:])}:{line}({name})"


def profile_run(argv: list[str], cwd: Path, prof: Path, log: Path) -> Measured:
    """Run a pytest command line under cProfile (wall-clock timer: time spent
    waiting on git, cp and bwrap shows up in the calling function)."""
    assert argv[:2] == [sys.executable, "-m"], argv
    profiled = [sys.executable, "-m", "cProfile", "-o", str(prof), *argv[1:]]
    return run_measured(profiled, cwd=cwd, log=log)


def hot_spots(prof: Path, top: int) -> dict[str, Any]:
    """The top functions by own time, and the harness's functions by cumulative time."""
    profile = pstats.Stats(str(prof)).get_stats_profile()
    spots = [
        HotSpot(_short(fp.file_name, fp.line_number, name), fp.ncalls, fp.tottime, fp.cumtime)
        for name, fp in profile.func_profiles.items()
    ]
    by_self = sorted(spots, key=lambda s: s.tottime_s, reverse=True)[:top]
    harness = sorted((s for s in spots if s.function.startswith("pytest_wfbench/")),
                     key=lambda s: s.cumtime_s, reverse=True)[:top]
    return {
        "profiled_s": round(profile.total_tt, 3),
        "by_self_time": [s.to_json() for s in by_self],
        "harness_by_cumulative_time": [s.to_json() for s in harness],
    }
