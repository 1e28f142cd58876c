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
one: suspicious wins, harness errors, excluded runs, the tool-cost lanes, kept
workspaces, skipped cells, at most :data:`LISTED_CELLS` (the table holds the
listed agent rows slim: those shown are read again, by their lines). Its size
and time grow with the tasks and arms, not with the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import is_

import numpy as np
import numpy.typing as npt

from pytest_wfbench.aggregate import Row, row_order, token_totals
from pytest_wfbench.aggregate.select import Positions, equal, grouped, positions_of
from pytest_wfbench.outcomes import ERROR_KINDS, ErrorClass
from pytest_wfbench.projection import listed as is_listed
from pytest_wfbench.render.html.cell import OUTCOME_LABELS, outcome
from pytest_wfbench.table import Table, gather

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
    return "negative" if type(kind) is str and kind in NEGATIVE_KINDS else "failure"


def outcomes_at(table: Table, positions: Sequence[int],
                kept: Sequence[int] | None = None) -> list[int]:
    """:func:`outcome_at` of each of these rows, as its place in OUTCOME_LABELS,
    for all of them at once (the rows the table keeps one by one: ``kept``,
    where these are among the positions, when known)."""
    count = len(positions)
    at = positions_of(positions)
    kinds = gather(table.objects["error_kind"], positions)
    skipped = equal(gather(table.objects["status"], positions), "skipped")
    counted = np.frombuffer(table.flags["counted"], np.int8)[at] == 1
    resolved = np.frombuffer(table.flags["resolved"], np.int8)[at] == 1
    try:
        negative = np.fromiter(map(NEGATIVE_KINDS.__contains__, kinds), np.bool_, count)
    except TypeError:  # a kind that is no text (its row is kept whole, and read below)
        negative = np.fromiter((type(kind) is str and kind in NEGATIVE_KINDS for kind in kinds),
                               np.bool_, count)
    places: list[int] = np.select(
        [skipped, ~counted, equal(kinds, "suspicious"), resolved, negative],
        [PLACE[name] for name in ("skipped", "excluded", "suspicious", "resolved", "negative")],
        PLACE["failure"]).tolist()
    for k in kept_among(table, at) if kept is None else kept:
        places[k] = PLACE[outcome_at(table, positions[k])]
    return places


def kept_among(table: Table, at: npt.NDArray[np.intp]) -> list[int]:
    """Where among these positions the rows the table keeps whole are."""
    if not table.kept:
        return []
    return [int(k) for k in np.flatnonzero(np.isin(at, np.fromiter(table.kept, np.intp)))]


def _codes(values: Sequence[object]) -> tuple[list[str], npt.NDArray[np.intp]]:
    """The values as text, sorted and without repeats, and each value's place there."""
    texts = list(map(str, values))
    names = sorted(set(texts))
    place = dict(zip(names, range(len(names)), strict=True))
    return names, np.fromiter(map(place.__getitem__, texts), np.intp, len(texts))


def overview_of(table: Table, metrics: Sequence[str]) -> Overview:
    """The overview of the table's rows (its positions); ``metrics`` are the
    distributions' (``tokens`` is the total of the usage fields)."""
    positions = table.positions
    at = positions_of(positions)
    kept_at = kept_among(table, at)
    places = outcomes_at(table, positions, kept_at)
    outcomes = list(map(NAMES.__getitem__, places))
    task_of, arm_of, cell_of = table.obj("task"), table.obj("arm"), table.obj("cell_id")
    kept = table.kept
    # The page's agent rows, as the report's (Table.agent): lane "agent", or no
    # lane at all; a row whose lane is null (kept: it is listed) is another.
    lanes = list(gather(table.obj("lane"), positions))
    unkept = np.ones(len(lanes), np.bool_)
    for k in kept_at:
        lanes[k] = kept[positions[k]].get("lane", "agent")
        unkept[k] = False
    agent = ((np.fromiter(map(is_, lanes, repeat(None)), np.bool_, len(lanes)) & unkept)
             | equal(lanes, "agent"))
    # A kept row that is not listed (an audit or review row) is a projection.
    listed = sorted((i for i in (positions[k] for k in kept_at) if is_listed(kept[i])),
                    key=lambda i: row_order(kept[i]))
    limit = LISTED_CELLS
    chosen = sorted(listed, key=lambda i: _detail_rank(kept[i]))[:limit]
    shown = set(chosen)
    detailed = table.wholes([i for i in listed if i in shown])  # slim ones read again
    link: dict[tuple[str, str, str], str] = {}
    for i in chosen:
        link.setdefault((str(task_of[i]), str(arm_of[i]), outcome(kept[i])), str(cell_of[i]))
    tasks, task_codes = _codes(gather(task_of, positions))
    arms, arm_codes = _codes(gather(arm_of, positions))
    # Each agent row's square, numbered by task, arm and outcome: in that order.
    square = (task_codes * len(arms) + arm_codes) * len(NAMES) + np.array(places, np.intp)
    found, counts = np.unique(square[agent], return_counts=True)
    squares = []
    for number, count in zip(found.tolist(), counts.tolist(), strict=True):
        pair, place = divmod(number, len(NAMES))
        task, arm, kind = tasks[pair // len(arms)], arms[pair % len(arms)], NAMES[place]
        squares.append(Counted(task, arm, kind, count, link.get((task, arm, kind))))
    drawn = agent & ~np.isin(np.array(places, np.intp), [PLACE["excluded"], PLACE["skipped"]])
    by_arm = {arm: np.array(members, np.intp) for arm, members  # in the order they come
              in grouped([arms[code] for code in arm_codes.tolist()], at, drawn).items()}
    dots = DOTS_PER_ARM
    spreads = {name: _spreads(table, by_arm, name, max(dots, 2)) for name in metrics}
    return Overview(
        total=len(positions), detail_cells=DETAIL_CELLS, listed_cells=limit,
        dots_per_arm=max(dots, 2), counts=Counter(outcomes), squares=squares,
        tasks=tasks, arms=arms, spreads=spreads, detailed=detailed, listed=len(listed),
        lane_rows=[kept[i] for i in listed if kept[i].get("lane") == "tool-cost"])


RANK = {name: place for place, name in enumerate(DETAIL_ORDER)}
NAMES = tuple(OUTCOME_LABELS)
"""The outcomes, in the grid's order."""
PLACE = {name: place for place, name in enumerate(NAMES)}


def _detail_rank(row: Row) -> int:
    kind = "harness-error" if row.get("error_kind") == "harness-error" else outcome(row)
    return RANK.get(kind, len(RANK))


def _spreads(table: Table, by_arm: dict[str, Positions], name: str,
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
        found = everyone[~np.isnan(column[everyone])]
        if not len(found):
            continue
        ranked = column[found]
        order = np.argsort(ranked, kind="stable")
        count = len(found)
        picks = np.arange(count) if count <= limit else np.array(
            [round(k * (count - 1) / (limit - 1)) for k in range(limit)], np.intp)
        members, values = found[order[picks]].tolist(), ranked[order[picks]].tolist()
        mid = count // 2
        below, above = float(ranked[order[mid - 1]]), float(ranked[order[mid]])
        middle = above if count % 2 else (below + above) / 2
        spreads[arm] = Spread(
            drawn=[(value, str(cell_of[member]), outcome_at(table, member))
                   for value, member in zip(values, members, strict=True)],
            median=middle, runs=count)
    return spreads
