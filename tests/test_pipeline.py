"""End to end through a real pytest: collection, outcomes, rows, junit, report."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from pytest_wfbench import heap
from pytest_wfbench.rowcache import load_entries
from tests.conftest import Suite, junit_cases, junit_properties, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]


def comparable(rows: list[dict[str, object]]) -> dict[str, tuple[object, ...]]:
    keys = ("resolved", "error_kind", "oracle_passed", "authored_tests_passed", "diff_files",
            "diff_insertions", "diff_deletions", "task_base_sha", "sanitized_sha",
            "oracle_digest", "status")
    return {str(r["cell_id"]): tuple(r[k] for k in keys) for r in rows}


def test_gold_resolves_and_noop_is_expected_unresolved(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory()
    result = pytester.runpytest_subprocess(*suite.args("-v"))
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*test_cell[[]fix-add-gold-r1[]] PASSED*",
                                 "*test_cell[[]fix-add-noop-r1[]] XFAIL*",
                                 "*wfbench summary*", "gold*OBSERVED_OK*1/1*"])
    gold, noop = suite.row("fix-add-gold-r1"), suite.row("fix-add-noop-r1")
    assert gold["resolved"] is True and gold["error_kind"] is None
    assert (gold["diff_files"], gold["diff_insertions"], gold["diff_deletions"]) == (1, 1, 1)
    assert noop["resolved"] is False and noop["error_kind"] == "oracle-failed"
    assert noop["authored_tests_passed"] is True and noop["oracle_passed"] is False
    assert noop["diff_files"] == 0
    assert gold["cost_usd"] is None and noop["cost_usd"] is None
    assert gold["sandbox_backend"] == "bubblewrap"
    patch = (suite.out / "artifacts" / "fix-add-gold-r1.patch").read_text()
    assert "+    return a + b" in patch
    report = (suite.out / "report.md").read_text()
    assert "| fix-add | bug | gold | 1/1 |" in report
    assert "| fix-add | bug | noop | 0/1 |" in report


def test_only_cells_are_collected_when_tasks_are_given_without_paths(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    pytester.makepyfile(test_unrelated="def test_x():\n    assert False\n")
    suite = suite_factory()
    result = pytester.runpytest_subprocess(*suite.args("--collect-only", "-q"))
    result.stdout.fnmatch_lines(["*tasks.yaml::test_cell[[]fix-add-gold-r1[]]",
                                 "*tasks.yaml::test_cell[[]fix-add-noop-r1[]]"])
    result.stdout.no_fnmatch_line("*test_unrelated*")
    assert not suite.out.exists()  # collecting writes no rows and no report


def test_runs_and_arms_expand_into_cell_ids(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add.again")])
    result = pytester.runpytest_subprocess(
        *suite.args("--collect-only", "-q", "--wfbench-arms", "noop", "--wfbench-runs", "2"))
    result.stdout.fnmatch_lines([
        "*test_cell[[]fix-add-noop-r1[]]", "*test_cell[[]fix-add-noop-r2[]]",
        "*test_cell[[]fix-add.again-noop-r1[]]", "*test_cell[[]fix-add.again-noop-r2[]]",
        "4 tests collected*",
    ])


def test_serial_and_xdist_give_the_same_rows(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")])
    serial = pytester.runpytest_subprocess(*suite.args())
    serial.assert_outcomes(passed=2, xfailed=2)
    serial_rows = suite.rows()
    suite.out = suite.root / "out-xdist"
    parallel = pytester.runpytest_subprocess(*suite.args("-n", "2"))
    parallel.assert_outcomes(passed=2, xfailed=2)
    parallel_rows = suite.rows()
    assert len(serial_rows) == len(parallel_rows) == 4
    assert comparable(serial_rows) == comparable(parallel_rows)
    workers = {r["worker"] for r in parallel_rows}
    assert workers <= {"gw0", "gw1"}
    assert len({r["sweep_id"] for r in parallel_rows}) == 1
    assert (suite.out / "report.md").exists()
    # Each worker added the rows it wrote to the report's cache as its session
    # ended (a frame each), so the report found every row there and added none.
    entries, frames = load_entries(suite.out)
    assert len(entries) == 4 and frames == len(workers)


def test_k_selects_exactly_one_cell(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("other-task")])
    result = pytester.runpytest_subprocess(*suite.args("-k", "fix-add and gold"))
    result.assert_outcomes(passed=1, deselected=3)
    assert [r["cell_id"] for r in suite.rows()] == ["fix-add-gold-r1"]


def test_junit_properties_failure_and_error(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Wrong answers are <failure>; no admissible measurement is <error>."""
    suite = suite_factory(
        tasks=[task_yaml("fix-add"), task_yaml("broken-setup", setup="exit 1")],
        arms=["gold", "idle", "noop"],
        arm_definitions={"idle": script_arm("true")},
    )
    junit = suite.root / "junit.xml"
    result = pytester.runpytest_subprocess(*suite.args(f"--junitxml={junit}"))
    result.assert_outcomes(passed=1, failed=1, xfailed=1, errors=3)
    cases = junit_cases(junit)
    gold = junit_properties(cases["fix-add-gold-r1"])
    assert gold["wfbench.resolved"] == "True"
    assert gold["wfbench.cell_id"] == "fix-add-gold-r1"
    assert gold["wfbench.diff_files"] == "1"
    assert gold["wfbench.cost_usd"] == ""
    idle = cases["fix-add-idle-r1"]
    assert idle.find("failure") is not None and idle.find("error") is None
    assert junit_properties(idle)["wfbench.error_kind"] == "oracle-failed"
    assert cases["fix-add-noop-r1"].find("skipped") is not None  # xfail
    for arm in ("gold", "idle", "noop"):
        broken = cases[f"broken-setup-{arm}-r1"]
        assert broken.find("error") is not None and broken.find("failure") is None
        assert junit_properties(broken)["wfbench.error_kind"] == "infra-error"
    assert "setup exited 1" in str(suite.row("broken-setup-gold-r1")["error_detail"])


