"""What an out dir holds, and its report made from it alone.

A sweep's out dir is its whole record: ``results.jsonl`` (one row per cell),
``sweep.json`` (its id, settings and sessions, each with its state),
``environment.json`` and ``artifacts/``. The report files (``report.md``, and
``promotion.json`` when candidates ran) are rendered from those files only, so
``wfbench report DIR`` writes them again byte for byte, and a merge of shards
renders the report one machine would have.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_wfbench.aggregate import Summary, summarize_table
from pytest_wfbench.aggregate.select import (
    equal,
    flag_at,
    picked,
    positions_of,
)
from pytest_wfbench.audit.report import DEFAULT_MIN_KILL_RATE, audit_section
from pytest_wfbench.decisions.evidence import promotion_evidence
from pytest_wfbench.heap import collector_paused, columns_growing, freeze_long_lived
from pytest_wfbench.lanes.report import render_lanes
from pytest_wfbench.readback import results_table
from pytest_wfbench.render.html import HtmlReport, html_available, large, write_html_report
from pytest_wfbench.render.sections import overhead_section_of, trust_sections_of
from pytest_wfbench.report import render_markdown
from pytest_wfbench.review.quality import review_quality_section
from pytest_wfbench.rowcache import CacheUse
from pytest_wfbench.store import (
    ABORTED,
    BUDGET,
    CANCELLED,
    COMPLETE,
    ENVIRONMENT,
    REPORT,
    RESULTS,
    RUNNING,
    SWEEP,
    ResultsStore,
    iter_rows,
    sweep_state,
)
from pytest_wfbench.table import Table, gather

PROMOTION = "promotion.json"
STATE_LINES = {
    CANCELLED: "cancelled: partial evidence",
    ABORTED: "aborted: partial evidence",
    BUDGET: "stopped at the cost budget: partial evidence",
    RUNNING: "running (or its process died): partial evidence",
}


@dataclass
class OutDirReport:
    """Everything a report is made of, read from an out dir."""

    table: Table
    """The last row of each cell (its ``positions``), as columns, with the rows
    the report lists kept whole (pytest_wfbench.table)."""
    record: dict[str, Any]
    environment: dict[str, Any] | None
    summary: Summary
    provenance: dict[str, Any] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)
    promotions: list[dict[str, Any]] = field(default_factory=list)
    audit_rows: list[dict[str, Any]] = field(default_factory=list)
    """What the audit read (:func:`audit_rows`), made once for the report and the
    terminal."""
    files: dict[str, str] = field(default_factory=dict)
    """File name -> text, to be written (redacted) into the out dir."""

    @property
    def state(self) -> str:
        return sweep_state(self.record)

    @property
    def kept_rows(self) -> list[dict[str, Any]]:
        """The rows the report lists (and the audit's and review's), whole or as
        their projections, in the order of the cells."""
        return self.table.kept_rows()

    def rows(self) -> list[dict[str, Any]]:
        """Every row's projection (pytest_wfbench.projection), made again from the
        table: for readers of rows, at a cost per row."""
        return self.table.rows()


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def latest_per_cell(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each cell, in the order cells first appeared."""
    latest: dict[str, dict[str, Any]] = {}
    for row in rows:
        latest[str(row.get("cell_id"))] = row
    return list(latest.values())


def state_reason(record: dict[str, Any]) -> str | None:
    sessions = record.get("sessions") or []
    return sessions[-1].get("reason") if sessions else None


def provenance(rows: list[dict[str, Any]], record: dict[str, Any]) -> dict[str, Any]:
    """The report's closing facts: what ran, how, and what was left out."""
    table = Table.of(rows)
    return provenance_of(table, table.positions, record)


def provenance_of(table: Table, positions: Sequence[int],
                  record: dict[str, Any]) -> dict[str, Any]:
    """:func:`provenance` of these rows of the table."""
    statuses, tasks = gather(table.obj("status"), positions), gather(table.obj("task"), positions)
    ran_rows = equal(statuses, "ran")
    ran_tasks = set(picked(tasks, ran_rows))
    skipped_tasks = set(picked(tasks, equal(statuses, "skipped")))
    cell_id, error_kind = table.obj("cell_id"), table.obj("error_kind")
    excluded = ran_rows & (flag_at(table, "counted", positions_of(positions)) != 1)
    notes = {f"{cell_id[i]}: {error_kind[i]}" for i in picked(positions, excluded)}
    models = set(filter(None, gather(table.obj("model"), positions)))
    efforts = set(filter(None, gather(table.obj("effort"), positions)))
    arms = set(gather(table.obj("arm"), positions))
    ran = sorted(ran_tasks)
    skipped = sorted(skipped_tasks - ran_tasks)
    settings = record.get("settings") or {}
    state = sweep_state(record)
    facts: dict[str, Any] = {
        "sweep_id": record.get("sweep_id"),
        "suite": record.get("suite"),
        "state": STATE_LINES.get(state, state) + (
            f" ({state_reason(record)})" if state != COMPLETE and state_reason(record) else ""),
        "model": sorted(models) or None,
        "effort": sorted(efforts) or None,
        "selected tasks": ran,
        "skipped tasks": skipped,
        "arms": sorted(arms),
        "runs per cell": settings.get("runs"),
        "harness version": record.get("harness_version"),
        "sandbox_backend": settings.get("sandbox_backend"),
        "clones": settings.get("clone"),
        "task files": [entry.get("path") for entry in record.get("task_files") or []],
        "out dir": record.get("out_dir"),
        "partial-evidence notes": sorted(notes) or None,
    }
    shard = record.get("shard")
    if isinstance(shard, dict) and shard.get("label"):
        # One shard's out dir is part of a sweep by design; `wfbench merge` joins them.
        facts["shard"] = (f"{shard['label']} of sweep {record.get('sweep_id')} (this out dir "
                          "holds this shard's tasks only; wfbench merge joins the shards)")
    return facts


