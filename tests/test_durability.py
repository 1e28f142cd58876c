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


INTERRUPTER = '''
import os
import signal
import threading

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "{victim}" in item.nodeid:
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
'''


def test_ctrl_c_records_the_interrupted_cell_once_and_the_rest_as_not_run(
    pytester: pytest.Pytester
) -> None:
    from tests.conftest import script_arm

    tasks = [task_yaml(name) for name in ("first", "slow", "third")]
    suite = write_suite(pytester.path, tasks=tasks, arms=["sleeper"],
                        arm_definitions={"sleeper": script_arm("sleep 4")})
    pytester.makeconftest(INTERRUPTER.format(victim="slow-sleeper-r1"))
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret == pytest.ExitCode.INTERRUPTED
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert counts == {"first-sleeper-r1": 1, "slow-sleeper-r1": 1, "third-sleeper-r1": 1}
    assert suite.row("first-sleeper-r1")["error_kind"] == "oracle-failed"
    assert suite.row("slow-sleeper-r1")["error_kind"] == "cancelled"
    assert suite.row("third-sleeper-r1")["status"] == "skipped"
    assert "cancelled" in (suite.out / "report.md").read_text()


CHANGER = '''
from pathlib import Path


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # after the controller captured the oracle
        oracle = Path("{oracle}")
        oracle.write_text(oracle.read_text() + "\\n# changed after sweep start\\n")
'''


def test_workers_judge_with_the_oracle_captured_at_sweep_start(
    pytester: pytest.Pytester
) -> None:
    suite = write_suite(pytester.path, arms=["gold"])
    pytester.makeconftest(CHANGER.format(oracle=suite.root / "oracle" / "test_oracle.py"))
    result = pytester.runpytest_subprocess(*suite.args("-n", "2"))
    result.assert_outcomes(errors=1)
    row = suite.row("fix-add-gold-r1")
    assert row["error_kind"] == "oracle-unavailable"
    assert "changed during the sweep" in row["error_detail"]
