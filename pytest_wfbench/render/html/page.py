"""The page's model: the figures, charts, grids and cells of report.html from
a summary, the sweep's rows and its provenance. Pure: no I/O but through the
artifact reader it is given, no clock, stable order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from markupsafe import Markup, escape

from pytest_wfbench.aggregate import ArmSummary, Row, Summary, metric, row_order
from pytest_wfbench.lanes.medians import by_transport, step_medians, total_medians
from pytest_wfbench.render.format import fmt, fmt_cost, fmt_rate_interval
from pytest_wfbench.render.html.cell import (
    OUTCOME_LABELS,
    OUTCOMES,
    CellView,
    ReadArtifact,
    cell_view,
    outcome,
)
from pytest_wfbench.render.html.charts import (
    ArmPoint,
    Dot,
    bar_chart,
    colours,
    resolve_chart,
    strip_chart,
)
from pytest_wfbench.render.html.overview import Overview

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


class Square(NamedTuple):
    href: str
    """The cell's anchor on the page (empty: no cell of the square is shown)."""
    label: str
    """The run's number; in a large sweep's grid, how many runs the square counts."""
    outcome: str
    title: str


@dataclass(frozen=True)
class Grid:
    title: str
    row_label: str
    column_label: str
    columns: list[str]
    rows: list[tuple[str, list[tuple[str, list[Square]]]]]

    @property
    def html_rows(self) -> list[Markup]:
        """Each row of the grid's table, every value escaped (a large sweep's
        grid has tens of thousands of squares: written here, not by a loop of
        the template)."""
        rows = []
        kinds: dict[str, str] = {}  # a few outcomes, each escaped once
        for task, columns in self.rows:
            key = escape(task)
            parts = [f'    <tr class="f" data-task="{key}"><th>{key}</th>\n']
            for name, squares in columns:
                column = escape(name)
                parts.append(f'<td class="f" data-arm="{column}">\n')
                for href, label, state, title in squares:
                    link = f' href="{escape(href)}"' if href else ""
                    kind = kinds.get(state) or kinds.setdefault(state, escape(state))
                    shown = label if label.isdigit() else escape(label)  # digits: as they are
                    parts.append(f'<a class="sq f o-{kind}"{link} title="{escape(title)}"'
                                 f' data-task="{key}" data-arm="{column}" data-outcome="{kind}">'
                                 f"{shown}</a>")
                parts.append("      </td>")
            parts.append("    </tr>\n")
            rows.append(Markup("".join(parts)))
        return rows


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
    """The cells shown whole: every one, or in a large sweep the listed ones
    (:mod:`.overview`)."""
    total: int
    """The sweep's cells."""
    detail_note: str
    """Which cells are shown whole, when not every one is."""
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


def _dots(rows: Sequence[Row], arms: list[str], name: str) -> list[tuple[str, list[Dot]]]:
    counted = [r for r in rows if r.get("status") == "ran" and r.get("counted")]
    groups = []
    for arm in arms:
        dots = []
        for row in (r for r in counted if r.get("arm") == arm):
            value = metric(row, name)
            if value is not None:
                dots.append(Dot(value, f"{row.get('cell_id')}: {fmt(value, 4)} "
                                       f"({outcome(row)})", outcome(row)))
        groups.append((arm, dots))
    return groups


def _spaced_dots(overview: Overview, arms: list[str],
                 name: str) -> tuple[list[tuple[str, list[Dot]]], dict[str, float]]:
    """A large sweep's dots (evenly spaced in order of value) and every run's median."""
    found = overview.spreads.get(name, {})
    groups = [(arm, [Dot(value, f"{cell_id}: {fmt(value, 4)} ({kind})", kind)
                     for value, cell_id, kind in (found[arm].drawn if arm in found else [])])
              for arm in arms]
    return groups, {arm: spread.median for arm, spread in found.items()}


def _distributions(rows: Sequence[Row], arms: list[str], colour: dict[str, str],
                   overview: Overview | None = None) -> list[Chart]:
    charts = []
    for name, label in DISTRIBUTIONS:
        medians: dict[str, float] | None = None
        if overview is None:
            groups = _dots(rows, arms, name)
        else:
            groups, medians = _spaced_dots(overview, arms, name)
        title = f"{label[0].upper()}{label[1:]} per counted run"
        if not any(d.value > 0 for _, dots in groups for d in dots):
            if name == "estimated_tokens":
                continue
            why = ("no counted run measured it (scripted arms' cost is n/a, never zero)"
                   if name == "cost_usd" else "every counted run's is 0 (scripted arms spend "
                   "no model tokens)" if name == "tokens" else "no counted run has it")
            charts.append(Chart(title, "", f"nothing to draw: {why}."))
            continue
        note = "Filled: resolved; hollow: not resolved. The bar is the median."
        if overview is not None:
            note = (f"Filled: resolved; hollow: not resolved. At most {overview.dots_per_arm} runs "
                    "drawn per arm, evenly spaced in order of value; the bar is the median "
                    "of all.")
        charts.append(Chart(title, strip_chart([g for g in groups if g[1]], label, colour,
                                               medians=medians), note))
    return charts