def plan_section(record: dict[str, Any]) -> list[str]:
    """What resume and reuse decided, per session: rows kept or reused, and why
    the other cells ran (again)."""
    lines: list[str] = []
    for index, session in enumerate(record.get("sessions") or [], start=1):
        plan = session.get("plan") or {}
        reasons = plan.get("reasons") or {}
        if not (plan.get("reused") or reasons or plan.get("canaries")):
            continue  # rows kept as they were say nothing new
        lines += [f"### Session {index}", "",
                  f"- rows kept from earlier sessions: {plan.get('kept', 0)}",
                  f"- rows reused from {plan.get('reuse_dir') or 'an earlier sweep'}: "
                  f"{plan.get('reused', 0)}"]
        for arm, cell in sorted((plan.get("canaries") or {}).items()):
            lines.append(f"- canary of `{arm}` (paid for again): `{cell}`")
        if reasons:
            lines += ["", "| cell | why it ran |", "|---|---|"]
            lines += [f"| {cell} | {reason} |" for cell, reason in sorted(reasons.items())]
        lines.append("")
    return ["## Resumed and reused rows", "", *lines] if lines else []


def build_report(out_dir: Path, *, baseline_arm: str | None = None,
                 use: CacheUse | None = None) -> OutDirReport:
    """The report of the sweep in ``out_dir``, from its files alone. Rows are
    read one at a time and kept as their projections (listed rows whole: see
    :mod:`pytest_wfbench.projection`), through the out dir's row cache
    (:mod:`pytest_wfbench.rowcache`, which ``use`` reports on)."""
    with collector_paused():  # rows hold no cycle: see pytest_wfbench.heap
        report = _build_report(out_dir, baseline_arm, use)
        freeze_long_lived(len(report.table.positions))  # a report lives as long as its process
        return report


def audit_rows(table: Table) -> list[dict[str, Any]]:
    """What the audit reads (audit.report): every row, when an audit arm ran
    (its rows are kept whole); else none, and the audit says nothing."""
    if any((row.get("audit") or {}).get("role") for row in table.kept_rows()):
        return table.rows()
    return []


def _build_report(out_dir: Path, baseline_arm: str | None, use: CacheUse | None) -> OutDirReport:
    record = read_json(out_dir / SWEEP) or {}
    with columns_growing():
        table = results_table(out_dir, out_dir / RESULTS, record.get("sweep_id"), use)
    environment = read_json(out_dir / ENVIRONMENT)
    settings = record.get("settings") or {}
    baseline = baseline_arm if baseline_arm is not None else settings.get("baseline_arm")
    agent = table.agent()
    summary = summarize_table(table, agent, baseline)
    kept = table.kept_rows()
    review = review_quality_section(kept)  # review rows are kept
    audited = audit_rows(table)
    audit = audit_section(audited,
                          float(settings.get("min_kill_rate", DEFAULT_MIN_KILL_RATE)))
    sections = [*plan_section(record), *audit, *(["", ] if audit else []),
                *trust_sections_of(table, table.positions),
                *overhead_section_of(table, table.positions),
                *(["", *review] if review else []),
                *render_lanes(kept, environment)]  # lane rows are kept whole
    facts = provenance_of(table, table.positions, record)
    promotions = promotion_evidence(table, agent, summary, record)
    report = OutDirReport(table=table, record=record, environment=environment,
                          summary=summary, provenance=facts, sections=sections,
                          promotions=promotions, audit_rows=audited)
    report.files[REPORT] = render_markdown(summary, facts, sections, promotions)
    if promotions:
        report.files[PROMOTION] = json.dumps(
            {"schema_version": 1, "sweep_id": record.get("sweep_id"), "candidates": promotions},
            indent=2, sort_keys=True, allow_nan=False) + "\n"
    return report


def write_report(store: ResultsStore, *, baseline_arm: str | None = None,
                 use: CacheUse | None = None) -> tuple[OutDirReport, HtmlReport]:
    """Render the out dir's report and write its files (redacted): report.md,
    and report.html when Jinja2 is installed."""
    report = build_report(store.out_dir, baseline_arm=baseline_arm, use=use)
    for name, text in report.files.items():
        store.write_text(name, text)
    if not html_available():
        return report, write_html_report(store, report.summary, [], report.provenance)
    with collector_paused():  # the report's table is a large heap: see pytest_wfbench.heap
        html = _write_html(store, report)
        freeze_long_lived(len(report.table.positions))
        return report, html


def _write_html(store: ResultsStore, report: OutDirReport) -> HtmlReport:
    table = None
    rows: list[dict[str, Any]] = []
    if large(len(report.table.positions)):
        # Every cell in the grid and plots, from the table; the listed cells it
        # details whole (Table.whole: their lines read again), no other row.
        table = report.table
    else:
        # The page shows every cell whole (stages, steps, transcripts): its rows
        # are read again, in full.
        rows = latest_per_cell(iter_rows(store.results, report.record.get("sweep_id")))
    return write_html_report(store, report.summary, rows, report.provenance,
                             sections=report.sections, promotions=report.promotions,
                             table=table, markdown=report.files[REPORT])


def partial_state(out_dir: Path) -> str | None:
    """The sweep's state when its evidence is partial (cancelled, aborted, the
    budget), with the reason; None when it is complete."""
    record = read_json(out_dir / SWEEP) or {}
    state = sweep_state(record)
    if state == COMPLETE:
        return None
    reason = state_reason(record)
    return STATE_LINES.get(state, state) + (f" ({reason})" if reason else "")
