"""The page's model: the figures, charts, grids and cells of report.html from
a summary, the sweep's rows and its provenance. Pure: no I/O but through the
artifact reader it is given, no clock, stable order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_wfbench.aggregate import ArmSummary, Row, Summary, metric, row_order
from pytest_wfbench.lanes.medians import by_transport, step_medians, total_medians
from pytest_wfbench.render.format import fmt, fmt_cost, fmt_rate_interval
from pytest_wfbench.render.html.cell import OUTCOMES, CellView, ReadArtifact, cell_view, outcome
from pytest_wfbench.render.html.charts import (
    ArmPoint,
    Dot,
    bar_chart,
    colours,
    resolve_chart,
    strip_chart,
)

SPEND = (("cost_usd", "median cost (USD)"), ("tokens", "median tokens"),
         ("estimated_tokens", "median est. tokens"), ("session_duration_s", "median session s"))
DISTRIBUTIONS = (("cost_usd", "cost (USD)"), ("tokens", "tokens"),
                 ("estimated_tokens", "est. tokens (scripted arms)"),
                 ("session_duration_s", "session time (s)"))


@dataclass(frozen=True)
class ArmView:
    arm: str
    health: str
    health_line: str
    resolved: str
    interval: str
    rate: float | None
    facts: list[tuple[str, str]]


@dataclass(frozen=True)
class Square:
    cell_id: str
    run: int
    outcome: str
    title: str


@dataclass(frozen=True)
class Grid:
    title: str
    row_label: str
    column_label: str
    columns: list[str]
    rows: list[tuple[str, list[tuple[str, list[Square]]]]]


@dataclass(frozen=True)
class Chart:
    title: str
    svg: str
    """Empty when there is nothing to draw: then ``note`` says why."""
    note: str = ""


@dataclass(frozen=True)
class Page:
    suite: str
    sweep_id: str
    banners: list[str]
    arms: list[ArmView]
    charts: list[Chart]
    """Resolve rate against spend, then the distributions that have something to draw."""
    chart_notes: list[str]
    """Distributions with nothing to draw, and why."""
    grids: list[Grid]
    lanes: list[Chart]
    cells: list[CellView]
    filters: list[tuple[str, str, list[tuple[str, str]]]]
    """(attribute, label, [(value, label)]) per filter."""
    provenance: list[tuple[str, str]]
    counts: list[tuple[str, str, int]]
    """(outcome, label, cells) over the whole sweep."""


def _arm_view(arm: ArmSummary) -> ArmView:
    m = arm.medians
    return ArmView(
        arm=arm.arm, health=arm.health.status.value, health_line=arm.health.describe(),
        resolved=f"{arm.resolved}/{arm.valid}", interval=fmt_rate_interval(arm.resolve_interval),
        rate=arm.resolved / arm.valid if arm.valid else None,
        facts=[("tasks", str(arm.tasks)), ("excluded", str(len(arm.excluded))),
               ("skipped", str(arm.skipped)), ("tokens", fmt(m["tokens"])),
               ("est. tokens", fmt(m["estimated_tokens"])), ("cost", fmt_cost(m["cost_usd"])),
               ("session s", fmt(m["session_duration_s"], 2)),
               ("cell s", fmt(m["duration_s"], 2)),
               ("overhead s", fmt(m["harness_overhead_s"], 2)),
               ("turns", fmt(m["num_turns"]))])


def _spend_metric(summary: Summary) -> tuple[str, str]:
    """What the resolve chart puts on x: cost where any arm measured it, else
    tokens, estimated tokens, or session time, whichever some arm spent."""
    for name, label in SPEND:
        values = [a.medians.get(name) for a in summary.arms]
        if any(v is not None and v > 0 for v in values) or name == SPEND[-1][0]:
            return name, label
    return SPEND[-1]


def _resolve_chart(summary: Summary, colour: dict[str, str]) -> Chart:
    name, label = _spend_metric(summary)
    points, left_out = [], []
    for arm in summary.arms:
        x = arm.medians.get(name)
        if arm.resolve_interval is None or x is None:
            left_out.append(arm.arm)
            continue
        rate = arm.resolved / arm.valid
        points.append(ArmPoint(
            arm=arm.arm, x=float(x), rate=rate, low=arm.resolve_interval.low,
            high=arm.resolve_interval.high,
            label=f"{arm.arm}: {arm.resolved}/{arm.valid} resolved "
                  f"({fmt_rate_interval(arm.resolve_interval)}), {label} {fmt(x, 4)}"))
    confidence = f"{summary.settings.confidence:.0%}"
    title = f"Resolve rate ({confidence} Wilson interval) against {label}, per arm"
    note = (f"Not plotted (no counted run, or no {label}): {', '.join(left_out)}."
            if left_out else "")
    if not points:
        return Chart(title, "", note or "No arm has counted runs.")
    return Chart(title, resolve_chart(points, label, colour), note)


def _distributions(rows: Sequence[Row], arms: list[str], colour: dict[str, str]) -> list[Chart]:
    counted = [r for r in rows if r.get("status") == "ran" and r.get("counted")]
    charts = []
    for name, label in DISTRIBUTIONS:
        groups = []
        for arm in arms:
            dots = []
            for row in (r for r in counted if r.get("arm") == arm):
                value = metric(row, name)
                if value is not None:
                    dots.append(Dot(value, f"{row.get('cell_id')}: {fmt(value, 4)} "
                                           f"({outcome(row)})", outcome(row)))
            groups.append((arm, dots))
        title = f"{label[0].upper()}{label[1:]} per counted run"
        if not any(d.value > 0 for _, dots in groups for d in dots):
            if name == "estimated_tokens":
                continue
            why = ("no counted run measured it (scripted arms' cost is n/a, never zero)"
                   if name == "cost_usd" else "every counted run's is 0 (scripted arms spend "
                   "no model tokens)" if name == "tokens" else "no counted run has it")
            charts.append(Chart(title, "", f"nothing to draw: {why}."))
            continue
        charts.append(Chart(title, strip_chart([g for g in groups if g[1]], label, colour),
                            "Filled: resolved; hollow: not resolved. The bar is the median."))
    return charts


def _grid(title: str, row_label: str, column_label: str, rows: Sequence[Row]) -> Grid:
    keys = sorted({str(r.get("task")) for r in rows})
    columns = sorted({str(r.get("arm")) for r in rows})
    squares: dict[tuple[str, str], list[Square]] = {}
    for row in sorted(rows, key=row_order):
        kind = outcome(row)
        why = row.get("error_kind") or row.get("skip_reason") or ""
        squares.setdefault((str(row.get("task")), str(row.get("arm"))), []).append(Square(
            cell_id=str(row.get("cell_id")), run=int(row.get("run") or 0), outcome=kind,
            title=f"{row.get('cell_id')}: {dict(OUTCOMES)[kind]}"
                  + (f" ({str(why)[:200]})" if why else "")))
    return Grid(title, row_label, column_label, columns,
                [(key, [(column, squares.get((key, column), [])) for column in columns])
                 for key in keys])


def _lanes(rows: Sequence[Row]) -> list[Chart]:
    charts = []
    for scenario in sorted({str(r.get("task")) for r in rows}):
        mine = [r for r in rows if r.get("task") == scenario]
        skipped = sorted({f"{r.get('arm')} ({r.get('skip_reason')})" for r in mine
                          if r.get("status") == "skipped"})
        groups = by_transport(mine)
        for transport, group in groups.items():
            order, medians = step_medians(group)
            subjects = list(medians)
            values = {(op, subject): found.elapsed_ms for subject in subjects
                      for op, found in medians[subject].items()}
            totals = total_medians(group)
            caption = "Agent-facing totals (medians): " + ", ".join(
                f"{s} {fmt(totals[s]['elapsed_ms'])} ms over {int(totals[s]['runs'] or 0)} runs"
                for s in subjects) + "."
            if skipped:
                caption += " Skipped: " + "; ".join(skipped) + "."
            charts.append(Chart(f"{scenario} on {transport}: median ms per step",
                                bar_chart(order, subjects, values, "median elapsed ms",
                                          colours(subjects)), caption))
        if not groups:
            charts.append(Chart(f"{scenario}: no counted run", "",
                                "Skipped: " + "; ".join(skipped) if skipped else ""))
    return charts


def build_page(summary: Summary, rows: Sequence[Row], provenance: Mapping[str, Any],
               read: ReadArtifact) -> Page:
    """The page's model (see :class:`Page`)."""
    ordered = sorted(rows, key=lambda r: (str(r.get("lane") or "agent") != "agent",
                                          *row_order(r)))
    agent = [r for r in ordered if (r.get("lane") or "agent") == "agent"]
    lane = [r for r in ordered if r.get("lane") == "tool-cost"]
    arms = [a.arm for a in summary.arms]
    colour = colours(arms)
    banners = []
    if provenance.get("sandbox_backend") not in (None, "bubblewrap"):
        banners.append("Cells ran WITHOUT a sandbox (--wfbench-unsafe-no-sandbox): nothing kept "
                       "the arms from the hidden oracle or the host.")
    if summary.unusable:
        banners.append(f"UNUSABLE arms: {', '.join(summary.unusable)}: every fresh attempt "
                       "failed (evidence failures included); the sweep exits non-zero.")
    grids = []
    if agent:
        grids.append(_grid("Tasks and arms", "task", "arm", agent))
    if lane:
        grids.append(_grid("Tool-cost scenarios and subjects", "scenario", "subject", lane))
    outcomes = [outcome(r) for r in ordered]
    charts = [_resolve_chart(summary, colour), *_distributions(agent, arms, colour)] \
        if summary.arms else []
    return Page(
        suite=str(provenance.get("suite") or "sweep"), sweep_id=str(provenance.get("sweep_id")),
        banners=banners, arms=[_arm_view(a) for a in summary.arms],
        charts=[c for c in charts if c.svg], chart_notes=[
            f"{c.title}: {c.note}" for c in charts if not c.svg],
        grids=grids, lanes=_lanes(lane),
        cells=[cell_view(r, read) for r in ordered],
        filters=[("task", "task", [(t, t) for t in sorted({str(r.get("task")) for r in ordered})]),
                 ("arm", "arm", [(a, a) for a in sorted({str(r.get("arm")) for r in ordered})]),
                 ("outcome", "outcome", [(k, label) for k, label in OUTCOMES if k in outcomes])],
        provenance=[(str(k), _plain(v)) for k, v in provenance.items()],
        counts=[(k, label, outcomes.count(k)) for k, label in OUTCOMES if k in outcomes],
    )


def _plain(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "none"
    return "n/a" if value is None else str(value)
