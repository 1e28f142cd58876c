"""The controller's scheduler of a distributed sweep (``pytest_xdist_make_scheduler``).

Who calls what: xdist's controller session (``DSession``) adds each worker
(:meth:`add_node`) and its collection (:meth:`add_node_collection`); once all
collections are in it calls :meth:`schedule`, then :meth:`mark_test_complete`
after each cell a worker finishes, and :meth:`remove_node` when a worker ends
or dies; it asks :attr:`tests_finished` to know when to shut the workers down.

Cells are handed out one at a time from a queue in dispatch order (the longest
expected first, :mod:`.order`). A worker holds at most two: the one it runs
and the next (an xdist worker needs its next cell in hand to run one, and a
cell in hand is never taken back), so a worker is given its next cell when it
starts one, and a worker with nothing left in the queue for it is told to shut
down, which makes it run the last cell it holds. Since a worker's next cell is
chosen long before it is free, it is the cell that handing the queue out to the
workers as each is expected to be free would give it (:func:`.order.next_for`):
with the lengths known, the longest cell left goes to the worker free first.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from xdist.report import report_collection_diff  # type: ignore[import-untyped]

from pytest_wfbench.schedule.order import Plan, next_for

WorkerController = Any
"""xdist's ``WorkerController`` (xdist ships no type information)."""

HELD = 2
"""Cells a worker holds: the one it runs and the next."""


class CostFirstScheduling:
    """Longest expected cell first, to the first worker that needs one."""

    def __init__(self, plan: Callable[[Sequence[str]], Plan],
                 log: Callable[..., Any] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.plan = plan
        self.log = log if log is not None else (lambda *args: None)
        self.clock = clock
        self.node2collection: dict[WorkerController, list[str]] = {}
        self.node2pending: dict[WorkerController, list[int]] = {}
        self.node2started: dict[WorkerController, float] = {}
        """When the cell a worker runs (its first held) started."""
        self.queue: deque[int] = deque()
        self.costs: list[float] = []
        self.collection: list[str] | None = None

    @property
    def nodes(self) -> list[WorkerController]:
        return list(self.node2pending)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.node2collection) >= len(self.node2pending)

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self.queue:
            return False
        return all(len(pending) < HELD for pending in self.node2pending.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(self.node2pending.values())

    def add_node(self, node: WorkerController) -> None:
        assert node not in self.node2pending
        self.node2pending[node] = []

    def add_node_collection(self, node: WorkerController, collection: Sequence[str]) -> None:
        assert node in self.node2pending
        if self.collection is not None and list(collection) != self.collection:
            # A worker started after the first schedule (a crashed one replaced).
            other = next(iter(self.node2collection))
            self.log(report_collection_diff(self.collection, list(collection),
                                            other.gateway.id, node.gateway.id))
            return
        self.node2collection[node] = list(collection)

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is None:
            collections = list(self.node2collection.items())
            first_node, first = collections[0]
            for node, collection in collections[1:]:
                difference = report_collection_diff(first, collection, first_node.gateway.id,
                                                    node.gateway.id)
                if difference:
                    self.log(difference)
                    return
            self.collection = first
            plan = self.plan(first)
            self.queue, self.costs = deque(plan.order), plan.costs
        self.check_schedule()

    def check_schedule(self) -> None:
        """Give each worker that holds fewer than two cells the next ones, in
        turns (the longest go to different workers); with the queue empty, shut
        down the workers that wait for a next cell."""
        working = [node for node in self.node2pending if not node.shutting_down]
        for _ in range(HELD):
            for node in working:
                if self.queue and len(self.node2pending[node]) < HELD:
                    if not self.node2pending[node]:
                        self.node2started[node] = self.clock()
                    position = self._position_for(node, working)
                    index = self.queue[position]
                    del self.queue[position]
                    self.node2pending[node].append(index)
                    node.send_runtest_some([index])
        if not self.queue:
            for node in working:
                if len(self.node2pending[node]) < HELD:
                    node.shutdown()

    def _position_for(self, node: WorkerController, working: list[WorkerController]) -> int:
        """Where in the queue the next cell for ``node`` is (see order.next_for)."""
        now = self.clock()
        free = []
        for other in working:
            held = self.node2pending[other]
            if not held:
                free.append(now)
                continue
            started = self.node2started.get(other, now)
            free.append(max(now, started + self.costs[held[0]])
                        + sum(self.costs[i] for i in held[1:]))
        return next_for(free, working.index(node), self.queue, self.costs,
                        lookahead=HELD * len(working) + 1)

    def mark_test_complete(self, node: WorkerController, item_index: int,
                           duration: float = 0) -> None:
        self.node2pending[node].remove(item_index)
        self.node2started[node] = self.clock()  # its next cell starts now
        self.check_schedule()

    def mark_test_pending(self, item: str) -> None:
        assert self.collection is not None
        self.queue.appendleft(self.collection.index(item))
        self.check_schedule()

    def remove_pending_tests_from_node(self, node: WorkerController,
                                       indices: Sequence[int]) -> None:
        returned = set(indices)
        self.node2pending[node] = [i for i in self.node2pending[node] if i not in returned]
        self.queue.extendleft(reversed(list(indices)))

    def remove_node(self, node: WorkerController) -> str | None:
        """The worker ended or died: the cell it was running is the crash item
        (None when it held none); the cells it held go back to the queue's front."""
        pending = self.node2pending.pop(node)
        self.node2collection.pop(node, None)
        if not pending:
            return None
        assert self.collection is not None
        crashed = self.collection[pending.pop(0)]
        self.queue.extendleft(reversed(pending))
        return crashed
