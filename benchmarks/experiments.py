"""The measurements behind issue 8's targets that run real sweeps: cells
against their floor, scaling with ``-n``, overhead by repository size and the
template cache across sweeps. Each returns its figures (for latest.json) and
its targets.
"""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.floor import Floor, measure_floor
from benchmarks.projects import session_lengths, write_pytest_suite, write_sleeper_suite
from benchmarks.scheduling import play
from benchmarks.sweeps import SweepRun, per_cell, run_sweep
from benchmarks.targets import Target, ratio
from benchmarks.workload import RepoShape, make_sweep_workload
from pytest_wfbench.tasks import Task, load_task_file

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO = REPO_ROOT / "tasks" / "demo.yaml"
NOT_REVIEW = ("-k", "not review")
"""The demo's change tasks: verify and oracle are pytest (review tasks have neither)."""

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Context:
    scratch: Path
    cache_dir: Path
    """This run's cache dir: templates start empty, the trusted bytecode is in."""
    bytecode: Path
    repeat: int
    quick: bool
    progress: Progress


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


# ----------------------------------------------------------------- cells vs floor


def _floor_samples(ctx: Context, tasks: list[Task], label: str,
                   samples: dict[str, list[Floor]]) -> None:
    """One floor of each (task, arm) cell (run 1), added to ``samples``."""
    for task in tasks:
        assert task.oracle.files is not None
        for arm, gold in (("gold", task.gold), ("noop", None)):
            samples.setdefault(f"{task.id}-{arm}-r1", []).append(measure_floor(
                Path(task.repo.location), task.verify, task.oracle.command,
                task.oracle.files, gold, ctx.bytecode, ctx.scratch / f"floors-{label}",
                task.oracle.hidden_paths))


def _floors(samples: dict[str, list[Floor]]) -> dict[str, dict[str, Any]]:
    """Per cell id, the median floor over its samples."""
    return {cell: {"floor_s": _median([f.total_s for f in floors]),
                   "copy_s": _median([f.copy_s for f in floors]),
                   "session_s": _median([f.session_s for f in floors]),
                   "verify_s": _median([f.verify_s for f in floors]),
                   "oracle_s": _median([f.oracle_s for f in floors])}
            for cell, floors in samples.items()}


def cells_against_floor(ctx: Context, task_file: Path, label: str, title: str,
                        args: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[Target],
                                                             list[SweepRun]]:
    """Serial sweeps of gold and noop cells (the first one warms the template
    cache and is not counted), each cell's median duration against its floor.
    Each measured sweep is followed by one floor of each cell, so that the
    two are measured side by side on a machine whose load drifts."""
    tasks = [t for t in load_task_file(task_file).tasks if not t.is_review]
    expect = 2 * len(tasks)
    sweep_args = ("--wfbench-arms", "gold,noop", *args)
    first = run_sweep(task_file, ctx.scratch, f"{label}-first", cache_dir=ctx.cache_dir,
                      args=sweep_args, expect_cells=expect)
    ctx.progress(f"{label}: first sweep {first.wall_s:.1f} s ({first.builds} template builds)")
    runs = []
    samples: dict[str, list[Floor]] = {}
    for i in range(max(ctx.repeat, 1)):
        runs.append(run_sweep(task_file, ctx.scratch, f"{label}-{i}", cache_dir=ctx.cache_dir,
                              args=sweep_args, expect_cells=expect))
        _floor_samples(ctx, tasks, label, samples)
    ctx.progress(f"{label}: {len(runs)} measured sweeps, "
                 f"{statistics.median(r.wall_s for r in runs):.1f} s each, floors between")
    durations = per_cell(runs)
    overheads = per_cell(runs, "harness_overhead_s")
    floors = _floors(samples)
    cells: dict[str, Any] = {}
    for cell, floor in floors.items():
        duration = durations.get(cell)
        cells[cell] = {"duration_s": _r(duration), "overhead_s": _r(overheads.get(cell)),
                       **{k: _r(v) for k, v in floor.items()},
                       "ratio": _r(ratio(duration, floor["floor_s"]))}
    stages = {str(row["cell_id"]): row.get("stage_ms") for row in runs[0].ran()}
    targets = []
    for arm in ("noop", "gold"):
        ratios = [c["ratio"] for cell, c in cells.items()
                  if cell.endswith(f"-{arm}-r1") and c["ratio"] is not None]
        worst = max(ratios) if ratios else None
        targets.append(Target(
            key=f"cell_vs_floor_{label}_{arm}",
            target=f"{arm} cell wall <= 1.3x its floor ({title})",
            value=_median(ratios), limit=1.3, unit="x",
            measured=f"median over {len(ratios)} tasks of cell duration_s / floor "
                     f"(worst {worst:.2f}x)" if worst is not None else "no cell measured"))
    figures = {"task_file": str(task_file), "tasks": [t.id for t in tasks],
               "first_sweep": first.figures(), "sweeps": [r.figures() for r in runs],
               "cells": cells, "stage_ms_first_measured_sweep": stages}
    return figures, targets, [first, *runs]


