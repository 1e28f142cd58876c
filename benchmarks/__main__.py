"""``python -m benchmarks [--quick] [--repeat N] [--profile] [--markdown] ...``

Measures pytest-wfbench's own overhead (see :mod:`benchmarks`), prints a
compact table and writes every figure, with the machine's facts, to
``benchmarks/results/latest.json``. Exit status 0 unless a measured run failed
to do its work (a benchmark, not a test: no wall-clock threshold is judged).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.machine import machine_facts, tmpfs_dir
from benchmarks.measure import (
    BenchmarkError,
    collect_argv,
    collect_once,
    hot_spots,
    load_in_process,
    profile_run,
    reference_costs,
    sweep_argv,
    sweep_once,
)
from benchmarks.workload import (
    CollectWorkload,
    RepoShape,
    SweepWorkload,
    make_collect_workloads,
    make_sweep_workload,
)
from pytest_wfbench.judge.bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
DEFAULT_JSON = HERE / "results" / "latest.json"
PROFILE_TOP = 12


@dataclass(frozen=True)
class Size:
    mode: str
    repo: RepoShape
    sweep_tasks: int
    collect_cells: int
    runs_per_task: int = 10


FULL = Size("full", RepoShape(packages=200, modules_per_package=10), sweep_tasks=5,
            collect_cells=10_000)
QUICK = Size("quick", RepoShape(packages=20, modules_per_package=10), sweep_tasks=2,
             collect_cells=1_000)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"small sizes ({QUICK.repo.python_files} repo files, "
                             f"{QUICK.sweep_tasks} tasks, {QUICK.collect_cells:,} cells)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="measure every run N times and report medians (default 1)")
    parser.add_argument("--workers", type=int, default=2, metavar="N",
                        help="xdist workers of the parallel sweep (default 2)")
    parser.add_argument("--profile", action="store_true",
                        help="also run the serial sweep and both collections under "
                             "cProfile and report the hot spots")
    parser.add_argument("--no-tmpfs", action="store_true",
                        help="skip the serial sweep with the work dir on /dev/shm")
    parser.add_argument("--markdown", action="store_true",
                        help="print the table as markdown (for the README)")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, metavar="PATH",
                        help="where to write the figures (default "
                             f"{DEFAULT_JSON.relative_to(REPO_ROOT)})")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated inputs, out dirs and logs (path printed)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.workers < 1:
        parser.error("--repeat and --workers must be at least 1")
    return args


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _combine(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the numeric figures of repeated measurements; raw samples kept."""
    combined: dict[str, Any] = {}
    for key, first in samples[0].items():
        values = [s.get(key) for s in samples]
        numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        combined[key] = statistics.median(numbers) if len(numbers) == len(values) else first
    if len(samples) > 1:
        combined["samples"] = samples
    return combined


