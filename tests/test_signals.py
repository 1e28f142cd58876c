"""SIGTERM and SIGHUP behave like Ctrl-C, serially and under -n, sent to the
controller or to the whole process group: no sandboxed process outlives the
sweep, every cell has its row exactly once, the report says the evidence is
partial, the work dir is gone and the exit status is pytest's INTERRUPTED. A
second signal during the clean-up loses nothing."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import Suite, script_arm, task_yaml, write_suite


def sleeping(marker: str) -> list[int]:
    """Processes (seen from the host's /proc) running ``sleep <marker>``."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [arg for arg in argv if arg]
        if len(argv) == 2 and argv[0].endswith(b"sleep") and argv[1] == marker.encode():
            found.append(int(entry.name))
    return found


def slow_suite(base: Path, marker: str) -> Suite:
    """Two slow cells (one per worker under -n 2) sleep for ``marker`` seconds,
    a duration no other process has; the other cells are quick."""
    slow = {"sandbox": {"env": {"WFBENCH_TEST_SLEEP": marker}}}
    tasks = [task_yaml("quick-1"), task_yaml("slow-1", **slow), task_yaml("slow-2", **slow),
             task_yaml("quick-2"), task_yaml("quick-3"), task_yaml("quick-4")]
    return write_suite(base, tasks=tasks, arms=["sleeper"], arm_definitions={
        "sleeper": script_arm('sleep "${WFBENCH_TEST_SLEEP:-0.1}"')})


def signals_by_default() -> None:
    """The sweep's signals as a terminal gives them: a suite run under nohup
    ignores SIGHUP, and a sweep started so rightly leaves an ignored signal
    ignored (control/signals.py), which is not what these tests are about."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def a_worker(suite: Suite) -> int:
    """The pid of one of the sweep's xdist workers (they register in its work dir)."""
    record = json.loads((suite.out / "sweep.json").read_text())
    workers = Path(record["sessions"][-1]["work_dir"]) / "workers"
    return int(sorted(workers.iterdir())[0].name)


def interrupt(suite: Suite, cwd: Path, extra: list[str], *, group: bool | None, signum: int,
              twice: bool, running: int, marker: str) -> int:
    command = [sys.executable, "-m", "pytest", *suite.args(*extra)]
    process = subprocess.Popen(command, cwd=cwd, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               preexec_fn=signals_by_default)
    try:
        deadline = time.monotonic() + 120
        while len(sleeping(marker)) < running:
            assert time.monotonic() < deadline, "the slow cells never ran"
            assert process.poll() is None, process.stdout.read().decode() if process.stdout \
                else "ended"
            time.sleep(0.05)
        for _ in range(2 if twice else 1):
            if group is None:
                os.kill(a_worker(suite), signum)
            elif group:
                os.killpg(process.pid, signum)
            else:
                os.kill(process.pid, signum)
            time.sleep(0.2)
        output, _ = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    print(output.decode(errors="replace"))
    return process.returncode


CASES = {
    "SIGTERM to the controller, serial": ([], False, signal.SIGTERM, False, 1),
    "SIGHUP to the process group, serial": ([], True, signal.SIGHUP, False, 1),
    "two Ctrl-C in quick succession, serial": ([], True, signal.SIGINT, True, 1),
    "SIGTERM to the controller, -n 2": (["-n", "2"], False, signal.SIGTERM, False, 2),
    "SIGTERM to the process group, -n 2": (["-n", "2"], True, signal.SIGTERM, False, 2),
    "two Ctrl-C in quick succession, -n 2": (["-n", "2"], True, signal.SIGINT, True, 2),
    "SIGTERM to a worker, -n 2": (["-n", "2"], None, signal.SIGTERM, False, 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_signal_cancels_the_sweep_and_keeps_every_row(pytester: pytest.Pytester,
                                                        case: str) -> None:
    extra, group, signum, twice, running = CASES[case]
    marker = f"70.{secrets.randbelow(10**6):06d}"
    suite = slow_suite(pytester.path, marker)
    code = interrupt(suite, pytester.path, [*extra, "--dist", "load"] if extra else extra,
                     group=group, signum=signum, twice=twice, running=running, marker=marker)
    assert code == pytest.ExitCode.INTERRUPTED
    assert sleeping(marker) == [], "a sandboxed process outlived the sweep"
    counts = Counter(row["cell_id"] for row in suite.rows())
    cells = {f"{task}-sleeper-r1" for task in ("quick-1", "slow-1", "slow-2", "quick-2",
                                               "quick-3", "quick-4")}
    assert set(counts) == cells and set(counts.values()) == {1}, counts
    kinds = {row["cell_id"]: row["error_kind"] or row["status"] for row in suite.rows()}
    cancelled = [cell for cell, kind in kinds.items() if kind == "cancelled"]
    assert len(cancelled) == running and all("slow" in cell for cell in cancelled), kinds
    name = signal.Signals(signum).name
    for row in suite.rows():
        if row["status"] == "skipped":
            assert row["skip_reason"] == f"not run: the sweep was cancelled ({name})"
    report = (suite.out / "report.md").read_text()
    assert "**cancelled: partial evidence (the sweep was cancelled" in report
    record = json.loads((suite.out / "sweep.json").read_text())
    assert record["sessions"][-1]["state"] == "cancelled"
    assert not Path(record["sessions"][-1]["work_dir"]).exists(), "the work dir is left"
