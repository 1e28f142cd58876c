"""The oracle's expected tests outlive the sweep in the cache dir: a second
sweep of the same suite calibrates nothing, a changed oracle file or gold patch
calibrates again, and a stored entry that does not check is ignored and
established again."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_wfbench.expectations import (
    LOG,
    ExpectationInputs,
    ExpectationStore,
    decode_entry,
    encode_entry,
    expectation_key,
    policy_key,
)
from pytest_wfbench.judge.expected import Expectation
from tests.conftest import GOLD, ORACLE_TEST, Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]
INPUTS = ExpectationInputs(template="t", oracle="o", hidden="h", command="python -m pytest",
                           plugins=("p",), gold="g", interpreter="i")
FOUND = Expectation("tests", frozenset({"a.py::test_a", "b.py::test_b"}), "gold")


def test_every_input_changes_the_key() -> None:
    changed = [dataclasses.replace(INPUTS, template="t2"),
               dataclasses.replace(INPUTS, oracle="o2"),
               dataclasses.replace(INPUTS, hidden="h2"),
               dataclasses.replace(INPUTS, command="python -m pytest -x"),
               dataclasses.replace(INPUTS, plugins=("p", "q")),
               dataclasses.replace(INPUTS, gold="g2"),
               dataclasses.replace(INPUTS, interpreter="i2"),
               dataclasses.replace(INPUTS, sandbox=policy_key((), {"X": "1"})),
               dataclasses.replace(INPUTS, sandbox=policy_key(("/opt/data",), {}))]
    keys = {expectation_key(inputs, "site") for inputs in [INPUTS, *changed]}
    keys.add(expectation_key(INPUTS, "other judge files"))
    assert len(keys) == 11


def test_an_entry_reads_back_only_under_its_key_and_unchanged() -> None:
    text = encode_entry("k1", FOUND)
    assert decode_entry("k1", text) == FOUND
    with pytest.raises(ValueError, match="another key"):
        decode_entry("k2", text)
    changed = json.loads(text)
    changed["expectation"]["tests"].append("c.py::test_planted")
    with pytest.raises(ValueError, match="digest"):
        decode_entry("k1", json.dumps(changed))
    for broken in ("", "{", "[]", text[: len(text) // 2], json.dumps({"format": 1})):
        with pytest.raises(ValueError):
            decode_entry("k1", broken)


def test_the_store_ignores_and_removes_an_entry_that_does_not_check(tmp_path: Path) -> None:
    store = ExpectationStore(tmp_path / "expectations")
    assert store.load("k1") is None
    with store.lock("k1"):
        store.save("k1", FOUND, "test")
    assert store.load("k1") == FOUND
    entry = tmp_path / "expectations" / "k1.json"
    entry.write_text(entry.read_text().replace("test_a", "test_x"))
    assert store.load("k1") is None and not entry.exists()
    log = (tmp_path / "expectations" / "calibrations.log").read_text().splitlines()
    assert log[0].startswith("calibrated k1") and "does not check" in log[1]


def test_eviction_keeps_the_most_recently_used(tmp_path: Path) -> None:
    store = ExpectationStore(tmp_path)
    for index in range(5):
        store.save(f"k{index}", FOUND, "test")
        os.utime(tmp_path / f"k{index}.json", (1000.0 + index, 1000.0 + index))
    store.evict(keep="k0", max_entries=2)
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ["k0", "k3", "k4"]


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    """A cache dir of the test's own, sharing the judges' bytecode with the others."""
    cache = tmp_path / "cache"
    cache.mkdir()
    shared = Path(os.environ["WFBENCH_CACHE_DIR"]) / "bytecode"
    shared.mkdir(parents=True, exist_ok=True)  # a fresh checkout has none yet
    (cache / "bytecode").symlink_to(shared)
    return cache


def calibrations(cache: Path) -> list[str]:
    log = cache / "expectations" / LOG
    return [line for line in log.read_text().splitlines()
            if line.startswith("calibrated ")] if log.exists() else []



def sweep(pytester: pytest.Pytester, suite: Suite, cache: Path, out: str) -> dict[str, object]:
    suite.out = suite.root / out
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache)))
    result.assert_outcomes(passed=1)
    return suite.row("fix-add-gold-r1")


def test_a_second_sweep_calibrates_nothing_and_changed_inputs_calibrate_again(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    first = sweep(pytester, suite, cache_dir, "out-1")
    assert len(calibrations(cache_dir)) == 1 and first["oracle_tests_expected"] == 2
    second = sweep(pytester, suite, cache_dir, "out-2")
    assert len(calibrations(cache_dir)) == 1
    assert second["resolved"] is True and second["oracle_tests_expected"] == 2

    oracle = suite.root / "oracle" / "test_oracle.py"
    oracle.write_text(ORACLE_TEST + "\n\ndef test_add_zero():\n    assert add(0, 4) == 4\n")
    third = sweep(pytester, suite, cache_dir, "out-3")
    assert len(calibrations(cache_dir)) == 2 and third["oracle_tests_expected"] == 3

    (suite.root / "gold.patch").write_text(GOLD.replace("+    return a + b",
                                                        "+    return b + a"))
    sweep(pytester, suite, cache_dir, "out-4")
    assert len(calibrations(cache_dir)) == 3


def test_a_stored_expectation_that_does_not_check_is_established_again(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    suite = suite_factory(arms=["gold"])
    sweep(pytester, suite, cache_dir, "out-1")
    [entry] = (cache_dir / "expectations").glob("*.json")
    # A planted expectation (one test fewer) without a matching digest is not believed.
    data = json.loads(entry.read_text())
    data["expectation"]["tests"] = data["expectation"]["tests"][:1]
    entry.write_text(json.dumps(data))
    row = sweep(pytester, suite, cache_dir, "out-2")
    assert row["oracle_tests_expected"] == 2
    log = (cache_dir / "expectations" / LOG).read_text()
    assert "does not check" in log and len(calibrations(cache_dir)) == 2
    assert decode_entry(entry.stem, entry.read_text()).tests == frozenset(
        json.loads(entry.read_text())["expectation"]["tests"])


GATED_CALC = '''\
def add(a, b):
    return a - b


def sub(a, b):
    return a + b


def double(x):
    return 2 * x
'''
# (context lines of a patch are a single space: built, not typed)
GATED_GOLD = "\n".join([
    "diff --git a/calc.py b/calc.py", "--- a/calc.py", "+++ b/calc.py", "@@ -1,9 +1,9 @@",
    " def add(a, b):", "-    return a - b", "+    return a + b", " ", " ",
    " def sub(a, b):", "-    return a + b", "+    return a - b", " ", " ",
    " def double(x):", ""])
# The task's sandbox turns its integration tests on (in every command of its
# cells, the oracle's included).
GATED_ORACLE = '''\
import os

import pytest

from calc import add, sub


def test_add():
    assert add(2, 3) == 5


@pytest.mark.skipif(os.environ.get("WFBENCH_INTEGRATION") != "1", reason="off here")
def test_sub():
    assert sub(5, 3) == 2
'''
# Fixes add() and makes the test of sub() skip instead of fail.
SKIPPER = r"""
cat > calc.py <<'WFBENCH_EOF'
def add(a, b):
    return a + b


