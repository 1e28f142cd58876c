"""Per (task, arm) figures: counts, error kinds and the median of each metric
over the rows counted in medians (SPEC §5, §7), and the rule that combines an
arm's per-task medians into one figure. Computed from a table's columns
(:mod:`pytest_wfbench.table`); the functions of rows make a table of them."""

from __future__ import annotations

import functools
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from pytest_wfbench.fields import USAGE_FIELDS
from pytest_wfbench.stats import Interval, wilson_interval
from pytest_wfbench.stats.medians import Column, Groups
from pytest_wfbench.table import Table
from pytest_wfbench.table.frame import number_of
from pytest_wfbench.table.table import row_tokens
from pytest_wfbench.table.texts import Texts

Row = dict[str, Any]

METRICS = ("tokens", *USAGE_FIELDS, "estimated_tokens", "cost_usd", "session_duration_s",
           "duration_s", "harness_overhead_s", "num_turns", "diff_files", "diff_insertions",
           "diff_deletions")
"""``tokens`` is each row's total of the usage fields; ``session_duration_s`` the
arm's own time, ``duration_s`` the cell's wall time and ``harness_overhead_s``
their difference, each reported on its own."""
SAVINGS_METRICS = ("tokens", *USAGE_FIELDS, "estimated_tokens", "cost_usd",
                   "session_duration_s", "num_turns")
"""What an arm spends: savings are reported for these, not for churn or for the
harness's share of a cell."""


def row_order(row: Row) -> tuple[str, str, int]:
    """Rows in a stable order: by task, arm and run."""
    return (str(row.get("task")), str(row.get("arm")), int(row.get("run") or 0))


def total_tokens(row: Mapping[str, Any]) -> float:
    """All model tokens of a row: input, cache creation, cache read and output,
    as the report's table totals them (each a whole count; null, a value that
    is no number or no finite one as 0; past the largest float, infinite): a
    page of a few cells says what the report of many says, and never raises."""
    return row_tokens(row)


def metric(row: Mapping[str, Any], name: str) -> float | None:
    """A row's figure, as the report's table holds it: null for a value that is
    no number (or NaN), never an error."""
    if name == "tokens":
        return total_tokens(row)
    value = number_of(row.get(name))
    return None if value != value else value


def median_of(rows: Sequence[Row], name: str) -> float | None:
    """Median over counted rows; null when no row has it, and for cost null
    when any counted row's cost is null (unknown is never zero)."""
    if name == "tokens":
        present = [total_tokens(row) for row in rows]
    else:  # metric() inlined: a large sweep asks this of every row and metric
        present = [value for row in rows if (value := number_of(row.get(name))) == value]
    if not rows or (name == "cost_usd" and len(present) < len(rows)):
        return None
    return statistics.median(present) if present else None


MEASURED = tuple(name for name in METRICS if name != "tokens")
"""The metrics a row has as fields (``tokens`` is their total of USAGE_FIELDS)."""


def run_number(value: float) -> int:
    """A row's run as row_order takes it: null is 0."""
    return int(value) if value == value else 0


def medians_at(table: Table, positions: Sequence[int]) -> dict[str, float | None]:
    """:func:`median_of` of every metric of METRICS over these rows of the table."""
    return group_medians(table, [positions])[0]


SUMMABLE = 2.0**51
"""Four whole numbers each smaller than this add up to less than 2**53: exactly."""


def token_totals(table: Table) -> Column:
    """Every row's total of the usage fields, as :meth:`Table.tokens` gives
    them: at once when every count is whole and small enough to add exactly
    (the same floats), else row by row."""
    columns = [np.array(table.number(name), dtype=np.float64) for name in USAGE_FIELDS]
    if all(bool(np.all((column == np.floor(column)) & (np.abs(column) < SUMMABLE)))
           for column in columns):
        a, b, c, d = columns
        return a + b + c + d + 0.0  # + 0.0: -0.0 totals 0.0, as Table.tokens has it
    return np.array(table.tokens(range(table.size)), dtype=np.float64)


def group_medians(table: Table,
                  groups: Sequence[Sequence[int]]) -> list[dict[str, float | None]]:
    """:func:`medians_at` of each group of rows of the table, every group's
    median of a metric taken at once (:mod:`pytest_wfbench.stats.medians`)."""
    if not groups:
        return []
    layout = Groups(groups)
    found = {"tokens": layout.medians(token_totals(table))}
    for name in MEASURED:
        found[name] = layout.medians(np.array(table.number(name), dtype=np.float64))
    columns = {name: medians.values(all_known=name == "cost_usd")  # unknown is never 0
               for name, medians in found.items()}
    return [dict(zip(columns, values, strict=True)) for values in zip(*columns.values(),
                                                                     strict=True)]


class Run(NamedTuple):
    """A counted run: its number and whether it resolved the task."""

    run: int
    resolved: bool


shared_run = functools.lru_cache(maxsize=4096)(Run)
"""A Run, one object for each number and outcome (a report of 100,000 runs
held as many tuples: 6 MB)."""


@dataclass
class TaskArm:
    """Figures of one (task, arm) over its rows."""

    task: str
    task_class: str | None
    arm: str
    attempts: int = 0
    """Rows that ran (counted or not)."""
    valid: int = 0
    """Rows counted in medians and resolve denominators."""
    resolved: int = 0
    skipped: int = 0
    excluded: list[Row] = field(default_factory=list)
    error_counts: dict[str, int] = field(default_factory=dict)
    medians: dict[str, float | None] = field(default_factory=dict)
    counted_runs: list[Run] = field(default_factory=list)
    """The counted runs, by run: what pairing works on."""

    @property
    def rate(self) -> float | None:
        return self.resolved / self.valid if self.valid else None

    def resolve_interval(self, confidence: float = 0.95) -> Interval | None:
        return wilson_interval(self.resolved, self.valid, confidence) if self.valid else None


