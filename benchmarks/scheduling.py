"""The controller's scheduler (pytest_wfbench/schedule/xdist.py) played against
simulated xdist workers, on cells of known lengths: what a sweep's run loop
would take if the harness cost nothing. The tests check the scheduler with it,
and the benchmark measures a first sweep against it."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from pytest_wfbench.schedule.order import Plan
from pytest_wfbench.schedule.xdist import CostFirstScheduling


@dataclass(eq=False)
class Gateway:
    id: str


@dataclass(eq=False)
class Worker:
    """xdist's side of the protocol as the scheduler sees it: what it was sent."""

    name: str
    held: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Gateway:
        return Gateway(self.name)

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down, "a cell sent to a worker told to shut down"
        self.held.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def play(durations: list[float], workers: int, order: list[int] | None = None,
         expected: list[float] | None = None) -> tuple[float, list[int]]:
    """Run the scheduler against simulated workers (an xdist worker runs a held
    cell only when it holds the next one too, or was told to shut down), with
    the cells in ``order`` expected to take ``expected`` (all alike when None):
    the makespan, and the cells in the order they started."""
    collection = [f"t.yaml::test_cell[c{i}]" for i in range(len(durations))]
    clock = 0.0
    scheduler = CostFirstScheduling(
        lambda ids: Plan(order if order is not None else list(range(len(ids))),
                         expected if expected is not None else [1.0] * len(ids)),
        clock=lambda: clock)
    nodes = [Worker(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    started: list[int] = []
    running: list[tuple[float, str, int]] = []  # (ends, worker, cell)
    busy: set[str] = set()
    while True:
        for node in nodes:
            if node.name not in busy and node.held and (len(node.held) >= 2
                                                         or node.shutting_down):
                index = node.held.pop(0)
                started.append(index)
                busy.add(node.name)
                heapq.heappush(running, (clock + durations[index], node.name, index))
        if not running:
            break
        clock, name, index = heapq.heappop(running)
        busy.discard(name)
        node = next(n for n in nodes if n.name == name)
        scheduler.mark_test_complete(node, index)
    assert scheduler.tests_finished and sorted(started) == list(range(len(durations)))
    return clock, started
