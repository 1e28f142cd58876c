"""Shards: the pure split of a sweep's tasks (every cell in exactly one shard,
a task's cells together, balanced by expected cost) and its options."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_wfbench.shard import (
    Shard,
    ShardError,
    TaskCells,
    assign,
    expected_costs,
    parse_shard,
    parse_sweep_id,
    shard_loads,
    split,
)
from tests.conftest import Suite, task_yaml

SuiteFactory = Callable[..., Suite]


def tasks_of(spec: dict[str, int], arms: tuple[str, ...] = ("gold", "noop")) -> list[TaskCells]:
    """Tasks with ``runs`` runs of each arm."""
    return [TaskCells(task, tuple((f"{task}-{arm}-r{run}", arm) for arm in arms
                                  for run in range(1, runs + 1)))
            for task, runs in spec.items()]


@given(st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=12), st.data())
@settings(max_examples=200, deadline=None)
def test_every_cell_is_in_exactly_one_shard_and_a_tasks_cells_stay_together(
    runs: list[int], count: int, data: st.DataObject
) -> None:
    tasks = tasks_of({f"t{i}": n for i, n in enumerate(runs)})
    count = min(count, len(tasks))
    earlier = [{"cell_id": cell_id, "arm": arm, "status": "ran",
                "duration_s": data.draw(st.floats(min_value=0, max_value=1e4))}
               for task in tasks for cell_id, arm in task.cells
               if data.draw(st.booleans())]
    assignment = split(tasks, count, earlier)
    shards = {}
    for index in range(1, count + 1):
        shards[index] = [cell for task in tasks if assignment[task.task] == index
                         for cell, _ in task.cells]
    every = [cell for task in tasks for cell, _ in task.cells]
    selected = [cell for cells in shards.values() for cell in cells]
    assert sorted(selected) == sorted(every) and len(selected) == len(set(selected))
    assert all(shards[index] for index in shards), "no shard is empty"
    # The same inputs give the same split (every xdist worker computes it again).
    assert split(tasks, count, earlier) == assignment


def test_without_earlier_rows_a_task_weighs_its_cell_count() -> None:
    tasks = tasks_of({"a": 3, "b": 1, "c": 1, "d": 1})
    assert expected_costs(tasks) == {"a": 6.0, "b": 2.0, "c": 2.0, "d": 2.0}
    # Longest first: a alone on shard 1, the rest on shard 2 (6 cells each).
    assert assign([t.task for t in tasks], expected_costs(tasks), 2) == {
        "a": 1, "b": 2, "c": 2, "d": 2}


def test_earlier_durations_weigh_the_tasks_and_fill_the_gaps() -> None:
    tasks = tasks_of({"a": 1, "b": 1, "c": 1}, arms=("gold", "agent"))
    earlier = [
        {"cell_id": "a-agent-r1", "arm": "agent", "status": "ran", "duration_s": 100.0},
        {"cell_id": "a-gold-r1", "arm": "gold", "status": "ran", "duration_s": 2.0},
        {"cell_id": "b-agent-r1", "arm": "agent", "status": "ran", "duration_s": 60.0},
        {"cell_id": "b-gold-r1", "arm": "gold", "status": "skipped", "duration_s": 0.0},
        {"cell_id": "a-agent-r1", "arm": "agent", "status": "ran", "duration_s": 80.0},
    ]
    costs = expected_costs(tasks, earlier)
    # The last row of a cell counts; a cell without a row costs its arm's median
    # (agent: median of 80 and 60 = 70; gold: 2); a skip measured nothing.
    assert costs == {"a": 82.0, "b": 62.0, "c": 72.0}
    assignment = split(tasks, 2, earlier)
    assert assignment == {"a": 1, "c": 2, "b": 2}
    assert shard_loads(tasks, assignment, costs, 2) == [82.0, 134.0]


def best_split(costs: list[float], count: int) -> float:
    """The best possible longest shard, by trying every assignment."""
    best = float("inf")
    for choice in itertools.product(range(count), repeat=len(costs)):
        loads = [0.0] * count
        for cost, index in zip(costs, choice, strict=True):
            loads[index] += cost
        best = min(best, max(loads))
    return best


@given(st.lists(st.integers(min_value=1, max_value=50), min_size=2, max_size=7),
       st.integers(min_value=2, max_value=3))
@settings(max_examples=100, deadline=None)
def test_the_longest_shard_is_within_graham_s_bound_of_the_best_split(
    costs: list[int], count: int
) -> None:
    names = [f"t{i}" for i in range(len(costs))]
    weights = {name: float(cost) for name, cost in zip(names, costs, strict=True)}
    assignment = assign(names, weights, count)
    loads = [sum(weights[t] for t in names if assignment[t] == i) for i in range(1, count + 1)]
    optimum = best_split([float(c) for c in costs], count)
    assert max(loads) <= (4 / 3 - 1 / (3 * count)) * optimum + 1e-9


def test_more_shards_than_tasks_is_refused() -> None:
    with pytest.raises(ShardError, match=r"the sweep has 2 tasks .* use at most 2 shards"):
        split(tasks_of({"a": 1, "b": 1}), 3)


@pytest.mark.parametrize(("text", "expected"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)),
                                                 (" 3 / 3 ", Shard(3, 3))])
def test_a_shard_is_i_of_n_counted_from_one(text: str, expected: Shard) -> None:
    assert parse_shard(text) == expected
    assert expected.label == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "2", "a/b", "-1/3", "1/3/4", ""])
def test_a_bad_shard_says_what_it_should_be(text: str) -> None:
    with pytest.raises(ValueError, match="I/N"):
        parse_shard(text)


@pytest.mark.parametrize("text", ["run-123", "20261201T0000Z-ab12", "a", "x.y_z"])
def test_sweep_ids(text: str) -> None:
    assert parse_sweep_id(text) == text


@pytest.mark.parametrize("text", ["", "-x", "a b", "a/b", "x" * 129, "é"])
def test_bad_sweep_ids(text: str) -> None:
    with pytest.raises(ValueError, match="a sweep id is"):
        parse_sweep_id(text)


@pytest.mark.parametrize(("args", "message"), [
    (("--wfbench-shard", "4/3", "--wfbench-sweep-id", "s1"),
     "*--wfbench-shard: shard I/N needs 1 <= I <= N*'4/3'*"),
    (("--wfbench-shard", "1/2"), "*--wfbench-shard 1/2 needs --wfbench-sweep-id ID*"),
    (("--wfbench-shard", "1/2", "--wfbench-sweep-id", "bad id"),
     "*--wfbench-sweep-id: a sweep id*"),
    (("--wfbench-shard-balance", "nowhere"), "*--wfbench-shard-balance * needs --wfbench-shard*"),
    (("--wfbench-shard", "1/2", "--wfbench-sweep-id", "s1", "--wfbench-shard-balance", "nowhere"),
     "*--wfbench-shard-balance nowhere: * is not the out dir of a sweep*"),
    (("--wfbench-shard", "1/3", "--wfbench-sweep-id", "s1"),
     "*--wfbench-shard 1/3: the sweep has 2 tasks*use at most 2 shards*"),
])
def test_shard_options_are_validated_as_usage_errors(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, args: tuple[str, ...], message: str
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")])
    result = pytester.runpytest_subprocess(*suite.args(*args))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert not (suite.out / "results.jsonl").exists()


def test_a_shard_runs_its_tasks_and_says_so_in_every_row_and_in_sweep_json(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2"),
                                 task_yaml("fix-add-3")])
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-shard", "1/2", "--wfbench-sweep-id", "ci-42", "--collect-only", "-q"))
    # Three tasks of two cells over two shards, longest first: fix-add to shard 1,
    # fix-add-2 to shard 2, fix-add-3 to the first of the two equally loaded.
    result.stdout.fnmatch_lines(["*test_cell[[]fix-add-gold-r1[]]", "*fix-add-noop-r1*",
                                 "*test_cell[[]fix-add-3-gold-r1[]]", "*fix-add-3-noop-r1*",
                                 "4 tests collected*"])
    # Every xdist worker collects again and must pick the same cells.
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-shard", "2/2", "--wfbench-sweep-id", "ci-42", "-n", "2"))
    result.assert_outcomes(passed=1, xfailed=1)
    rows = suite.rows()
    assert {(r["cell_id"], r["shard"], r["sweep_id"]) for r in rows} == {
        ("fix-add-2-gold-r1", "2/2", "ci-42"), ("fix-add-2-noop-r1", "2/2", "ci-42")}
    record = json.loads((suite.out / "sweep.json").read_text())
    assert record["sweep_id"] == "ci-42"
    assert record["shard"]["label"] == "2/2"
    assert record["shard"]["assignment"] == {"fix-add": 1, "fix-add-2": 2, "fix-add-3": 1}
    assert record["shard"]["expected_loads"] == [4.0, 2.0]
    report = (suite.out / "report.md").read_text()
    assert "- shard: 2/2 of sweep ci-42" in report
    # Resuming a shard's out dir as another shard is refused, naming both.
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-resume", "--wfbench-shard", "1/2", "--wfbench-sweep-id", "ci-42"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*holds shard 2/2 of sweep ci-42, not shard 1/2*"])
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-resume", "--wfbench-shard", "2/2", "--wfbench-sweep-id", "other"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--wfbench-sweep-id other: the sweep in * to resume is ci-42*"])
