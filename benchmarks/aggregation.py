"""Aggregation and report of many rows: ``write_report`` of a generated out dir
(benchmarks/outdirs.py), each measurement in a fresh interpreter so that its
peak RSS is the build's own.

The out dir is measured in four states: as a sweep leaves it (the row cache
and the line log written by the processes that wrote the rows: what the end of
a sweep reads), the same without the line log (the compaction reads and
digests every line, and writes the log), cold (no row cache: every line parsed)
and warm (the cache as a report rewrote it). Each build does what a sweep's
controller does with its rows at its end: the selected cells without a row, the
compaction, and the report written: report.md and report.html. Alongside, the
floors of reading the file: its lines split and digested (what a cached build
without the log cannot skip) and every line parsed by ``json.loads`` (what a
build without the cache cannot).
Every state must render the same report.md and report.html, byte for byte.

``python -m benchmarks.aggregation build|split|floors OUT`` are the
measurements (the build, a build's time piece by piece, the reading floors);
they print JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.outdirs import STAGES, RowsShape, cell_ids, write_outdir
from benchmarks.targets import Target

REPO_ROOT = Path(__file__).resolve().parent.parent


def _rss_mib() -> float:
    """This process's peak resident set so far: the kernel's high-water mark of
    its memory since exec (ru_maxrss would also count the parent's at fork)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


SELECTED = "selected.json"
"""The cells a sweep of the out dir selected (the benchmark's, beside its rows)."""


def build(out: Path) -> dict[str, Any]:
    """What a sweep's controller does with its rows at its end (finish.py): the
    selected cells without a row (none here), a compaction (nothing to
    supersede here), the report written (``outdir.write_report``): report.md
    and report.html, its template compiled first, as the controller does while
    its workers run; and the terminal summary's lines."""
    from pytest_wfbench import outdir
    from pytest_wfbench.audit.report import DEFAULT_MIN_KILL_RATE
    from pytest_wfbench.finish import Finished, terminal_lines
    from pytest_wfbench.redact import Redactor
    from pytest_wfbench.render.html import html_available, prepare_html
    from pytest_wfbench.rowcache import CacheUse
    from pytest_wfbench.store import ResultsStore, cells_without_rows

    if not html_available():
        raise RuntimeError("the aggregation benchmark needs Jinja2 (the html extra): a "
                           "sweep's end writes report.html with it")
    prepare_html()
    selected = json.loads((out / SELECTED).read_text())
    sweep_id = json.loads((out / "sweep.json").read_text())["sweep_id"]
    before = _rss_mib()
    use = CacheUse()
    gate = _timed(outdir, "promotion_evidence")
    start = time.perf_counter()
    unrun = cells_without_rows(out, sweep_id, selected)
    store = ResultsStore(out, Redactor.from_environment(()))
    store.compact()
    finish = time.perf_counter() - start
    report, html = outdir.write_report(store, use=use)
    lines = terminal_lines(Finished(report, html), store.redactor.clean, work_dir=out,
                           results=store.results, min_kill_rate=DEFAULT_MIN_KILL_RATE)
    wall = time.perf_counter() - start
    if unrun:
        raise RuntimeError(f"{len(unrun)} of {out}'s cells have no row, e.g. {unrun[0]}")
    if html.path is None:
        raise RuntimeError(f"report.html of {out} was not written: {html.line}")
    text = report.files["report.md"]
    page = hashlib.sha256()
    with html.path.open("rb") as stream:  # a piece at a time: the page is not the build's
        for piece in iter(lambda: stream.read(1 << 20), b""):
            page.update(piece)
    return {"wall_s": round(wall, 3), "finish_s": round(finish, 3),
            "promotion_s": round(gate[0], 3) if report.promotions else 0.0,
            "peak_rss_mib": round(_rss_mib(), 1),
            "rss_before_mib": round(before, 1), "rows": len(report.table.positions),
            "report_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "report_bytes": len(text.encode()),
            "html_sha256": page.hexdigest(), "html_bytes": html.path.stat().st_size,
            "terminal_lines": len(lines),
            "cache": vars(use)}


def _timed(module: Any, name: str) -> list[float]:
    """Time spent in ``module.name`` from now on (its callers look it up there)."""
    spent = [0.0]
    function = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    setattr(module, name, timed)
    return spent


def split(out: Path) -> dict[str, float]:
    """Where a build's time goes, piece by piece (a second build, as the first)."""
    from pytest_wfbench.aggregate import summarize_table
    from pytest_wfbench.heap import collector_paused
    from pytest_wfbench.outdir import provenance_of, read_json
    from pytest_wfbench.readback import results_table
    from pytest_wfbench.render.html import overview_of, prepare_html, read_artifacts, render_html
    from pytest_wfbench.render.html.page import DISTRIBUTIONS
    from pytest_wfbench.render.sections import overhead_section_of, trust_sections_of
    from pytest_wfbench.report import render_markdown
    from pytest_wfbench.review.quality import review_quality_section

    prepare_html()

    with collector_paused():
        marks = [time.perf_counter()]
        record = read_json(out / "sweep.json") or {}
        table = results_table(out, out / "results.jsonl", record.get("sweep_id"))
        marks.append(time.perf_counter())
        summary = summarize_table(table, table.agent(),
                                  (record.get("settings") or {}).get("baseline_arm"))
        marks.append(time.perf_counter())
        sections = [*trust_sections_of(table, table.positions),
                    *overhead_section_of(table, table.positions),
                    *review_quality_section(table.kept_rows())]
        facts = provenance_of(table, table.positions, record)
        marks.append(time.perf_counter())
        markdown = render_markdown(summary, facts, sections)
        marks.append(time.perf_counter())
        overview = overview_of(table, [name for name, _ in DISTRIBUTIONS])
        marks.append(time.perf_counter())
        render_html(summary, overview.detailed, facts, sections=sections,
                    read_artifact=read_artifacts(out), overview=overview, markdown=markdown)
        marks.append(time.perf_counter())
    names = ("read_s", "aggregate_s", "sections_s", "render_s", "html_overview_s", "html_page_s")
    return {name: round(b - a, 3) for name, a, b in zip(names, marks, marks[1:], strict=False)}


def floors(out: Path) -> dict[str, Any]:
    from pytest_wfbench.rowcache import line_key
    from pytest_wfbench.store import result_lines

    path = out / "results.jsonl"
    start = time.perf_counter()
    lines = sum(1 for line in result_lines(path) if line)
    split_s = time.perf_counter() - start
    start = time.perf_counter()
    for line in result_lines(path):
        if line:
            line_key(line)
    digest_s = time.perf_counter() - start
    start = time.perf_counter()
    for line in result_lines(path):
        if line:
            json.loads(line)
    parse_s = time.perf_counter() - start
    return {"lines": lines, "bytes": path.stat().st_size, "read_split_s": round(split_s, 3),
            "read_digest_s": round(digest_s, 3), "read_parse_s": round(parse_s, 3)}


def _clean_environment() -> dict[str, str]:
    """A measurement's environment: none of the caller's, except numpy's CPU
    dispatch setting (``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"``
    measures, on an AVX-512 host, what an AVX2 host would see)."""
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    for name in ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _measure(mode: str, out: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.aggregation", mode, str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                          env=_clean_environment())
    if done.returncode != 0:
        raise RuntimeError(f"aggregation {mode} of {out} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def writer_cache(out: Path) -> None:
    """The row cache and the line log as the rows' writers leave them
    (pytest_wfbench.store): the log's entries as theirs, but for the file's
    states after the writes before the last (which no report reads); the
    cache's frames as theirs, the rows of the last batch added as the writer's
    session ends."""
    from pytest_wfbench.linelog import LOG, log_lines, state_of
    from pytest_wfbench.rowcache import CACHE, CachedRows

    (out / CACHE).unlink(missing_ok=True)
    (out / LOG).unlink(missing_ok=True)
    writer = CachedRows(out)
    final = state_of((out / "results.jsonl").stat())
    before = (0, 0, 0, 0, 0)
    with (out / "results.jsonl").open("rb") as results:
        while chunk := results.readlines(1 << 24):
            lines = [line.rstrip(b"\n") for line in chunk]
            for line in lines:
                writer.add([line])
            rows = [json.loads(line) for line in lines]
            log_lines(out, lines, [(row.get("cell_id"), row.get("sweep_id")) for row in rows],
                      before, final)
            before = final
    writer.flush()  # as a writer's session ends


def _median_build(out: Path, cache: bytes, builds: int) -> dict[str, Any]:
    """The median of ``builds`` builds (by wall), each of the out dir with this
    row cache (a build may write the cache): one build on a shared host is one
    sample of its load."""
    from pytest_wfbench.rowcache import CACHE

    runs = []
    for _ in range(max(builds, 1)):
        (out / CACHE).write_bytes(cache)
        runs.append(_measure("build", out))
    runs.sort(key=lambda run: float(run["wall_s"]))
    median = dict(runs[len(runs) // 2])
    median["walls_s"] = [run["wall_s"] for run in runs]
    return median


def measure_shape(scratch: Path, shape: RowsShape, builds: int = 1) -> dict[str, Any]:
    """The out dir of ``shape`` in each state; as a sweep leaves it, the median
    of ``builds`` builds."""
    from pytest_wfbench.linelog import LOG
    from pytest_wfbench.rowcache import CACHE

    out = write_outdir(scratch / f"rows-{shape.key}", shape)
    (out / SELECTED).write_text(json.dumps(cell_ids(shape)))
    writer_cache(out)
    writers = (out / CACHE).read_bytes()
    figures: dict[str, Any] = {"shape": shape.label, "rows": shape.rows,
                               "results_bytes": (out / "results.jsonl").stat().st_size,
                               "writer_cache_bytes": len(writers)}
    figures["session_end"] = _median_build(out, writers, builds)
    if shape.candidate:  # the gate's cost, as a sweep ends: the other states are the same
        return figures
    (out / CACHE).write_bytes(writers)
    figures["session_end_split"] = _measure("split", out)
    log = (out / LOG).read_bytes()
    (out / LOG).unlink()
    (out / CACHE).write_bytes(writers)
    # No log: the compaction reads every line and writes the log, the report uses it.
    figures["session_end_unlogged"] = _measure("build", out)
    (out / LOG).write_bytes(log)
    (out / CACHE).unlink()
    figures["cold"] = _measure("build", out)
    figures["warm"] = _measure("build", out)
    figures["warm_cache_bytes"] = (out / CACHE).stat().st_size
    figures["floors"] = _measure("floors", out)
    states = ("session_end", "session_end_unlogged", "cold", "warm")
    digests = {(figures[k]["report_sha256"], figures[k]["html_sha256"]) for k in states}
    figures["same_report"] = len(digests) == 1
    if len(digests) != 1:
        raise RuntimeError(f"the report of {out} differs between cache states: {digests}")
    return figures


def aggregation_targets(shapes: dict[str, dict[str, Any]], rows: int) -> list[Target]:
    targets = []
    for key, data in shapes.items():
        if data["rows"] != rows:
            continue
        for state in ("session_end", "cold"):
            if state not in data:
                continue
            run = data[state]
            cold = state == "cold"
            targets.append(Target(
                key=f"aggregate_{key}_{state}",
                target=f"aggregation + report (md, html) of {rows:,} rows <= 2 s "
                       f"({data['shape']}, {state.replace('_', ' ')})",
                value=run["wall_s"], limit=2.0, unit="s", informational=cold,
                measured=("no row cache (a report by another version of the harness, or "
                          "a deleted cache): every line parsed, and json.loads alone takes "
                          f"{data['floors']['read_parse_s']:.2f} s; " if cold else "")
                + _builds(run) + _unlogged(data, state) + _finish(run)
                + f"write_report {run['wall_s'] - run.get('finish_s', 0.0):.2f} s"
                  f"{_split(data, state)}, report.html {run['html_bytes'] / 2**20:.1f} MiB, "
                  "peak RSS "
                  f"{run['peak_rss_mib']:.0f} MiB ({run['rss_before_mib']:.0f} MiB "
                  "before)" + _floors(data) + _gate(run)))
    growth = memory_per_row(shapes)
    return [*targets, *([growth] if growth is not None else [])]


def memory_per_row(shapes: dict[str, dict[str, Any]]) -> Target | None:
    """What a report's own peak memory grows by, per row: between the two shapes
    of the most and the fewest rows with the same arms and runs (more tasks),
    the growth of its peak RSS over the RSS before it began (the interpreter,
    the page's template and the selected cells' list, which the controller
    holds whether it reports or not), against the figures' own inputs (each
    row's numbers, flags and stage times, as the table's columns hold them:
    exact medians need every value)."""
    from pytest_wfbench.table.schema import FLAGS, NUMBERS

    by_runs: dict[str, list[dict[str, Any]]] = {}
    for key, data in shapes.items():
        by_runs.setdefault(key.split("x", 1)[1], []).append(data)
    pairs = [sorted(found, key=lambda data: int(data["rows"])) for found in by_runs.values()
             if len(found) > 1]
    if not pairs:
        return None
    small, large = pairs[0][0], pairs[0][-1]
    rows = int(large["rows"]) - int(small["rows"])
    peaks = [data["session_end"]["peak_rss_mib"] for data in (small, large)]
    befores = [data["session_end"].get("rss_before_mib", 0.0) for data in (small, large)]
    grown = (peaks[1] - befores[1]) - (peaks[0] - befores[0])
    stages = len(STAGES)
    floor = ((len(NUMBERS) + stages) * 8 + len(FLAGS)) / 1024
    return Target(
        key="aggregate_memory_per_row", value=grown * 1024 / rows, limit=floor, unit="KB",
        informational=True,
        target=f"peak memory of the report per row ({small['shape']} -> {large['shape']})",
        measured=f"peak RSS {peaks[0]:.0f} -> {peaks[1]:.0f} MiB, of which the report's "
                 f"own (the peak less the RSS before it began) {peaks[0] - befores[0]:.0f} -> "
                 f"{peaks[1] - befores[1]:.0f} MiB, over {rows:,} more rows "
                 f"({(peaks[1] - peaks[0]) * 1024 / rows:.2f} KB a row with the RSS before); "
                 f"the limit is the figures' own inputs, {len(NUMBERS)} numbers, "
                 f"{len(FLAGS)} flags and {stages} stage times a row")


def _builds(run: dict[str, Any]) -> str:
    walls = run.get("walls_s") or []
    if len(walls) < 2:
        return ""
    return f"median of {len(walls)} builds ({', '.join(f'{w:.2f}' for w in walls)} s); "


def _floors(data: dict[str, Any]) -> str:
    floors = data.get("floors")
    if not floors:
        return ""
    return (f"; reading floor: split+digest {floors['read_digest_s']:.2f} s, json.loads of "
            f"every line {floors['read_parse_s']:.2f} s")


def _gate(run: dict[str, Any]) -> str:
    if not run.get("promotion_s"):
        return ""
    return (f"; the promotion gate (a bootstrap of 2,000 resamples of each task's runs, "
            f"both arms) {run['promotion_s']:.2f} s")


def _finish(run: dict[str, Any]) -> str:
    if "finish_s" not in run:
        return ""
    return f"the selected cells without a row and the compaction {run['finish_s']:.2f} s, "


def _unlogged(data: dict[str, Any], state: str) -> str:
    unlogged = data.get(f"{state}_unlogged")
    if not unlogged:
        return ""
    return (f"without the line log (the compaction reading and digesting every line, and "
            f"writing the log) {unlogged['wall_s']:.2f} s; ")


def _split(data: dict[str, Any], state: str) -> str:
    pieces = data.get(f"{state}_split")
    if not pieces:
        return ""
    return " (" + ", ".join(f"{name.removesuffix('_s')} {value:.2f} s"
                            for name, value in pieces.items()) + ")"


def main(argv: list[str]) -> int:
    mode, out = argv[0], Path(argv[1])
    measure = {"build": build, "split": split, "floors": floors}[mode]
    print(json.dumps(measure(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
