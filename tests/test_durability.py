"""A row is never lost: a crash, a raised error or a killed worker keeps the
rows of the cells that finished, each exactly once."""

from __future__ import annotations

import secrets
from collections import Counter

import pytest

from tests.conftest import script_arm, task_yaml, write_suite

KILLER = '''
import os
import signal

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "{before}" in item.nodeid:  # before the cell's session
        os.kill(os.getpid(), signal.SIGKILL)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if "{after}" in item.nodeid:  # its session completed, judged
        os.kill(os.getpid(), signal.SIGKILL)
'''
RAISER = '''
import pytest_wfbench.fixtures as fixtures

run_verify = fixtures.run_verify


def exploding_verify(task, sandbox, workspace, **kwargs):
    if task.id == "{victim}":
        raise RuntimeError("boom inside the verify stage")
    return run_verify(task, sandbox, workspace, **kwargs)


def pytest_configure(config):
    fixtures.run_verify = exploding_verify
'''


def test_killing_a_worker_keeps_finished_rows_exactly_once(pytester: pytest.Pytester) -> None:
    tasks = [task_yaml(f"task-{i}") for i in range(5)]
    suite = write_suite(pytester.path, tasks=tasks, arms=["gold"])
    pytester.makeconftest(KILLER.format(before="task-2-gold-r1", after="task-4-gold-r1"))
    result = pytester.runpytest_subprocess(*suite.args("-n", "2", "-p", "xdist"))
    result.stdout.fnmatch_lines(["*worker*crashed*"])
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert all(n == 1 for n in counts.values()), counts
    finished = {f"task-{i}-gold-r1" for i in (0, 1, 3)}
    for cell_id in finished:
        assert suite.row(cell_id)["resolved"] is True
    crashed = suite.row("task-2-gold-r1")
    assert crashed["error_kind"] == "infra-error" and "died" in crashed["error_detail"]
    assert crashed["counted"] is False
    # Dying while judging what the arm left cannot make the cell excluded.
    judged = suite.row("task-4-gold-r1")
    assert judged["error_kind"] == "evidence-tampered" and judged["counted"] is True
    assert "after its session had completed" in judged["error_detail"]
    assert (suite.out / "report.md").exists()


def test_an_error_raised_inside_a_cell_keeps_every_row(pytester: pytest.Pytester) -> None:
    tasks = [task_yaml(f"task-{i}") for i in range(3)]
    suite = write_suite(pytester.path, tasks=tasks, arms=["gold"])
    pytester.makeconftest(RAISER.format(victim="task-1"))
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(passed=2, errors=1)
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert counts == {"task-0-gold-r1": 1, "task-1-gold-r1": 1, "task-2-gold-r1": 1}
    broken = suite.row("task-1-gold-r1")
    assert broken["error_kind"] == "harness-error" and broken["counted"] is True
    assert "verify: RuntimeError: boom inside the verify stage" in broken["error_detail"]
    assert suite.row("task-2-gold-r1")["resolved"] is True


INTERRUPTER = '''
import os
import signal
import threading
import time
from pathlib import Path

import pytest


def _running(marker):
    """Whether a process whose arguments end with ``marker`` exists (the
    sandboxed step, seen from the host's /proc)."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\\0")
        except OSError:
            continue
        if argv[-1:] == [b""]:
            argv = argv[:-1]
        if argv and argv[0].endswith(b"sleep") and argv[-1] == marker.encode():
            return True
    return False


def _interrupt_when_running(marker, record):
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        if _running(marker):
            record.write_text("step running")
            break
        time.sleep(0.05)
    else:
        record.write_text("deadline: the step was never seen running")
    os.kill(os.getpid(), signal.SIGINT)


def pytest_configure(config):
    # Ctrl-C raises KeyboardInterrupt even when this sweep was started by a
    # process that ignores SIGINT (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "{victim}" in item.nodeid:
        threading.Thread(target=_interrupt_when_running,
                         args=("{marker}", Path("{record}")), daemon=True).start()
'''


def test_ctrl_c_records_the_interrupted_cell_once_and_the_rest_as_not_run(
    pytester: pytest.Pytester
) -> None:
    # Only the slow task's step sleeps long, for a duration no other process has:
    # Ctrl-C comes once that very step is seen running, not after a guessed delay.
    marker = f"50.{secrets.randbelow(10**6):06d}"
    tasks = [task_yaml("first"),
             task_yaml("slow", sandbox={"env": {"WFBENCH_TEST_SLEEP": marker}}),
             task_yaml("third")]
    suite = write_suite(pytester.path, tasks=tasks, arms=["sleeper"],
                        arm_definitions={"sleeper": script_arm(
                            'sleep "${WFBENCH_TEST_SLEEP:-0.2}"')})
    record = pytester.path / "interrupted.txt"
    pytester.makeconftest(INTERRUPTER.format(victim="slow-sleeper-r1", marker=marker,
                                             record=record))
    result = pytester.runpytest_subprocess(*suite.args())
    assert record.read_text() == "step running"
    assert result.ret == pytest.ExitCode.INTERRUPTED
    counts = Counter(row["cell_id"] for row in suite.rows())
    assert counts == {"first-sleeper-r1": 1, "slow-sleeper-r1": 1, "third-sleeper-r1": 1}
    assert suite.row("first-sleeper-r1")["error_kind"] == "oracle-failed"
    slow = suite.row("slow-sleeper-r1")
    assert slow["error_kind"] == "cancelled"
    assert suite.row("third-sleeper-r1")["status"] == "skipped"
    assert "cancelled" in (suite.out / "report.md").read_text()


CHANGER = '''
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    # On the controller only, exactly once: after the wfbench plugin captured the
    # oracle (its pytest_configure), before xdist starts the workers (its
    # trylast pytest_sessionstart). Workers then see the changed file.
    if not hasattr(session.config, "workerinput"):
        oracle = Path("{oracle}")
        oracle.write_text(oracle.read_text() + "\\n# changed after sweep start\\n")
'''


def test_workers_judge_with_the_oracle_captured_at_sweep_start(
    pytester: pytest.Pytester
) -> None:
    suite = write_suite(pytester.path, arms=["gold"])
    oracle = suite.root / "oracle" / "test_oracle.py"
    original = oracle.read_text()
    pytester.makeconftest(CHANGER.format(oracle=oracle))
    result = pytester.runpytest_subprocess(*suite.args("-n", "2"))
    # The file was changed once, by the controller, before any worker existed.
    assert oracle.read_text() == original + "\n# changed after sweep start\n"
    result.assert_outcomes(errors=1)
    row = suite.row("fix-add-gold-r1")
    assert row["worker"].startswith("gw"), row["worker"]  # judged on a worker
    assert row["error_kind"] == "oracle-unavailable"
    assert "changed during the sweep" in row["error_detail"]
