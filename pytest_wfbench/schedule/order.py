"""Expected cell costs and the order cells are handed out in. Pure."""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

AGENT_PHASE_PRIOR_S = 120.0
"""A guess at one agent session's length, before any sweep measured it."""
SCRIPTED_PRIOR_S = 1.0
"""A guess at a scripted arm's cell (gold, noop, script steps, a scenario)."""


@dataclass(frozen=True)
class CellCost:
    """What orders a cell: its task, arm, run and its arm's prior."""

    task: str
    arm: str
    run: int
    prior_s: float


def history_key(task: str, arm: str) -> str:
    return f"{task}\0{arm}"


def medians(samples: Iterable[tuple[str, str, float]]) -> dict[str, float]:
    """(task, arm, seconds) samples -> the median seconds of each task and arm,
    keyed by :func:`history_key`."""
    found: dict[str, list[float]] = {}
    for task, arm, seconds in samples:
        found.setdefault(history_key(task, arm), []).append(seconds)
    return {key: statistics.median(values) for key, values in found.items()}


def expected_seconds(cells: Sequence[CellCost], history: Mapping[str, float]) -> list[float]:
    """Each cell's expected seconds: its task and arm's earlier median, else
    its arm's median over the earlier tasks, else its prior."""
    per_arm: dict[str, list[float]] = {}
    for key, seconds in history.items():
        per_arm.setdefault(key.partition("\0")[2], []).append(seconds)
    arm_median = {arm: statistics.median(values) for arm, values in per_arm.items()}
    return [history.get(history_key(cell.task, cell.arm), arm_median.get(cell.arm, cell.prior_s))
            for cell in cells]


@dataclass(frozen=True)
class Plan:
    """The cells' indices in dispatch order, and each cell's expected seconds
    (by index)."""

    order: list[int]
    costs: list[float]


def dispatch_order(cells: Sequence[CellCost], history: Mapping[str, float]) -> list[int]:
    """The cells' indices in the order they are handed out: the longest expected
    first; among equals, run by run (a task's first run before any second run),
    then in collection order."""
    return dispatch_plan(cells, history).order


def dispatch_plan(cells: Sequence[CellCost], history: Mapping[str, float]) -> Plan:
    """:func:`dispatch_order`, with the expected seconds it orders by."""
    costs = expected_seconds(cells, history)
    return Plan(sorted(range(len(cells)), key=lambda i: (-costs[i], cells[i].run, i)), costs)


def next_for(free: Sequence[float], worker: int, queue: Sequence[int],
             costs: Sequence[float], lookahead: int) -> int:
    """Where in the queue (in dispatch order) the cell to give ``worker`` next
    is: the first that handing the queue out in order, each cell to the worker
    free first (each free at its expected time, ``free``), would give it. A
    worker is given its next cell when it starts one, long before it is free:
    the longest cell left goes to the worker that will be free first, not to the
    one asking. The front (0) when none of the first ``lookahead`` would be."""
    heap = [(at, k) for k, at in enumerate(free)]
    heapq.heapify(heap)
    for position in range(min(len(queue), lookahead)):
        at, k = heapq.heappop(heap)
        if k == worker:
            return position
        heapq.heappush(heap, (at + costs[queue[position]], k))
    return 0
