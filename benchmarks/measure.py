"""The smaller measurements: the collection of many cells, loading a task
file in-process, what a copy and a bubblewrap command cost on this machine,
and (optionally) where the time goes under cProfile.

Exit codes of measured pytest runs are recorded, never judged. What is checked
is that the runs did their work (every cell collected), else the figures would
be meaningless and :class:`BenchmarkError` says why.
"""

from __future__ import annotations

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
from benchmarks.sweeps import BenchmarkError, read_rows, unrelated_plugin_args
from benchmarks.workload import CollectWorkload

COLLECTED_RE = re.compile(r"(\d+) tests? collected in ([0-9.]+)s")
CELL_LINE = "::test_cell["


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _failed(what: str, measured: Measured, detail: str) -> BenchmarkError:
    return BenchmarkError(f"{what}: {detail} (exit {measured.returncode}); command: "
                          f"{' '.join(measured.argv)}\n--- last lines of {measured.log} ---\n"
                          f"{measured.tail()}")


# ---------------------------------------------------------------------- reference


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


def reference_costs(repo: Path, scratch: Path, tmpfs: str | None) -> dict[str, Any]:
    """What a cell cannot avoid on this machine: a ``cp -a`` of a repo (into the
    scratch dir, and into the tmpfs) and one trivial bubblewrap command."""
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


def collect_argv(workload: CollectWorkload, out: Path, cache_dir: Path) -> list[str]:
    return pytest_argv(*unrelated_plugin_args(), "--rootdir", str(workload.task_file.parent),
                       "--collect-only", "-q", "--wfbench-tasks", str(workload.task_file),
                       "--wfbench-arms", "noop", "--wfbench-runs", str(workload.runs),
                       "--wfbench-out", str(out), "--wfbench-cache-dir", str(cache_dir))


def collect_once(workload: CollectWorkload, scratch: Path, label: str,
                 cache_dir: Path) -> dict[str, Any]:
    """``pytest --collect-only`` of the workload; with a ``cache_dir`` that has
    not seen the task file yet, the parse is cold."""
    out = scratch / f"out-{label}"
    shutil.rmtree(out, ignore_errors=True)
    measured = run_measured(collect_argv(workload, out, cache_dir),
                            cwd=workload.task_file.parent, log=scratch / "logs" / f"{label}.log")
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
        "rows_written": len(read_rows(out)),
        **measured.phases,
    }


def load_in_process(workload: CollectWorkload, repeat: int, cache_dir: Path) -> dict[str, Any]:
    """Loading (parse + validate) the task file without the parse cache and with
    it (warm), and expanding it into cells."""
    from pytest_wfbench.cells import expand
    from pytest_wfbench.tasks import load_task_file

    loads, cached, expands = [], [], []
    cells = 0
    load_task_file(workload.task_file, cache_dir=cache_dir)
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        load_task_file(workload.task_file, cache_dir=cache_dir)
        cached.append(time.perf_counter() - start)
        start = time.perf_counter()
        task_file = load_task_file(workload.task_file)
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        cells = len(expand(task_file, ["noop"], workload.runs))
        expands.append(time.perf_counter() - start)
    if cells != workload.cells:
        raise BenchmarkError(f"expand gave {cells} cells, expected {workload.cells}")
    return {"load_task_file_s": _median(loads), "load_task_file_cached_s": _median(cached),
            "expand_s": _median(expands)}


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
