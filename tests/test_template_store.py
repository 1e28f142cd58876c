"""Templates outlive the sweep in the cache dir: a second sweep of the same
suite builds none, a changed `prepare` builds anew, concurrent sweeps build
once, and a stored template that no longer checks is rebuilt."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Suite, task_yaml

SuiteFactory = Callable[..., Suite]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    """A cache dir of the test's own, sharing the judges' bytecode with the others
    (building it takes a while and is tested elsewhere)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "bytecode").symlink_to(Path(os.environ["WFBENCH_CACHE_DIR"]) / "bytecode")
    return cache


def builds(cache: Path) -> list[str]:
    log = cache / "templates" / "templates" / "builds.log"
    return log.read_text().splitlines() if log.exists() else []


def sweep(pytester: pytest.Pytester, suite: Suite, cache: Path, out: str) -> None:
    suite.out = suite.root / out
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache)))
    result.assert_outcomes(passed=1)


def test_a_second_sweep_builds_no_template_and_a_changed_prepare_does(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-1")
    sweep(pytester, suite, cache_dir, "out-2")
    assert len(builds(cache_dir)) == 1 and builds(cache_dir)[0].startswith("built ")
    assert suite.row("fix-add-gold-r1")["stage_ms"]["template_build"] >= 0
    suite = suite_factory(tasks=[task_yaml(prepare="touch prepared.txt")], arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-3")
    assert len(builds(cache_dir)) == 2


def test_a_stored_template_that_no_longer_checks_is_rebuilt(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-1")
    stored = [p for p in (cache_dir / "templates" / "templates").iterdir() if p.is_dir()]
    assert len(stored) == 1
    calc = stored[0] / "calc.py"
    calc.write_text(calc.read_text() + "# changed in the cache\n")
    sweep(pytester, suite, cache_dir, "out-2")
    log = builds(cache_dir)
    assert len(log) == 3 and "does not check" in log[1] and log[2].startswith("built ")
    assert "changed in the cache" not in calc.read_text()
    assert suite.row("fix-add-gold-r1")["diff_files"] == 1


def test_concurrent_sweeps_share_one_build(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    outs = [suite.root / f"out-{i}" for i in range(2)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "--wfbench-tasks", str(suite.task_file), "--wfbench-out", str(out),
                          "--wfbench-cache-dir", str(cache_dir), "-q"],
                         cwd=suite.root, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
        for out in outs]
    for process in processes:
        output = process.communicate(timeout=600)[0].decode()
        assert process.returncode == 0, output
    assert len(builds(cache_dir)) == 1
    for out in outs:
        suite.out = out
        assert suite.row("fix-add-gold-r1")["resolved"] is True
