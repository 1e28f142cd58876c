"""report.html of a large sweep: what the page shows of every cell, computed
from the report's table (:mod:`pytest_wfbench.table`), with the detail of the
cells the report lists. Pure.

A page that shows every cell whole grows with the cells: 100,000 of them made
a 413 MB page in 76 s, parsing every row again and reading every cell's
artifacts, a page no browser opens; a cell with an agent's transcript alone
takes about 115 KB of it. Past :data:`DETAIL_CELLS` cells the page instead
shows, for every cell, its outcome counted in the task x arm grid (one square
per outcome of each task and arm, with its count), and its figure in the
distributions (at most :data:`DOTS_PER_ARM` dots per arm, evenly spaced in the
order of their values; the bar is the median of every run); and the detail
(error, stages, steps, transcripts, patch) of the cells the report lists one by
one, which the table keeps whole: suspicious wins, harness errors, excluded
runs, the tool-cost lanes, kept workspaces, skipped cells, at most
:data:`LISTED_CELLS`. Its size and time grow with the tasks and arms, not with
the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_wfbench.aggregate import Row, row_order, token_totals
from pytest_wfbench.outcomes import ERROR_KINDS, ErrorClass
from pytest_wfbench.projection import listed as is_listed
from pytest_wfbench.render.html.cell import OUTCOME_LABELS, outcome
from pytest_wfbench.table import Table

DETAIL_CELLS = 500
"""A sweep of at most this many cells shows every cell whole."""
LISTED_CELLS = 50
"""A larger sweep's page shows at most this many of its listed cells whole."""
DOTS_PER_ARM = 400
"""Of a large sweep's distributions, the dots drawn per arm."""
NEGATIVE_KINDS = frozenset(name for name, kind in ERROR_KINDS.items()
                           if kind.error_class is ErrorClass.VALID_NEGATIVE)
"""The error kinds whose rows are valid negatives (a row's ``error_class``)."""
DETAIL_ORDER = ("suspicious", "harness-error", "failure", "excluded", "negative", "resolved",
                "skipped")
"""Which listed cells a large page details first: suspicious wins, harness
errors (counted or not), other counted failures, excluded runs; skipped cells
last."""


@dataclass(frozen=True)
class Counted:
    """One square of a large sweep's grid: the runs of a (task, arm) with one
    outcome."""

    task: str
    arm: str
    outcome: str
    count: int
    cell_id: str | None
    """A detailed cell of these runs, the square's link (None: none is)."""


@dataclass(frozen=True)
class Spread:
    """One arm's counted runs in a distribution."""

    drawn: list[tuple[float, str, str]]
    """(value, cell id, outcome) of the runs drawn: every run, or DOTS_PER_ARM
    evenly spaced by rank (in order of value), the smallest and the largest
    among them."""
    median: float
    """Of every run."""
    runs: int


@dataclass(frozen=True)
class Overview:
    """What a large sweep's page shows of all its cells."""

    total: int
    """The sweep's cells (its rows of the page: the last row of each cell)."""
    detail_cells: int
    listed_cells: int
    dots_per_arm: int
    """The limits it was made with (DETAIL_CELLS, LISTED_CELLS, DOTS_PER_ARM)."""
    counts: Counter[str]
    """Outcome -> cells, over the whole sweep."""
    squares: list[Counted]
    """The agent lane's grid, by task, arm and outcome (OUTCOMES' order)."""
    tasks: list[str]
    arms: list[str]
    spreads: dict[str, dict[str, Spread]]
    """Distribution metric -> arm -> its counted runs' values."""
    detailed: list[Row]
    """The listed cells shown whole (LISTED_CELLS at most), in row order."""
    lane_rows: list[Row]
    """Every tool-cost lane row (each is listed, so kept whole): the lanes'
    grid and plots, whichever of them are shown whole."""
    listed: int
    """How many cells the report lists (``detailed`` may be fewer)."""


def large(cells: int) -> bool:
    """Whether a page of this many cells shows an overview, not every cell."""
    return cells > DETAIL_CELLS


def outcome_at(table: Table, index: int) -> str:
    """:func:`~pytest_wfbench.render.html.cell.outcome` of a row of the table:
    a listed row's own (kept whole), else from its error kind and whether it
    resolved (a row not listed ran and counts, and is neither a suspicious win
    nor a harness error; a projection has no ``error_class``)."""
    row = table.kept.get(index)
    if row is None:
        if table.objects["status"][index] == "skipped":
            return "skipped"
        if table.flags["counted"][index] != 1:
            return "excluded"
        kind, resolved = table.objects["error_kind"][index], table.flags["resolved"][index] == 1
    elif is_listed(row):
        return outcome(row)
    else:  # an audit or review row, or one whose fields fit no column: its projection
        kind, resolved = row.get("error_kind"), bool(row.get("resolved"))
    if kind == "suspicious":
        return "suspicious"
    if resolved:
        return "resolved"
    return "negative" if kind in NEGATIVE_KINDS else "failure"


