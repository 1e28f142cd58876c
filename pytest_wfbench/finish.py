"""The controller's end of a sweep: a row for every selected cell that has
none, the session's state in sweep.json, the report rendered from the out dir
(:mod:`.outdir`), the work dir removed; and the terminal summary's lines."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_wfbench.aggregate.spend import spend_lines
from pytest_wfbench.audit.report import audit_tasks
from pytest_wfbench.cells import AnyCell, ScenarioCell
from pytest_wfbench.control.start import close_session
from pytest_wfbench.control.stop import ABORTED, CANCELLED, request_stop, stop_of
from pytest_wfbench.lanes.report import render_lanes_terminal
from pytest_wfbench.outdir import (
    OutDirReport,
    partial_state,
    write_report,
)
from pytest_wfbench.render.html import HtmlReport, prepare_html
from pytest_wfbench.report import (
    harness_error_lines,
    promotion_lines,
    render_terminal,
    suspicious_lines,
    unusable_lines,
)
from pytest_wfbench.row import CellRecord
from pytest_wfbench.store import COMPLETE, REPORT, cells_without_rows
from pytest_wfbench.sweep import Sweep

NOT_RUN = "not run: the sweep stopped before this cell"
Markup = dict[str, bool]


@dataclass(frozen=True)
class Finished:
    report: OutDirReport
    html: HtmlReport


def prepare_report() -> None:
    """What the report can do before the last row is in: compile report.html's
    template. Best effort: the controller calls it while its workers run, and a
    failure here is met again, and reported, when the report is written."""
    with contextlib.suppress(Exception):
        prepare_html()


def record_unrun_cells(sweep: Sweep, selected: dict[str, str], failed: set[str]) -> None:
    """Cells selected but without a row of this session (the sweep stopped, or
    the worker running one died): never silent absence."""
    unrecorded = cells_without_rows(sweep.store.out_dir, sweep.sweep_id, selected,
                                    sweep.results_offset)
    planned = sweep.plan().planned
    stop = stop_of(sweep.identity.work_dir)
    completed = sweep.completed_sessions()
    by_id = sweep.all_cells()
    pending: list[tuple[AnyCell, CellRecord]] = []
    for cell_id in unrecorded:
        nodeid = selected[cell_id]
        if cell_id in planned or cell_id not in by_id:
            continue
        cell = by_id[cell_id]
        if nodeid in failed:
            record = CellRecord(cell_id=cell_id, started=0.0)
            if isinstance(cell, ScenarioCell):
                record.lane = "tool-cost"
            if cell_id in completed:
                # Judging what the arm left killed its process: counted.
                record.session_completed = True
                record.fail("evidence-tampered", "the process judging this cell died (e.g. an "
                            "xdist worker was killed) after its session had completed")
            else:
                record.fail("infra-error", "the process running this cell died (e.g. an xdist "
                            "worker crashed) before it recorded a row")
        else:
            record = sweep.skip_record(cell, stop.skip_reason if stop else NOT_RUN)
        pending.append((cell, record))
    sweep.record_rows(pending)


def finish_sweep(sweep: Sweep, session: pytest.Session, selected: dict[str, str],
                 failed: set[str]) -> Finished:
    record_unrun_cells(sweep, selected, failed)
    sweep.store.flush_cache()  # the rows this process wrote (no worker, or the unrun cells)
    sweep.store.compact()
    stop = stop_of(sweep.identity.work_dir)
    if stop is None and session.exitstatus == pytest.ExitCode.INTERRUPTED:
        stop = request_stop(sweep.identity.work_dir, CANCELLED, "the sweep was interrupted")
    close_session(sweep, stop.kind if stop is not None else COMPLETE,
                  stop.reason if stop is not None else None,
                  stop.at if stop is not None else None)
    if stop is not None and stop.kind == ABORTED and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    report, html = write_report(sweep.store, baseline_arm=sweep.options.baseline_arm)
    # An UNUSABLE arm has failures, each of them a pytest error: the sweep already
    # exits non-zero, and the terminal names the arm.
    sweep.finish()
    return Finished(report, html)


def summary_lines(sweep: Sweep, finished: Finished) -> list[tuple[str, Markup]]:
    """The terminal summary, redacted: the arms, then what must stand out."""
    return terminal_lines(finished, sweep.redactor.clean, work_dir=sweep.identity.work_dir,
                          results=sweep.store.results, min_kill_rate=sweep.options.min_kill_rate)


def terminal_lines(finished: Finished, redact: Callable[[str], str], *, work_dir: Path,
                   results: Path, min_kill_rate: float) -> list[tuple[str, Markup]]:
    """:func:`summary_lines` of a sweep's finished report (its out dir is the
    results file's folder)."""
    summary, rows = finished.report.summary, finished.report.kept_rows  # what it lists
    out: list[tuple[str, Markup]] = []

    def say(line: str, **markup: bool) -> None:
        out.append((redact(line), markup))

    audit_arms = {str(r["arm"]) for r in rows if (r.get("audit") or {}).get("role")}
    for line in [*(render_terminal(summary, audit_arms) if summary.rows else []),
                 *render_lanes_terminal(sorted(rows, key=lambda r: str(r.get("cell_id"))))]:
        say(line)
    for line in [*unusable_lines(summary), *harness_error_lines(rows)]:
        say(line, red=True, bold=True)
    for line in suspicious_lines(rows):
        say(line, yellow=True)
    unrun = [str(r.get("cell_id")) for r in rows
             if str(r.get("skip_reason") or "").startswith("not run")]
    if unrun:
        say(f"wfbench: {len(unrun)} selected cells did not run (rows say so): "
            f"{', '.join(unrun[:10])}{' ...' if len(unrun) > 10 else ''}", yellow=True)
    kept = [(r.get("cell_id"), r.get("kept_workspace")) for r in rows if r.get("kept_workspace")]
    if kept:
        say(f"wfbench: workspaces kept (work dir {work_dir}):")
        for cell_id, path in kept:
            say(f"  {cell_id}: {path}")
    for line in spend_lines(finished.report.table):
        say(line)
    for line in promotion_lines(finished.report.promotions):
        say(line, bold=True)
    for audit in audit_tasks(finished.report.audit_rows):
        verdicts = audit.verdicts(min_kill_rate)
        say(f"wfbench audit: {audit.task}: {'; '.join(verdicts)}",
            green=verdicts == ["sound"], red=verdicts != ["sound"])
    state = partial_state(results.parent)
    if state is not None:
        say(f"wfbench: {state}", yellow=True, bold=True)
    say(f"wfbench report: {results.parent / REPORT}")
    html = finished.html
    say(html.line, red=html.failed, yellow=html.path is None and not html.failed)
    say(f"wfbench rows:   {results}")
    return out