def _grid(title: str, row_label: str, column_label: str, rows: Sequence[Row]) -> Grid:
    keys = sorted({str(r.get("task")) for r in rows})
    columns = sorted({str(r.get("arm")) for r in rows})
    squares: dict[tuple[str, str], list[Square]] = {}
    for row in sorted(rows, key=row_order):
        kind = outcome(row)
        why = row.get("error_kind") or row.get("skip_reason") or ""
        squares.setdefault((str(row.get("task")), str(row.get("arm"))), []).append(Square(
            href=f"#cell-{row.get('cell_id')}", label=str(int(row.get("run") or 0)), outcome=kind,
            title=f"{row.get('cell_id')}: {dict(OUTCOMES)[kind]}"
                  + (f" ({str(why)[:200]})" if why else "")))
    return Grid(title, row_label, column_label, columns,
                [(key, [(column, squares.get((key, column), [])) for column in columns])
                 for key in keys])


def _counted_grid(overview: Overview) -> Grid:
    """A large sweep's grid: per task and arm, a square per outcome with its count."""
    squares: dict[tuple[str, str], list[Square]] = {}
    for found in overview.squares:
        runs = f"{found.count} run{'s' if found.count != 1 else ''}"
        squares.setdefault((found.task, found.arm), []).append(Square(
            href=f"#cell-{found.cell_id}" if found.cell_id else "", label=str(found.count),
            outcome=found.outcome,
            title=f"{found.task} x {found.arm}: {runs} {OUTCOME_LABELS[found.outcome]}"))
    columns = sorted({arm for _, arm in squares})
    return Grid("Tasks and arms (runs per outcome)", "task", "arm", columns,
                [(task, [(arm, squares.get((task, arm), [])) for arm in columns])
                 for task in sorted({task for task, _ in squares})])


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
               read: ReadArtifact, overview: Overview | None = None) -> Page:
    """The page's model (see :class:`Page`): of every row given, or with an
    overview, of a large sweep (``rows`` then its listed rows to show whole)."""
    # The agent's rows, as the report's (Table.agent): lane "agent", or no lane
    # at all (a row whose lane is null is another).
    ordered = sorted(rows, key=lambda r: (r.get("lane", "agent") != "agent", *row_order(r)))
    agent = [r for r in ordered if r.get("lane", "agent") == "agent"]
    lane = [r for r in ordered if r.get("lane") == "tool-cost"]
    if overview is not None:  # every lane row, whether or not it is shown whole
        lane = sorted(overview.lane_rows, key=row_order)
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
    if overview is not None:
        if overview.squares:
            grids.append(_counted_grid(overview))
    elif agent:
        grids.append(_grid("Tasks and arms", "task", "arm", agent))
    if lane:
        grids.append(_grid("Tool-cost scenarios and subjects", "scenario", "subject", lane))
    counts = Counter(outcome(r) for r in ordered) if overview is None else overview.counts
    tasks = sorted({str(r.get("task")) for r in ordered}) if overview is None else overview.tasks
    arm_names = sorted({str(r.get("arm")) for r in ordered}) if overview is None \
        else overview.arms
    charts = [_resolve_chart(summary, colour), *_distributions(agent, arms, colour, overview)] \
        if summary.arms else []
    return Page(
        suite=str(provenance.get("suite") or "sweep"), sweep_id=str(provenance.get("sweep_id")),
        banners=banners, arms=[_arm_view(a) for a in summary.arms],
        charts=[c for c in charts if c.svg], chart_notes=[
            f"{c.title}: {c.note}" for c in charts if not c.svg],
        grids=grids, lanes=_lanes(lane),
        cells=[cell_view(r, read) for r in ordered],
        total=len(ordered) if overview is None else overview.total,
        detail_note="" if overview is None else _detail_note(overview),
        filters=[("task", "task", [(t, t) for t in tasks]),
                 ("arm", "arm", [(a, a) for a in arm_names]),
                 ("outcome", "outcome", [(k, label) for k, label in OUTCOMES if counts[k]])],
        provenance=[(str(k), _plain(v)) for k, v in provenance.items()],
        counts=[(k, label, counts[k]) for k, label in OUTCOMES if counts[k]],
    )


def _detail_note(overview: Overview) -> str:
    shown = len(overview.detailed)
    note = (f"This sweep has {overview.total:,} cells, more than {overview.detail_cells:,}: "
            f"the page shows each cell in the grid and the plots, and in full the {shown:,} cells "
            "the report lists one by one (suspicious wins, harness errors, excluded runs, "
            "skipped cells, the tool-cost lanes, kept workspaces)")
    if overview.listed > shown:
        note += (f", {shown:,} of {overview.listed:,} (suspicious wins first, then harness "
                 "errors, failures and excluded runs; skipped cells last)")
    return note + ". Every cell's row is in results.jsonl, its files in artifacts/."


def _plain(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "none"
    return "n/a" if value is None else str(value)