def overview_of(table: Table, metrics: Sequence[str]) -> Overview:
    """The overview of the table's rows (its positions); ``metrics`` are the
    distributions' (``tokens`` is the total of the usage fields)."""
    positions = table.positions
    outcomes = [outcome_at(table, i) for i in positions]
    task_of, arm_of, cell_of = table.obj("task"), table.obj("arm"), table.obj("cell_id")
    kept, lane_of = table.kept, table.obj("lane")
    # The page's agent rows: lane "agent" or none (a kept row's own lane).
    agent = {i for i in positions
             if (kept[i].get("lane") if i in kept else lane_of[i]) in (None, "agent")}
    # A kept row that is not listed (an audit or review row) is a projection.
    listed = sorted((i for i in positions if i in kept and is_listed(kept[i])),
                    key=lambda i: row_order(kept[i]))
    limit = LISTED_CELLS
    chosen = sorted(listed, key=lambda i: _detail_rank(kept[i]))[:limit]
    shown = set(chosen)
    detailed = [kept[i] for i in listed if i in shown]
    link: dict[tuple[str, str, str], str] = {}
    for i in chosen:
        link.setdefault((str(task_of[i]), str(arm_of[i]), outcome(kept[i])), str(cell_of[i]))
    grid: Counter[tuple[str, str, str]] = Counter(
        (str(task_of[i]), str(arm_of[i]), kind)
        for i, kind in zip(positions, outcomes, strict=True) if i in agent)
    order = {name: place for place, name in enumerate(OUTCOME_LABELS)}
    squares = [Counted(task, arm, kind, count, link.get((task, arm, kind)))
               for (task, arm, kind), count in sorted(
                   grid.items(), key=lambda item: (item[0][0], item[0][1], order[item[0][2]]))]
    by_arm: dict[str, list[int]] = {}
    for i, kind in zip(positions, outcomes, strict=True):
        if kind not in ("excluded", "skipped") and i in agent:
            by_arm.setdefault(str(arm_of[i]), []).append(i)
    dots = DOTS_PER_ARM
    spreads = {name: _spreads(table, by_arm, name, max(dots, 2)) for name in metrics}
    return Overview(
        total=len(positions), detail_cells=DETAIL_CELLS, listed_cells=limit,
        dots_per_arm=max(dots, 2), counts=Counter(outcomes), squares=squares,
        tasks=sorted({str(task_of[i]) for i in positions}),
        arms=sorted({str(arm_of[i]) for i in positions}),
        spreads=spreads, detailed=detailed, listed=len(listed),
        lane_rows=[kept[i] for i in listed if kept[i].get("lane") == "tool-cost"])


RANK = {name: place for place, name in enumerate(DETAIL_ORDER)}


def _detail_rank(row: Row) -> int:
    kind = "harness-error" if row.get("error_kind") == "harness-error" else outcome(row)
    return RANK.get(kind, len(RANK))


def _spreads(table: Table, by_arm: dict[str, list[int]], name: str,
             limit: int) -> dict[str, Spread]:
    """Per arm, the runs of ``name`` that are drawn and the median of all (a
    run without the figure, NaN, left out): sorted by value, ties in the
    table's order (one stable sort per arm, numpy's: the order :func:`sorted`
    gives)."""
    cell_of = table.obj("cell_id")
    column = (token_totals(table) if name == "tokens"
              else np.array(table.number(name), dtype=np.float64))
    spreads = {}
    for arm, everyone in by_arm.items():
        found = np.array(everyone, dtype=np.intp)
        found = found[~np.isnan(column[found])]
        if not len(found):
            continue
        members = found[np.argsort(column[found], kind="stable")].tolist()
        values = column[members].tolist()
        count = len(members)
        picks = range(count) if count <= limit else [
            round(k * (count - 1) / (limit - 1)) for k in range(limit)]
        mid = count // 2
        middle = values[mid] if count % 2 else (values[mid - 1] + values[mid]) / 2
        spreads[arm] = Spread(
            drawn=[(values[k], str(cell_of[members[k]]), outcome_at(table, members[k]))
                   for k in picks], median=middle, runs=count)
    return spreads