def demo_cells(ctx: Context) -> tuple[dict[str, Any], list[Target], list[SweepRun]]:
    return cells_against_floor(ctx, DEMO, "demo", "demo suite", NOT_REVIEW)


def project_cells(ctx: Context, files: int) -> tuple[dict[str, Any], list[Target],
                                                     list[SweepRun]]:
    shape = RepoShape(packages=max(1, (files - 10) // 10), modules_per_package=10)
    suite = write_pytest_suite(ctx.scratch / f"project-{files}", shape, tasks=2,
                               name=f"bench-pytest-{files}")
    figures, targets, runs = cells_against_floor(
        ctx, suite.task_file, f"project{files}", f"{suite.repo_files:,}-file repository")
    figures["repo_files"] = suite.repo_files
    return figures, targets, runs


# ------------------------------------------------------------------------ scaling


def demo_scaling(ctx: Context, runs_per_cell: int, pairs: int,
                 workers: int = 2) -> tuple[dict[str, Any], list[Target]]:
    """The demo's change tasks, gold and noop, ``runs_per_cell`` runs: serial
    against ``-n workers``, alternately, ``pairs`` times each (medians), after a
    sweep of each cell once (templates and expected tests cached: neither side
    pays for them, whatever ran before)."""
    args = ("--wfbench-arms", "gold,noop", "--wfbench-runs", str(runs_per_cell), *NOT_REVIEW)
    cells = 3 * 2 * runs_per_cell
    run_sweep(DEMO, ctx.scratch, "demo-scaling-warm", cache_dir=ctx.cache_dir,
              args=("--wfbench-arms", "gold,noop", *NOT_REVIEW), expect_cells=6)
    serial, parallel = [], []
    for i in range(max(pairs, 1)):
        serial.append(run_sweep(DEMO, ctx.scratch, f"demo{cells}-serial-{i}",
                                cache_dir=ctx.cache_dir, args=args, expect_cells=cells))
        parallel.append(run_sweep(DEMO, ctx.scratch, f"demo{cells}-n{workers}-{i}",
                                  cache_dir=ctx.cache_dir, workers=workers, args=args,
                                  expect_cells=cells))
        ctx.progress(f"demo {cells} cells: serial {serial[-1].wall_s:.1f} s, -n {workers} "
                     f"{parallel[-1].wall_s:.1f} s")
    serial_s = _median([r.wall_s for r in serial])
    parallel_s = _median([r.wall_s for r in parallel])
    value = ratio(parallel_s, serial_s)
    target = Target(key="demo_parallel_vs_serial",
                    target=f"demo sweep of {cells} cells: wall at -n {workers} <= 0.6x serial",
                    value=value, limit=0.6, unit="x",
                    measured=f"-n {workers} {parallel_s:.1f} s / serial {serial_s:.1f} s "
                             "(process walls)")
    return ({"cells": cells, "serial": [r.figures() for r in serial],
             "parallel": [r.figures() for r in parallel]}, [target])


def uneven_sessions(ctx: Context, total_s: float, cells: int = 24,
                    workers: int = 4) -> tuple[dict[str, Any], list[Target]]:
    """Cells whose sessions sleep fixed, uneven lengths (ten times apart) that
    sum to ``total_s``, at ``-n workers``, against total_s / workers: a repeat
    sweep (the first sweep's durations in the cache dir: the longest handed out
    first, each to the worker free first) holds the issue's target. A first
    sweep knows no lengths: no scheduler can promise total_s / workers then
    (the longest cells may come last), so it is measured against the scheduler
    itself played on the cells' own lengths with none of them known (the
    harness's own cost), and shown against total_s / workers for the record."""
    lengths = session_lengths(cells, total_s)
    suite = write_sleeper_suite(ctx.scratch / "sleepers", lengths, "bench-sleepers")
    warm = run_sweep(suite.task_file, ctx.scratch, "sleepers-warm", cache_dir=ctx.cache_dir,
                     args=("-k", suite.tasks[0]), expect_cells=1)
    ideal = total_s / workers
    blind, _ = play(lengths, workers)  # collection order, every length alike
    figures: dict[str, Any] = {"lengths_s": lengths, "total_s": total_s, "workers": workers,
                               "warm_up": warm.figures(), "blind_makespan_s": round(blind, 3)}
    targets = []
    for name, label in (("first", "first sweep"), ("repeat", "repeat sweep")):
        run = run_sweep(suite.task_file, ctx.scratch, f"sleepers-{name}",
                        cache_dir=ctx.cache_dir, workers=workers, expect_cells=cells)
        ctx.progress(f"uneven sessions ({label}): {run.wall_s:.1f} s at -n {workers} "
                     f"for S = {total_s:.0f} s")
        loop = run.measured.phases.get("run_s")
        sessions = sum(float(r.get("session_duration_s") or 0) for r in run.ran())
        figures[name] = {"session_sum_s": round(sessions, 3), "sweep": run.figures()}
        if name == "first":
            targets += [
                Target(key="uneven_sessions_wall_first_vs_blind",
                       target=f"{cells} uneven sessions at -n {workers} (first sweep, no "
                              "lengths known): wall <= 1.10x the scheduler's makespan blind",
                       value=ratio(run.wall_s, blind), limit=1.10, unit="x",
                       measured=f"process wall {run.wall_s:.1f} s / {blind:.1f} s, the "
                                "scheduler played on the cells' lengths with none known "
                                "(benchmarks/scheduling.py): what the harness adds"),
                Target(key="uneven_sessions_wall_first",
                       target=f"{cells} uneven sessions at -n {workers} (first sweep): wall "
                              f"/ (S/{workers})", value=ratio(run.wall_s, ideal), limit=1.10,
                       unit="x", informational=True,
                       measured=f"process wall {run.wall_s:.1f} s / (S {total_s:.0f} s / "
                                f"{workers}); cells in collection order: no scheduler that "
                                "knows no lengths can promise S/4 (here, blind, "
                                f"{blind / ideal:.2f}x before any cost of the harness)"),
            ]
            continue
        order = "the first sweep's durations known: longest first, to the worker free first"
        targets += [
            Target(key="uneven_sessions_wall",
                   target=f"{cells} uneven sessions at -n {workers} ({label}): "
                          f"wall <= 1.10x S/{workers}", value=ratio(run.wall_s, ideal),
                   limit=1.10, unit="x",
                   measured=f"process wall {run.wall_s:.1f} s / (S {total_s:.0f} s / "
                            f"{workers}), start-up and report included; {order}"),
            Target(key="uneven_sessions_run_loop",
                   target=f"{cells} uneven sessions at -n {workers} ({label}): run loop "
                          f"<= 1.10x S/{workers}", value=ratio(loop, ideal), limit=1.10,
                   unit="x",
                   measured=f"pytest's run loop {loop or 0:.1f} s / (S / {workers}): from "
                            "the first cell handed out to the last row"),
        ]
    return figures, targets


# ------------------------------------------------------- repository size, templates


def _git_commit(repo: Path) -> None:
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
           "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "bench"], check=True)


def overhead_by_repo_size(ctx: Context, small: int, large: int,
                          tasks: int = 4) -> tuple[dict[str, Any], list[Target], list[SweepRun]]:
    """noop cells (verify ``true``, oracle ``false``) on git repositories of
    ``small`` and ``large`` files: each swept twice, the second sweep measured
    (its templates come from the cache), median harness overhead per cell."""
    figures: dict[str, Any] = {}
    overhead: dict[int, float | None] = {}
    seconds: list[SweepRun] = []
    for files in (small, large):
        shape = RepoShape(packages=max(1, (files - 2) // 10), modules_per_package=10)
        workload = make_sweep_workload(ctx.scratch / f"size-{files}", shape, tasks)
        _git_commit(workload.root / "repo")
        args = ("--wfbench-arms", "noop")
        first = run_sweep(workload.task_file, ctx.scratch, f"size{files}-first",
                          cache_dir=ctx.cache_dir, args=args, expect_cells=tasks)
        second = run_sweep(workload.task_file, ctx.scratch, f"size{files}-second",
                           cache_dir=ctx.cache_dir, args=args, expect_cells=tasks)
        seconds.append(second)
        values = [float(r["harness_overhead_s"]) for r in second.ran()]
        overhead[files] = _median(values)
        figures[str(files)] = {"repo_files": workload.repo_files, "first": first.figures(),
                               "second": second.figures(), "overhead_s": values,
                               "clones": sorted({str(r.get("clone")) for r in second.ran()})}
        ctx.progress(f"{workload.repo_files:,}-file repo: first sweep {first.wall_s:.1f} s, "
                     f"median overhead {overhead[files] or 0:.2f} s per cell")
    value = ratio(overhead[large], overhead[small])
    target = Target(key="overhead_large_vs_small_repo",
                    target=f"overhead on a {large:,}-file repo <= 2x a {small:,}-file repo's",
                    value=value, limit=2.0, unit="x",
                    measured=f"median harness_overhead_s {overhead[large] or 0:.3f} s / "
                             f"{overhead[small] or 0:.3f} s (noop cells, second sweep)")
    return figures, [target], seconds


def second_sweep_builds(first: SweepRun, seconds: list[SweepRun]) -> tuple[dict[str, Any],
                                                                           list[Target]]:
    """Template builds of sweeps of suites this run's cache dir saw before."""
    builds = sum(run.builds for run in seconds)
    return ({"first_sweep": {first.label: first.builds},
             "second_sweeps": {run.label: run.builds for run in seconds}},
            [Target(key="second_sweep_template_builds",
                    target="second sweep of the same suite: 0 template builds",
                    value=float(builds), limit=0.0, unit="builds",
                    measured=f"builds.log lines of {len(seconds)} second sweeps (the first "
                             f"sweep, {first.label}, built {first.builds})")])