def sub(a, b):
    import pytest
    pytest.skip("not today")


def double(x):
    return 2 * x
WFBENCH_EOF
"""


def test_the_expected_tests_are_those_of_the_tasks_own_sandbox(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, cache_dir: Path
) -> None:
    """The calibration ran in the sweep's bare sandbox, without the variables and
    read-only paths of the task's, and the key left them out: a test the
    task's sandbox turns on was never expected, so an arm that made it skip
    resolved (and every sweep after reused that expectation)."""
    task = task_yaml(sandbox={"env": {"WFBENCH_INTEGRATION": "1"}})
    suite = suite_factory(tasks=[task], arms=["gold", "skipper"],
                          arm_definitions={"skipper": script_arm(SKIPPER)})
    (suite.root / "repo" / "calc.py").write_text(GATED_CALC)
    (suite.root / "gold.patch").write_text(GATED_GOLD)
    (suite.root / "oracle" / "test_oracle.py").write_text(GATED_ORACLE)
    suite.out = suite.root / "out"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", str(cache_dir)))
    result.assert_outcomes(passed=1, failed=1)
    gold, skipper = suite.row("fix-add-gold-r1"), suite.row("fix-add-skipper-r1")
    assert gold["resolved"] is True and gold["oracle_tests_expected"] == 3
    assert skipper["resolved"] is False and skipper["error_kind"] == "oracle-failed"
