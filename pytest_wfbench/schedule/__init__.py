"""Which cell an xdist worker runs next: the longest expected first.

A sweep's cells differ in length by ten times and more (agent sessions against
scripted arms, and sessions among themselves). xdist's own schedulers hand
cells out in collection order; at the end of a sweep a worker that still holds
a long cell queued behind a running one keeps the others idle (an xdist worker
needs its next cell in hand to run one: a queued cell cannot be taken back).
So, with ``-n`` and no ``--dist`` of the user's, the sweep's controller hands
cells out itself (:mod:`.xdist`): longest expected first, one at a time to the
first worker that needs one (the longest-processing-time rule of list
scheduling, Graham 1969), so the cells left for the end are the shortest.

What a cell is expected to cost (:mod:`.order`, pure): the median duration of
its task and arm in the last sweep that ran them (kept in the cache dir,
:mod:`.history`), else the median of its arm there, else a prior by its arm's
kind (an agent session is far longer than a scripted arm). Cells of equal cost
go run by run (every task's first run before any task's second), so workers
start on different tasks and build different templates at once. The figures
only order the cells: a stale or wrong one changes which cell starts first,
never what a cell measures.
"""

from pytest_wfbench.schedule.order import (
    CellCost,
    Plan,
    dispatch_order,
    dispatch_plan,
    expected_seconds,
    next_for,
)

__all__ = ["CellCost", "Plan", "dispatch_order", "dispatch_plan", "expected_seconds", "next_for"]