def test_resolved_noop_fails_the_sweep_as_strict_xpass(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """A task whose oracle passes without any change is unsound."""
    suite = suite_factory(
        tasks=[task_yaml(oracle={"command": "true", "hidden_paths": ["tests/hidden/"],
                                 "expect": "exit-code"})],
        arms=["noop"])
    junit = suite.root / "junit.xml"
    result = pytester.runpytest_subprocess(*suite.args(f"--junitxml={junit}"))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert junit_cases(junit)["fix-add-noop-r1"].find("failure") is not None


def test_gold_that_does_not_resolve_fails(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml(oracle={"command": "false", "expect": "exit-code"})],
                          arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(failed=1)
    assert suite.row("fix-add-gold-r1")["error_kind"] == "oracle-failed"


def test_script_steps_are_measured(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(
        arms=["fixer"],
        arm_definitions={"fixer": script_arm("sed -i 's/a - b/a + b/' calc.py",
                                             "python -c 'print(\"x\" * 100)'")},
    )
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-admitted-output-chars", "40"))
    result.assert_outcomes(passed=1)
    row = suite.row("fix-add-fixer-r1")
    assert row["resolved"] is True and row["tool_calls"] == 2
    first, second = row["steps"]
    assert first["returncode"] == 0 and first["output_cut"] is False
    assert second["output_cut"] is True and second["stdout_bytes"] == 101
    # command plus the admitted 40 characters, at four characters a token
    assert second["estimated_tokens"] == -(-len(second["command"]) // 4) + 10
    assert row["estimated_tokens"] == first["estimated_tokens"] + second["estimated_tokens"]
    assert row["input_tokens"] == row["output_tokens"] == 0 and row["cost_usd"] is None


def test_expensive_task_and_missing_gold_are_skips_with_rows(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    no_gold = task_yaml("no-gold")
    del no_gold["gold"]
    suite = suite_factory(tasks=[task_yaml("big", expensive=True), no_gold], arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args("-rs"))
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*expensive task*--wfbench-include-expensive*",
                                 "*has no gold patch*"])
    assert suite.row("big-gold-r1")["status"] == "skipped"
    assert "expensive" in str(suite.row("big-gold-r1")["skip_reason"])
    report = (suite.out / "report.md").read_text()
    assert "big-gold-r1" in report and "no-gold-gold-r1" in report
    suite.out = suite.root / "out-2"
    included = pytester.runpytest_subprocess(*suite.args("--wfbench-include-expensive"))
    included.assert_outcomes(passed=1, skipped=1)


def test_exit_first_records_unrun_cells_as_skips(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    failing = {"command": "false", "expect": "exit-code"}
    suite = suite_factory(tasks=[task_yaml("a-task", oracle=failing), task_yaml("b-task")],
                          arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args("-x"))
    result.assert_outcomes(failed=1)
    assert suite.row("a-task-gold-r1")["error_kind"] == "oracle-failed"
    unrun = suite.row("b-task-gold-r1")
    assert unrun["status"] == "skipped" and "sweep stopped" in unrun["skip_reason"]


def test_unusable_arm_makes_the_exit_status_nonzero(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml(setup="exit 3")], arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args())
    # UNUSABLE means every fresh attempt failed, and every failure is a pytest
    # error: the exit status needs no override of its own.
    result.assert_outcomes(errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*arm 'gold' is UNUSABLE*"])
    assert "UNUSABLE arms: gold" in (suite.out / "report.md").read_text()


def test_session_timeout_kills_the_step_and_the_sweep_goes_on(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """A session that reaches its timeout is the arm's failure: counted, unresolved,
    a pytest failure (a hanging agent must not look better than one that fails)."""
    suite = suite_factory(tasks=[task_yaml("slow", timeout=2, setup="touch .slow"),
                                 task_yaml("quick")],
                          arms=["sleeper"],
                          arm_definitions={"sleeper": script_arm("[ -e .slow ] && sleep 60; true")},
                          )
    result = pytester.runpytest_subprocess(*suite.args())
    result.assert_outcomes(failed=2)
    row = suite.row("slow-sleeper-r1")
    assert row["error_kind"] == "session-timeout" and "timed out" in row["error_detail"]
    assert row["counted"] is True and row["resolved"] is False
    assert row["steps"][0]["timed_out"] is True
    assert suite.row("quick-sleeper-r1")["error_kind"] == "oracle-failed"


def test_rows_carry_stage_times_that_fit_in_the_cell(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(arms=["gold"])
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=1)
    row = suite.row("fix-add-gold-r1")
    stages = row["stage_ms"]
    for name in ("template", "template_wait", "template_build", "clone", "session", "verify",
                 "capture", "evidence", "expected_tests", "oracle", "cleanup", "row"):
        assert stages[name] >= 0, name
    # The template's lock wait and build are inside its stage; the row is built
    # once the cell's duration is taken.
    inside = sum(ms for name, ms in stages.items()
                 if name not in ("template_wait", "template_build", "row"))
    assert inside <= row["duration_s"] * 1000
    assert stages["template_wait"] + stages["template_build"] <= stages["template"]
    assert row["harness_overhead_s"] == pytest.approx(
        row["duration_s"] - row["session_duration_s"], abs=0.002)
    report = (suite.out / "report.md").read_text()
    assert "## Harness overhead" in report and "| gold | 1 |" in report


def test_a_large_collection_is_frozen_before_the_collector_runs_again(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cells a task file collects into live until the session ends: frozen
    while the collector is still paused (its first collection would walk every
    item: 0.1 s of 10,000 cells' collection), and again once collection ends."""
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add.again")])
    monkeypatch.setattr(heap, "FREEZE_FROM", 4)
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    result = pytester.inline_run(*suite.args("--collect-only", "-q", "--wfbench-arms",
                                             "gold,noop", "--wfbench-runs", "1"))
    assert len(result.getreports("pytest_collectreport")) > 0
    assert len(result.getcalls("pytest_itemcollected")) == 4
    # The collected file's four items, inside the pause; then the session's items.
    assert frozen == [False, True]
    assert gc.isenabled()
