"""Cells handed out longest expected first (pytest_wfbench.schedule): the pure
order, the history in the cache dir, the xdist scheduler played through its
protocol, and a real sweep at -n 2."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.scheduling import Worker, play
from pytest_wfbench.schedule.history import FILE, MAX_ENTRIES, DurationHistory
from pytest_wfbench.schedule.order import (
    CellCost,
    Plan,
    dispatch_order,
    expected_seconds,
    history_key,
    medians,
    next_for,
)
from pytest_wfbench.schedule.xdist import CostFirstScheduling
from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]


def test_history_beats_the_arm_median_which_beats_the_prior() -> None:
    cells = [CellCost("a", "x", 1, 5.0), CellCost("b", "x", 1, 5.0), CellCost("c", "y", 1, 7.0)]
    history = {history_key("a", "x"): 30.0, history_key("z", "x"): 10.0}
    assert expected_seconds(cells, history) == [30.0, 20.0, 7.0]


def test_the_longest_go_first_and_equals_go_run_by_run() -> None:
    cells = [CellCost(task, arm, run, prior)
             for task in ("t1", "t2") for arm, prior in (("gold", 1.0), ("agent", 120.0))
             for run in (1, 2)]
    order = [(cells[i].task, cells[i].arm, cells[i].run) for i in dispatch_order(cells, {})]
    assert order == [("t1", "agent", 1), ("t2", "agent", 1), ("t1", "agent", 2),
                     ("t2", "agent", 2), ("t1", "gold", 1), ("t2", "gold", 1),
                     ("t1", "gold", 2), ("t2", "gold", 2)]


def test_medians_per_task_and_arm() -> None:
    assert medians([("t", "a", 1.0), ("t", "a", 3.0), ("t", "a", 10.0), ("t", "b", 2.0)]) == {
        history_key("t", "a"): 3.0, history_key("t", "b"): 2.0}


def test_the_history_merges_keeps_the_newest_and_survives_a_bad_file(tmp_path: Path) -> None:
    history = DurationHistory(tmp_path)
    assert history.load() == {}
    history.record({"a\0x": 1.0, "b\0x": 2.0}, now=100)
    history.record({"a\0x": 4.0}, now=200)
    assert history.load() == {"a\0x": 4.0, "b\0x": 2.0}
    (tmp_path / FILE).write_text("{not json")
    assert history.load() == {}
    (tmp_path / FILE).write_text(json.dumps({"format": 1, "entries": {
        "ok\0x": [3.0, 1.0], "negative\0x": [-1.0, 1.0], "text\0x": ["5", 1.0]}}))
    assert history.load() == {"ok\0x": 3.0}


def test_the_history_keeps_the_most_recent_entries(tmp_path: Path) -> None:
    history = DurationHistory(tmp_path)
    history.record({f"old{i}\0x": 1.0 for i in range(MAX_ENTRIES)}, now=1)
    history.record({"new\0x": 2.0}, now=2)
    kept = history.load()
    assert len(kept) == MAX_ENTRIES and kept["new\0x"] == 2.0


def test_uneven_cells_end_near_the_ideal_when_their_lengths_are_known() -> None:
    rng = random.Random(7)
    durations = [0.9 + 8.2 * i / 23 for i in range(24)]
    rng.shuffle(durations)
    ideal = sum(durations) / 4
    longest_first = sorted(range(24), key=lambda i: -durations[i])
    known, started = play(durations, 4, longest_first, durations)
    assert known <= 1.01 * ideal
    assert started[:4] == longest_first[:4]
    blind, _ = play(durations, 4)
    assert known < blind
    # Handing the longest left to whichever worker asks (each asks for its next
    # cell as it starts one) ends later: a long cell waits on a worker free last.
    asking, _ = play(durations, 4, longest_first, [1.0] * 24)
    assert known < asking


def test_the_next_cell_goes_where_handing_out_in_order_would_put_it() -> None:
    costs = [9.0, 8.0, 7.0, 6.0, 5.0, 1.0]
    queue = [0, 1, 2, 3, 4, 5]
    # Worker 0 is free at 10, worker 1 at 2: the longest goes to worker 1.
    assert next_for([10.0, 2.0], 1, queue, costs, lookahead=5) == 0
    assert next_for([10.0, 2.0], 0, queue, costs, lookahead=5) == 1
    assert next_for([10.0, 2.0, 2.5], 0, queue, costs, lookahead=5) == 2
    assert next_for([100.0, 0.0], 0, queue, costs, lookahead=3) == 0  # none within reach


def test_fewer_cells_than_workers_hold_all_run() -> None:
    makespan, started = play([3.0, 1.0], 4)
    assert makespan == 3.0 and sorted(started) == [0, 1]


def test_a_dead_workers_cells_go_back_to_the_front() -> None:
    collection = [f"t.yaml::test_cell[c{i}]" for i in range(6)]
    scheduler = CostFirstScheduling(lambda ids: Plan(list(range(len(ids))), [1.0] * len(ids)),
                                    clock=lambda: 0.0)
    a, b = Worker("gw0"), Worker("gw1")
    for node in (a, b):
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    assert (a.held, b.held) == ([0, 2], [1, 3])
    assert scheduler.remove_node(a) == collection[0]
    assert list(scheduler.queue) == [2, 4, 5]
    scheduler.mark_test_complete(b, 1)
    assert b.held == [1, 3, 2]
    assert not scheduler.tests_finished and scheduler.has_pending


def test_a_sweep_at_n2_starts_the_cell_known_to_be_longest_and_records_durations(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, tmp_path: Path
) -> None:
    suite = suite_factory(tasks=[task_yaml(f"t{i}") for i in range(3)], arms=["gold"])
    cache = tmp_path / "cache"
    DurationHistory(cache).record({history_key("t2", "gold"): 600.0,
                                   history_key("t0", "gold"): 0.5,
                                   history_key("t1", "gold"): 0.1})
    result = pytester.runpytest_subprocess(
        *suite.args("-n", "2", "-v", "--wfbench-cache-dir", str(cache)))
    result.stdout.fnmatch_lines(["*scheduling tests via CostFirstScheduling*"])
    assert result.ret == 0
    started = {row["task"]: row["started_at"] for row in suite.rows()}
    # gw0 holds t2 then t1, gw1 holds t0: t1 waits for t2.
    assert started["t2"] < started["t1"]
    recorded = DurationHistory(cache).load()
    assert recorded[history_key("t2", "gold")] < 600.0  # this sweep's figure replaced it


def test_a_serial_sweep_records_durations_and_the_users_dist_is_kept(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, tmp_path: Path
) -> None:
    arms: dict[str, Any] = {"quick": script_arm("true")}
    suite = suite_factory(tasks=[task_yaml("t0"), task_yaml("t1")], arms=["quick"],
                          arm_definitions=arms)
    cache = tmp_path / "cache"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache)))
    assert result.ret == 1  # a script arm that changes nothing does not resolve
    assert set(DurationHistory(cache).load()) == {history_key("t0", "quick"),
                                                  history_key("t1", "quick")}
    suite.out = suite.root / "out-2"
    result = pytester.runpytest_subprocess(
        *suite.args("-n", "2", "-v", "--dist", "load", "--wfbench-cache-dir", str(cache)))
    result.stdout.fnmatch_lines(["*scheduling tests via LoadScheduling*"])


def test_expected_lengths_that_are_wrong_still_run_every_cell_and_end_near_ideal() -> None:
    """The next-cell rule plays the queue ahead on expected lengths: when they are
    off by up to 40 % (an earlier sweep's medians, a cell that now takes longer),
    every cell still runs, no end is far from the ideal, and on average the end
    beats handing cells out blind."""
    planned, blinds = [], []
    for shuffle in range(10):
        durations = [0.9 + 8.2 * i / 23 for i in range(24)]
        random.Random(shuffle).shuffle(durations)
        ideal = sum(durations) / 4
        blinds.append(play(durations, 4)[0] / ideal)
        for trial in range(5):
            noisy = random.Random(100 * shuffle + trial)
            expected = [d * noisy.uniform(0.6, 1.4) for d in durations]
            order = sorted(range(24), key=lambda i: -expected[i])
            makespan, started = play(durations, 4, order, expected)
            assert sorted(started) == list(range(24))
            planned.append(makespan / ideal)
    assert max(planned) <= 1.15
    assert sum(planned) / len(planned) < sum(blinds) / len(blinds)
    for workers in (1, 2, 7, 30):  # more workers than cells too
        makespan, started = play(durations, workers, order, expected)
        assert sorted(started) == list(range(24)) and makespan >= max(durations)