def in_run_order(table: Table, positions: Iterable[int]) -> list[int]:
    """Positions of one (task, arm) in row_order (by run; a stable sort)."""
    return groups_in_run_order(table, [list(positions)])[0]


def groups_in_run_order(table: Table, groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """:func:`in_run_order` of each group, all sorted at once (numpy's stable
    sort by group, then run: the order sorted() gives each)."""
    flat = np.fromiter(chain.from_iterable(groups), np.int64)
    runs = np.frombuffer(table.number("run"), np.float64)[flat]
    if not np.all(np.isfinite(runs) | np.isnan(runs)):  # run_number fails on it, as it did
        run = table.number("run")
        return [sorted(group, key=lambda i: run_number(run[i])) for group in groups]
    sizes = np.fromiter(map(len, groups), np.int64, len(groups))
    group = np.repeat(np.arange(len(groups)), sizes)
    order = np.lexsort((np.where(np.isnan(runs), 0.0, np.trunc(runs)), group))
    return _split(flat[order].tolist(), sizes)


def _split(values: list[Any], sizes: npt.NDArray[np.int64]) -> list[list[Any]]:
    """The values cut into consecutive groups of these sizes (none: no group)."""
    ends = np.cumsum(sizes).tolist()
    return [values[start:end] for start, end in zip([0, *ends], ends, strict=False)]


def task_arm(rows: Iterable[Row], task: str, arm: str) -> TaskArm:
    """The figures of one (task, arm) from its rows."""
    table = Table.of(rows)
    return task_arm_at(table, in_run_order(table, table.positions), task, arm)


def task_arm_at(table: Table, members: Sequence[int], task: str, arm: str,
                medians: dict[str, float | None] | None = None) -> TaskArm:
    """:func:`task_arm` of these rows of the table, in row_order (``medians``:
    those of its counted rows, when already taken with other groups')."""
    groups = GroupFigures(table, [members])
    return groups.task_arm(0, task, arm,
                           medians_at(table, groups.counted[0]) if medians is None else medians)


class GroupFigures:
    """What :func:`task_arm_at` counts of many groups of rows (each in
    row_order), for all of them at once."""

    def __init__(self, table: Table, groups: Sequence[Sequence[int]]) -> None:
        self.table = table
        self.groups = groups
        sizes = np.fromiter(map(len, groups), np.int64, len(groups))
        flat = np.fromiter(chain.from_iterable(groups), np.int64)
        group = np.repeat(np.arange(len(groups)), sizes)
        status = table.texts("status")
        codes = np.frombuffer(status.codes, status.codes.typecode)[flat]
        ran = codes == _code(status, "ran")
        counted_flag = np.frombuffer(table.flag("counted"), np.int8)[flat] == 1
        resolved_flag = np.frombuffer(table.flag("resolved"), np.int8)[flat] == 1
        counted = ran & counted_flag
        size = len(groups)
        self.attempts = np.bincount(group[ran], minlength=size).tolist()
        self.valid = np.bincount(group[counted], minlength=size).tolist()
        self.resolved = np.bincount(group[counted & resolved_flag], minlength=size).tolist()
        self.skipped = np.bincount(group[codes == _code(status, "skipped")],
                                   minlength=size).tolist()
        self.counted: list[list[int]] = _split(flat[counted].tolist(), np.asarray(self.valid))
        """Each group's rows that ran and are counted, in their order."""
        excluded = ran & ~counted_flag
        self._excluded = _split(flat[excluded].tolist(), np.bincount(group[excluded],
                                                                     minlength=size))
        runs = list(map(run_number, np.frombuffer(table.number("run"), np.float64)[
            flat[counted]].tolist()))
        self._runs = _split(list(map(shared_run, runs, resolved_flag[counted].tolist())),
                            np.asarray(self.valid))
        kinds = table.texts("error_kind")
        kind_codes = np.frombuffer(kinds.codes, kinds.codes.typecode)[flat[ran]].astype(np.int64)
        pairs, counts = np.unique(group[ran] * (len(kinds.values) + 1) + kind_codes,
                                  return_counts=True)
        self._errors: list[Counter[str]] = [Counter() for _ in groups]
        for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
            of, code = divmod(pair, len(kinds.values) + 1)
            if kind := kinds.values[code]:
                self._errors[of][str(kind)] += count

    def task_arm(self, group: int, task: str, arm: str,
                 medians: dict[str, float | None]) -> TaskArm:
        members = self.groups[group]
        return TaskArm(
            task=task, task_class=self.table.obj("class")[members[0]] if members else None,
            arm=arm, attempts=self.attempts[group], valid=self.valid[group],
            resolved=self.resolved[group], skipped=self.skipped[group],
            excluded=[self.table.row(i) for i in self._excluded[group]],
            error_counts=dict(sorted(self._errors[group].items())), medians=medians,
            counted_runs=self._runs[group])


def _code(texts: Texts, value: str) -> int:
    """The value's code, or one no row has."""
    found = texts.code(value)
    return -1 if found is None else found


def combine_medians(per_task: Sequence[TaskArm], name: str) -> float | None:
    """The arm rule: the mean of the arm's per-task medians of ``name`` over the
    tasks where it has counted rows, so that every task weighs the same whatever
    its number of runs. Tasks without the figure are left out (no script arm has
    turns, no agent arm estimated tokens); cost is null when any of them has an
    unknown cost, since unknown is never zero."""
    medians = [t.medians.get(name) for t in per_task if t.valid]
    if not medians or (name == "cost_usd" and any(m is None for m in medians)):
        return None
    known = [m for m in medians if m is not None]
    return statistics.fmean(known) if known else None
