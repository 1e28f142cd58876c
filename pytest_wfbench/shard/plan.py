"""Which cells a shard runs: a deterministic split of a sweep's tasks over N
machines. Pure: task names, cell ids and earlier rows in, an assignment out.

Rules (README, "Many machines"):

- every cell is in exactly one shard, and all cells of a task are in the same
  one, so each template is built once per shard and a task's runs are judged
  on one machine;
- tasks are spread by their expected cost: the sum of their cells' expected
  wall time. Without earlier rows every cell costs the same (a task weighs its
  cell count); with them a cell costs its earlier row's ``duration_s``, else
  the median duration of its arm's earlier rows, else of all earlier rows;
- the split is longest-processing-time-first (Graham 1969): tasks from the
  most to the least expensive, each to the shard with the least expected cost
  so far (then the fewest tasks, then the lowest index). Its longest shard is
  within 4/3 of the best possible split, and no shard is empty while there
  are at least as many tasks as shards;
- ties are broken by the tasks' order in the sweep, so every process (each
  xdist worker collects again) and every shard computes the same assignment.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SWEEP_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SHARD_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
DEFAULT_CELL_COST = 1.0


class ShardError(Exception):
    """The shard cannot be run as asked (a usage error)."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            raise ValueError(f"a shard is I/N with 1 <= I <= N, not {self.index}/{self.count}")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """``I/N`` with 1 <= I <= N; ValueError with what was wrong otherwise."""
    match = SHARD_RE.match(text)
    if match is None:
        raise ValueError(f"expected I/N (shard I of N, counted from 1, e.g. 2/3), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"shard I/N needs 1 <= I <= N (counted from 1), got {text!r}")
    return Shard(index, count)


def parse_sweep_id(text: str) -> str:
    """A sweep id given by the user: letters, digits, '.', '_' and '-', at most
    128 characters, starting with a letter or digit (it names rows and files)."""
    if not SWEEP_ID_RE.match(text):
        raise ValueError("a sweep id is 1 to 128 letters, digits, '.', '_' or '-', starting "
                         f"with a letter or digit, got {text!r}")
    return text


@dataclass(frozen=True)
class TaskCells:
    """A task and its cells, as (cell_id, arm) pairs, in sweep order."""

    task: str
    cells: tuple[tuple[str, str], ...]


def _durations(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, float]]:
    """The last measured duration of each cell: cell_id -> (arm, seconds)."""
    found: dict[str, tuple[str, float]] = {}
    for row in rows:
        duration = row.get("duration_s")
        if row.get("status") != "ran" or isinstance(duration, bool) \
                or not isinstance(duration, int | float) or duration < 0:
            continue
        found[str(row.get("cell_id"))] = (str(row.get("arm")), float(duration))
    return found


def expected_costs(tasks: Sequence[TaskCells],
                   earlier: Iterable[Mapping[str, Any]] = ()) -> dict[str, float]:
    """Each task's expected cost (see the module's rules)."""
    measured = _durations(earlier)
    per_arm: dict[str, list[float]] = {}
    for arm, seconds in measured.values():
        per_arm.setdefault(arm, []).append(seconds)
    everything = [seconds for _, seconds in measured.values()]
    overall = statistics.median(everything) if everything else DEFAULT_CELL_COST
    arm_median = {arm: statistics.median(values) for arm, values in per_arm.items()}

    def cost(cell_id: str, arm: str) -> float:
        if cell_id in measured:
            return measured[cell_id][1]
        return arm_median.get(arm, overall)

    return {task.task: sum(cost(cell_id, arm) for cell_id, arm in task.cells)
            for task in tasks}


def assign(tasks: Sequence[str], costs: Mapping[str, float], count: int) -> dict[str, int]:
    """task -> its shard index (1-based), longest-processing-time first."""
    if count < 1:
        raise ValueError(f"a sweep has at least one shard, not {count}")
    order = {task: position for position, task in enumerate(tasks)}
    loads = [0.0] * count
    sizes = [0] * count
    assignment: dict[str, int] = {}
    for task in sorted(tasks, key=lambda t: (-costs.get(t, 0.0), order[t])):
        target = min(range(count), key=lambda i: (loads[i], sizes[i], i))
        loads[target] += costs.get(task, 0.0)
        sizes[target] += 1
        assignment[task] = target + 1
    return assignment


def split(tasks: Sequence[TaskCells], count: int,
          earlier: Iterable[Mapping[str, Any]] = ()) -> dict[str, int]:
    """The whole sweep's assignment: task -> shard index, the same in every shard."""
    names = [task.task for task in tasks]
    if len(set(names)) != len(names):
        raise ValueError("task ids must be unique in a sweep to be split into shards")
    if len(names) < count:
        raise ShardError(f"the sweep has {len(names)} tasks and a task's cells are never split, "
                         f"so {count} shards would leave {count - len(names)} with nothing to "
                         f"run: use at most {len(names)} shards")
    return assign(names, expected_costs(tasks, earlier), count)


def shard_loads(tasks: Sequence[TaskCells], assignment: Mapping[str, int],
                costs: Mapping[str, float], count: int) -> list[float]:
    """Each shard's expected cost under an assignment (index 0 is shard 1)."""
    loads = [0.0] * count
    for task in tasks:
        loads[assignment[task.task] - 1] += costs[task.task]
    return loads
