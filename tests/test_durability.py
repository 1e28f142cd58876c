"""A row is never lost: a crash, a raised error or a killed worker keeps the
rows of the cells that finished, each exactly once."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import task_yaml, write_suite

KILLER = '''
import os
import signal

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if "{victim}" in item.nodeid:
        os.kill(os.getpid(), signal.SIGKILL)
'''
RAISER = '''
import pytest


@pytest.fixture(autouse=True)
def explode(request):
    yield
    if "{victim}" in request.node.nodeid:
        raise RuntimeError("boom inside the cell")
'''


def test_killing_a_worker_keeps_finished_rows_exactly_once(pytester: pytest.Pytester) -> None:
    tasks = [task_yaml(f"task-{i}") for i in range(4)]
    suite = write_suite(pytester.path, tasks=tasks, arms=["gold"])
    pytester.makeconftest(KILLER.format(victim="task-2-gold-r1"))
    result = pytester.runpytest_subprocess(*suite.args("-n", "2", "-p", "xdist"))
    result.stdout.fnmatch_lines(["*worker*crashed*"])
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert all(n == 1 for n in counts.values()), counts
    finished = {f"task-{i}-gold-r1" for i in (0, 1, 3)}
    for cell_id in finished:
        assert suite.row(cell_id)["resolved"] is True
    crashed = suite.row("task-2-gold-r1")
    assert crashed["error_kind"] == "infra-error" and "died" in crashed["error_detail"]
    assert (suite.out / "report.md").exists()


def test_an_error_raised_inside_a_cell_keeps_every_row(pytester: pytest.Pytester) -> None:
    tasks = [task_yaml(f"task-{i}") for i in range(3)]
    suite = write_suite(pytester.path, tasks=tasks, arms=["gold"])
    pytester.makeconftest(RAISER.format(victim="task-1-gold-r1"))
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(passed=3, errors=1)
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert counts == {"task-0-gold-r1": 1, "task-1-gold-r1": 1, "task-2-gold-r1": 1}