def _repeated(label: str, repeat: int, measure: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    samples = []
    for i in range(repeat):
        start = time.perf_counter()
        samples.append(measure(i))
        _progress(f"{label} {i + 1}/{repeat}: {time.perf_counter() - start:.1f} s")
    return _combine(samples)


def _generic(argv: list[str], scratch: Path) -> str:
    """A command line as it can be shown: the temp dir and interpreter abbreviated."""
    text = " ".join(argv).replace(str(scratch), "$TMP")
    return text.replace(sys.executable, "python", 1)


def run_sweeps(size: Size, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    workload = make_sweep_workload(scratch / "sweep", size.repo, size.sweep_tasks)
    runs: dict[str, Any] = {}
    configs: list[tuple[str, int, str | None]] = [
        ("serial", 0, None), (f"n{args.workers}", args.workers, None)]
    shm = None if args.no_tmpfs else tmpfs_dir()
    if shm:
        configs.append(("serial-tmpfs", 0, shm))
    for label, workers, tmpdir in configs:
        def sample(i: int, label: str = label, workers: int = workers,
                   tmpdir: str | None = tmpdir) -> dict[str, Any]:
            return sweep_once(workload, scratch / "runs", f"sweep-{label}-{i}", workers, tmpdir)

        runs[label] = _repeated(f"sweep {label}", args.repeat, sample)
        runs[label].update(workers=workers, tmpdir=tmpdir)
    return {
        "repo_files": workload.repo_files,
        "tasks": workload.tasks,
        "command": _generic(sweep_argv(workload, Path("OUT"), 0), scratch),
        "runs": runs,
        "reference": reference_costs(workload, scratch / "runs", shm),
        "_workload": workload,
    }


def run_collections(size: Size, scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    workloads = make_collect_workloads(scratch / "collect", size.collect_cells,
                                       size.runs_per_task)
    shapes: dict[str, Any] = {}
    for workload in workloads:
        key = f"{workload.tasks}x{workload.runs}"
        def sample(i: int, workload: CollectWorkload = workload, key: str = key
                   ) -> dict[str, Any]:
            return collect_once(workload, scratch / "runs", f"collect-{key}-{i}")

        figures = _repeated(f"collect {workload.label}", args.repeat, sample)
        figures.update(load_in_process(workload, max(args.repeat, 3)))
        figures.update(tasks=workload.tasks, runs=workload.runs, cells=workload.cells,
                       command=_generic(collect_argv(workload, Path("OUT")), scratch))
        shapes[key] = figures
    return {"cells": size.collect_cells, "shapes": shapes, "_workloads": workloads}


def run_profiles(sweep: SweepWorkload, collects: list[CollectWorkload],
                 scratch: Path) -> dict[str, Any]:
    profiles: dict[str, Any] = {}
    jobs = [("sweep-serial", sweep_argv(sweep, scratch / "out-profile-sweep", 0), sweep.root)]
    for collect in collects:
        name = f"collect-{collect.tasks}x{collect.runs}"
        jobs.append((name, collect_argv(collect, scratch / f"out-profile-{name}"),
                     collect.task_file.parent))
    for name, argv, cwd in jobs:
        prof = scratch / f"{name}.prof"
        measured = profile_run(argv, cwd, prof, scratch / "logs" / f"profile-{name}.log")
        if not prof.exists():
            raise BenchmarkError(f"profiling {name} wrote no profile (exit "
                                 f"{measured.returncode}):\n{measured.tail()}")
        profiles[name] = {"wall_s": measured.wall_s, **hot_spots(prof, PROFILE_TOP)}
        _progress(f"profile {name}: {measured.wall_s:.1f} s")
    return profiles


# --------------------------------------------------------------------------- output


def _s(value: Any, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{digits}f} s"


def _mib(value: Any) -> str:
    return "n/a" if value is None else f"{value:.0f} MiB"


def table_rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    sweep, collection = results["sweep"], results["collection"]
    runs = list(sweep["runs"].values())

    def header(run: dict[str, Any]) -> str:
        name = f"-n {run['workers']}" if run["workers"] else "serial"
        return f"{name}, TMPDIR={run['tmpdir']}" if run.get("tmpdir") else name

    rows: list[tuple[str, ...]] = [
        (f"Sweep: {sweep['tasks']} noop cells, {sweep['repo_files']:,}-file repo",
         *(header(r) for r in runs)),
        ("sweep wall time", *(_s(r["wall_s"]) for r in runs)),
        ("per-cell duration_s (median of rows)", *(_s(r["cell_median_s"]) for r in runs)),
        ("template build (first cell - median of rest)",
         *(_s(r["template_build_estimate_s"]) if not r["workers"] else "" for r in runs)),
        ("pytest start-up", *(_s(r.get("startup_s")) for r in runs)),
        ("configure (load tasks, preflight)", *(_s(r.get("configure_s")) for r in runs)),
        ("collection", *(_s(r.get("collection_s")) if not r["workers"] else "in workers"
                         for r in runs)),
        ("run loop (all cells)", *(_s(r.get("run_s")) for r in runs)),
        ("session finish (rows, report)", *(_s(r.get("sessionfinish_s")) for r in runs)),
        ("peak RSS (largest process)", *(_mib(r["max_rss_mib"]) for r in runs)),
    ]
    shapes = list(collection["shapes"].values())
    rows += [
        (f"Collection: {collection['cells']:,} cells (--collect-only)",
         *(f"{c['tasks']:,} tasks x {c['runs']}" for c in shapes)),
        ("wall time", *(_s(c["wall_s"]) for c in shapes)),
        ("pytest start-up", *(_s(c.get("startup_s")) for c in shapes)),
        ("configure (load tasks, preflight)", *(_s(c.get("configure_s")) for c in shapes)),
        ("collection", *(_s(c.get("collection_s")) for c in shapes)),
        ("session finish (rows, report)", *(_s(c.get("sessionfinish_s")) for c in shapes)),
        ("peak RSS", *(_mib(c["max_rss_mib"]) for c in shapes)),
        ("load_task_file, in-process", *(_s(c["load_task_file_s"], 3) for c in shapes)),
        ("cells.expand, in-process", *(_s(c["expand_s"], 3) for c in shapes)),
        ("rows written by --collect-only", *(f"{c['rows_written']:,}" for c in shapes)),
    ]
    reference = sweep["reference"]
    rows += [
        ("Reference (this machine)", "", ""),
        (f"cp -a of the {sweep['repo_files']:,}-file repo", _s(reference["cp_repo_s"], 3), ""),
        *([(f"cp -a of the repo to {reference['tmpfs']}", _s(reference["cp_repo_tmpfs_s"], 3),
            "")] if reference.get("tmpfs") else []),
        ("bwrap ... true", _s(reference["bwrap_true_s"], 3), ""),
    ]
    return rows


def _is_section(row: tuple[str, ...]) -> bool:
    return row[0].startswith(("Sweep:", "Collection:", "Reference"))


def render_plain(rows: list[tuple[str, ...]]) -> str:
    width = max(len(r[0]) for r in rows)
    cols = max(len(r) for r in rows) - 1
    col_width = max(len(c) for r in rows for c in r[1:])
    lines = []
    for row in rows:
        cells = [c.rjust(col_width) for c in (*row[1:], *([""] * (cols - len(row) + 1)))]
        if _is_section(row):
            lines.append("")
        indent = "" if _is_section(row) else "  "
        lines.append(f"{indent}{row[0]:<{width}}  {'  '.join(cells)}".rstrip())
    return "\n".join(lines).lstrip("\n")


def render_markdown(rows: list[tuple[str, ...]]) -> str:
    """One markdown table per section, the section's row as its header."""
    sections: list[list[tuple[str, ...]]] = []
    for row in rows:
        if _is_section(row) or not sections:
            sections.append([])
        sections[-1].append(row)
    tables = []
    for section in sections:
        cols = max(2, *(max((i + 1 for i, c in enumerate(r) if c), default=0)
                        for r in section))
        lines = []
        for row in section:
            cells = [*row[:cols], *([""] * (cols - len(row)))]
            lines.append("| " + " | ".join(cells) + " |")
            if len(lines) == 1:
                lines.append("|---" + "|--:" * (cols - 1) + "|")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def machine_line(machine: dict[str, Any]) -> str:
    return (f"{machine['cpu_model'] or 'unknown CPU'}, {machine['nproc']} CPUs, "
            f"{machine['memory_gib']} GiB, {machine['os'] or 'Linux'} (kernel "
            f"{machine['kernel']}), Python {machine['python']}, {machine['bwrap'] or 'no bwrap'}, "
            f"{machine['git'] or 'no git'}, /tmp on {machine['tmp_filesystem']}")


def print_profiles(profiles: dict[str, Any]) -> None:
    for name, data in profiles.items():
        print(f"\ncProfile of {name} ({data['wall_s']:.1f} s under the profiler)")
        for title, key in (("own time", "by_self_time"),
                           ("harness, cumulative", "harness_by_cumulative_time")):
            print(f"  top by {title}:")
            for spot in data[key]:
                print(f"    {spot['tottime_s']:8.3f} {spot['cumtime_s']:8.3f} "
                      f"{spot['ncalls']:>10}  {spot['function']}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    size = QUICK if args.quick else FULL
    scratch = Path(tempfile.mkdtemp(prefix="wfbench-bench-"))
    started = datetime.now(UTC)
    load_before = _loadavg()
    _progress(f"{size.mode} run in {scratch}")
    # The judges' trusted bytecode is built once per machine, not per sweep:
    # build it before anything is measured, where the sweeps will find it.
    os.environ.setdefault("WFBENCH_CACHE_DIR", str(REPO_ROOT / ".tools" / "cache"))
    ensure_bytecode(Path(os.environ["WFBENCH_CACHE_DIR"]))
    try:
        sweep = run_sweeps(size, scratch, args)
        collection = run_collections(size, scratch, args)
        profiles = (run_profiles(sweep.pop("_workload"), collection.pop("_workloads"), scratch)
                    if args.profile else None)
    except BenchmarkError as error:
        print(f"benchmark failed: {error}\n(inputs and logs kept in {scratch})", file=sys.stderr)
        return 1
    if args.keep:
        _progress(f"kept {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    sweep.pop("_workload", None)
    collection.pop("_workloads", None)
    results: dict[str, Any] = {
        "benchmark": "pytest-wfbench harness overhead",
        "mode": size.mode,
        "command": " ".join(["python -m benchmarks", *(argv if argv is not None
                                                       else sys.argv[1:])]).strip(),
        "started_at": started.isoformat(timespec="seconds"),
        "elapsed_s": (datetime.now(UTC) - started).total_seconds(),
        "repeat": args.repeat,
        "machine": machine_facts(REPO_ROOT),
        # Other work on the machine skews every figure: the 1-minute load
        # average when the benchmark started and ended.
        "loadavg_1min": {"start": load_before, "end": _loadavg()},
        "sweep": sweep,
        "collection": collection,
    }
    if profiles is not None:
        results["profile"] = profiles
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    rows = table_rows(results)
    load = results["loadavg_1min"]
    print(f"pytest-wfbench overhead ({size.mode}) on {machine_line(results['machine'])}; "
          f"load average {load['start']} at start, {load['end']} at end\n")
    print(render_markdown(rows) if args.markdown else render_plain(rows))
    if profiles is not None:
        print_profiles(profiles)
    print(f"\nfigures: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
