"""``python -m benchmarks [--quick] [--repeat N] [--profile] [--markdown] ...``

Measures every target of issue 8 side by side in one run on this machine,
prints each with its measured figure and whether it holds, and writes every
figure, with the machine's facts, to ``benchmarks/results/latest.json``. Exit
status 0 unless a measured run failed to do its work: a benchmark, not a test
(a target that does not hold is reported, not failed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import experiments
from benchmarks.aggregation import aggregation_targets, measure_shape
from benchmarks.experiments import Context
from benchmarks.machine import machine_facts, tmpfs_dir
from benchmarks.measure import (
    collect_argv,
    collect_once,
    hot_spots,
    load_in_process,
    profile_run,
    reference_costs,
)
from benchmarks.outdirs import RowsShape
from benchmarks.sweeps import BenchmarkError
from benchmarks.targets import Target, render_targets, summary_line
from benchmarks.workload import CollectWorkload, make_collect_workloads
from pytest_wfbench.judge.bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
DEFAULT_JSON = HERE / "results" / "latest.json"
PERSISTENT_CACHE = REPO_ROOT / ".tools" / "cache"
PROFILE_TOP = 12
EXPERIMENTS = ("demo_cells", "project_cells", "demo_scaling", "uneven_sessions",
               "overhead_by_repo_size", "collection", "aggregation")
"""What ``--only`` can pick (template_builds needs the first, second and fifth)."""


@dataclass(frozen=True)
class Size:
    mode: str
    demo_runs: int
    """Runs per demo cell in the -n 2 sweep (4: 3 tasks x 2 arms x 4 = 24 cells)."""
    project_files: int
    small_repo: int
    large_repo: int
    sessions_s: float
    """S, the sum of the 24 uneven sessions: 240 s in a full run, sessions of 1.8
    to 18 s (an agent's take minutes); the sweep's own start and end, about 2 s,
    is then what it is in a sweep, not a tenth of it."""
    collect_cells: int
    row_shapes: tuple[RowsShape, ...]


FULL = Size("full", demo_runs=4, project_files=2000, small_repo=200, large_repo=20_000,
            sessions_s=240.0, collect_cells=10_000,
            row_shapes=(RowsShape(100, 4, 250), RowsShape(1000, 4, 25), RowsShape(10, 4, 250),
                        RowsShape(100, 4, 250, candidate=True)))
QUICK = Size("quick", demo_runs=2, project_files=500, small_repo=200, large_repo=2_000,
             sessions_s=24.0, collect_cells=1_000,
             row_shapes=(RowsShape(10, 4, 250), RowsShape(100, 4, 25)))


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: a smoke run whose verdicts say little")
    parser.add_argument("--repeat", type=int, default=None, metavar="N",
                        help="measured sweeps per figure, medians taken (default 3, quick 1)")
    parser.add_argument("--profile", action="store_true",
                        help="also run both collections under cProfile: the hot spots")
    parser.add_argument("--markdown", action="store_true",
                        help="print the targets as a markdown table (for the README)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH",
                        help="where to write the figures (default "
                             f"{DEFAULT_JSON.relative_to(REPO_ROOT)})")
    parser.add_argument("--only", action="append", choices=EXPERIMENTS, metavar="NAME",
                        help="run only this experiment (repeatable; one of "
                             f"{', '.join(EXPERIMENTS)}); figures go to "
                             "results/partial.json unless --json says otherwise")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated inputs, out dirs and logs (path printed)")
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.only and args.json == DEFAULT_JSON:
        args.json = DEFAULT_JSON.with_name("partial.json")
    return args


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _cache_dir(scratch: Path) -> tuple[Path, Path]:
    """This run's cache dir: no template yet, the trusted bytecode (built once
    per machine in .tools/cache) linked in, so that no measured sweep builds it."""
    built = ensure_bytecode(PERSISTENT_CACHE)
    cache = scratch / "cache"
    (cache / "bytecode").mkdir(parents=True)
    subprocess.run(["cp", "-al", str(built), str(cache / "bytecode" / built.name)], check=True)
    return cache, ensure_bytecode(cache)


def collection(ctx: Context, cells: int, profile: bool) -> tuple[dict[str, Any], list[Target]]:
    """--collect-only of ``cells`` cells in both shapes, cold (a cache dir that
    never saw the file) and warm (the parse cache holds it), medians."""
    workloads = make_collect_workloads(ctx.scratch / "collect", cells, 10)
    shapes: dict[str, Any] = {}
    targets = []
    for workload in workloads:
        key = f"{workload.tasks}x{workload.runs}"
        cold, warm = [], []
        for i in range(max(ctx.repeat, 1)):
            fresh = ctx.scratch / f"collect-cache-{key}-{i}"
            cold.append(collect_once(workload, ctx.scratch, f"collect-{key}-cold-{i}", fresh))
            warm.append(collect_once(workload, ctx.scratch, f"collect-{key}-warm-{i}", fresh))
        figures = {"cold": cold, "warm": warm, "tasks": workload.tasks, "runs": workload.runs,
                   **load_in_process(workload, 3, ctx.scratch / f"collect-cache-{key}-0")}
        if profile:
            figures["profile"] = _profile(workload, ctx.scratch, key)
        shapes[key] = figures
        for state, samples in (("cold", cold), ("warm", warm)):
            wall = statistics.median(s["wall_s"] for s in samples)
            configure = statistics.median(s.get("configure_s") or 0 for s in samples)
            collect = statistics.median(s.get("collection_s") or 0 for s in samples)
            targets.append(Target(
                key=f"collect_{key}_{state}",
                target=f"collection of {cells:,} cells <= 2 s ({workload.label}, {state})",
                value=wall, limit=2.0, unit="s",
                measured=f"pytest --collect-only wall (median of {len(samples)}): configure "
                         f"{configure:.2f} s (loading the task file), collection {collect:.2f} s"))
        ctx.progress(f"collection {workload.label}: cold "
                     f"{statistics.median(s['wall_s'] for s in cold):.2f} s, warm "
                     f"{statistics.median(s['wall_s'] for s in warm):.2f} s")
    return shapes, targets


def _profile(workload: CollectWorkload, scratch: Path, key: str) -> dict[str, Any]:
    prof = scratch / f"collect-{key}.prof"
    argv = collect_argv(workload, scratch / f"out-profile-{key}", scratch / f"profile-cache-{key}")
    measured = profile_run(argv, workload.task_file.parent, prof,
                           scratch / "logs" / f"profile-{key}.log")
    if not prof.exists():
        raise BenchmarkError(f"profiling {key} wrote no profile:\n{measured.tail()}")
    return {"wall_s": measured.wall_s, **hot_spots(prof, PROFILE_TOP)}


def aggregation(ctx: Context, shapes: tuple[RowsShape, ...]) -> tuple[dict[str, Any],
                                                                     list[Target]]:
    figures = {}
    for shape in shapes:
        key = shape.key
        figures[key] = measure_shape(ctx.scratch, shape, builds=ctx.repeat)
        ctx.progress(f"aggregation of {shape.rows:,} rows ({shape.label}): session end "
                     f"{figures[key]['session_end']['wall_s']:.2f} s"
                     + "".join(f", {state} {figures[key][state]['wall_s']:.2f} s"
                               for state in ("cold", "warm") if state in figures[key]))
    return figures, aggregation_targets(figures, shapes[0].rows)


def run_all(ctx: Context, size: Size, profile: bool,
            only: Sequence[str] = EXPERIMENTS) -> tuple[dict[str, Any], list[Target]]:
    figures: dict[str, Any] = {}
    targets: list[Target] = []
    started = time.perf_counter()

    def step(name: str, result: tuple[Any, ...]) -> None:
        figures[name] = result[0]
        targets.extend(result[1])
        _progress(f"{name} done ({time.perf_counter() - started:.0f} s so far)")

    demo = project = sizes = None
    if "demo_cells" in only:
        demo = experiments.demo_cells(ctx)
        step("demo_cells", demo)
    if "project_cells" in only:
        project = experiments.project_cells(ctx, size.project_files)
        step("project_cells", project)
    if "demo_scaling" in only:
        step("demo_scaling", experiments.demo_scaling(ctx, size.demo_runs, pairs=ctx.repeat))
    if "uneven_sessions" in only:
        step("uneven_sessions", experiments.uneven_sessions(ctx, size.sessions_s))
    if "overhead_by_repo_size" in only:
        sizes = experiments.overhead_by_repo_size(ctx, size.small_repo, size.large_repo)
        step("overhead_by_repo_size", sizes)
    if demo is not None and project is not None and sizes is not None:
        first_demo, *demo_again = demo[2]
        step("template_builds", experiments.second_sweep_builds(
            first_demo, [*demo_again, *project[2][1:], *sizes[2]]))
    if "collection" in only:
        step("collection", collection(ctx, size.collect_cells, profile))
    if "aggregation" in only:
        step("aggregation", aggregation(ctx, size.row_shapes))
    if project is not None:
        figures["reference"] = reference_costs(
            ctx.scratch / f"project-{size.project_files}" / "repo", ctx.scratch / "reference",
            tmpfs_dir())
    return figures, targets


def machine_line(machine: dict[str, Any]) -> str:
    return (f"{machine['cpu_model'] or 'unknown CPU'}, {machine['nproc']} CPUs, "
            f"{machine['memory_gib']} GiB, {machine['os'] or 'Linux'} (kernel "
            f"{machine['kernel']}), Python {machine['python']}, {machine['bwrap'] or 'no bwrap'}, "
            f"{machine['git'] or 'no git'}, /tmp on {machine['tmp_filesystem']}, numpy's "
            f"vectors {machine.get('numpy_vectors', 'unknown')}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    size = QUICK if args.quick else FULL
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    scratch = Path(tempfile.mkdtemp(prefix="wfbench-bench-"))
    started = datetime.now(UTC)
    load_before = _loadavg()
    _progress(f"{size.mode} run in {scratch}")
    try:
        cache_dir, bytecode = _cache_dir(scratch)
        ctx = Context(scratch=scratch, cache_dir=cache_dir, bytecode=bytecode, repeat=repeat,
                      quick=args.quick, progress=_progress)
        figures, targets = run_all(ctx, size, args.profile, args.only or EXPERIMENTS)
    except (BenchmarkError, RuntimeError, subprocess.CalledProcessError) as error:
        print(f"benchmark failed: {error}\n(inputs and logs kept in {scratch})", file=sys.stderr)
        return 1
    if args.keep:
        _progress(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    results: dict[str, Any] = {
        "benchmark": "pytest-wfbench: the targets of issue 8",
        "mode": size.mode,
        "command": " ".join(["python -m benchmarks", *(argv if argv is not None
                                                       else sys.argv[1:])]).strip(),
        "started_at": started.isoformat(timespec="seconds"),
        "elapsed_s": round((datetime.now(UTC) - started).total_seconds(), 1),
        "repeat": repeat,
        "machine": machine_facts(REPO_ROOT),
        # Other work on the machine skews every figure: the 1-minute load
        # average when the benchmark started and ended.
        "loadavg_1min": {"start": load_before, "end": _loadavg()},
        "targets": [t.to_json() for t in targets],
        **figures,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    load = results["loadavg_1min"]
    print(f"pytest-wfbench, issue 8's targets ({size.mode}, {repeat} measured runs per figure) "
          f"on {machine_line(results['machine'])}; load average {load['start']} at start, "
          f"{load['end']} at end; {results['elapsed_s']:.0f} s\n")
    print(render_targets(targets, markdown=args.markdown))
    print(f"\n{summary_line(targets)}")
    print(f"figures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
