"""Spend money only where it measures something: the cost budget, the outage
breaker, and live progress (the real CLI against the fake model server where
a session must cost money or fail)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.control.breaker import OutageBreaker
from pytest_wfbench.control.budget import Ledger, Price, load_prices, price_of, row_cost
from pytest_wfbench.control.plan import REUSED, Planned
from pytest_wfbench.control.replay import reused_row, row_from_json
from pytest_wfbench.linelog import ENTRY, STATE_FIELD, logged_lines
from tests.conftest import script_arm, task_yaml, write_suite
from tests.fakeapi import Usage, http_error, turn
from tests.rows import row as stored_row
from tests.test_agent import FIX, agent_suite, api_key, cost, sweep

__all__ = ["api_key", "sweep"]  # fixtures borrowed from test_agent


def test_the_breaker_trips_on_a_run_of_systemic_failures_only() -> None:
    breaker = OutageBreaker(3)
    assert not breaker.observe("a", "session-error")
    assert not breaker.observe("b", "infra-error")
    assert not breaker.observe("c", "oracle-failed")  # the agent's failure: resets
    assert not breaker.observe("d", "cleanup-failure")
    assert not breaker.observe("e", "infra-error")
    assert breaker.observe("f", "session-error")
    assert breaker.streak == ["d", "e", "f"] and "f: session-error" in breaker.reason(
        {"f": "session-error"})
    # A review arm's bad artifact is its own doing (counted): it resets the count.
    review = OutageBreaker(2)
    assert not review.observe("a", "session-error")
    assert not review.observe("b", "review-evidence-invalid")
    assert not review.observe("c", "session-error") and review.streak == ["c"]
    assert not OutageBreaker(0).observe("x", "session-error")


def test_a_reused_success_resets_the_outage_streak_like_a_fresh_one() -> None:
    """The controller feeds the breaker a row's junit properties; a reused row
    carries its own outcome there, as a fresh one does."""
    success = stored_row("t", "gold", resolved=True, sweep_id="earlier", suspicious=[])
    reused = reused_row(Planned(REUSED, success), sweep_id="now", worker="main",
                        source_dir=Path("/nonexistent"), out_dir=Path("/nonexistent"))
    properties = dict(row_from_json(reused).properties())
    assert reused["reused"] and properties["wfbench.status"] == "ran"
    breaker = OutageBreaker(2)
    assert not breaker.observe("a", "infra-error")
    assert not breaker.observe(str(properties["wfbench.cell_id"]),
                               str(properties["wfbench.error_kind"]) or None)
    assert breaker.streak == []
    assert not breaker.observe("b", "infra-error")  # one in a row, not two
    assert breaker.observe("c", "session-error")


def test_reused_successes_between_systemic_failures_keep_the_breaker_from_tripping(
    pytester: pytest.Pytester
) -> None:
    """gold on tasks whose setup fails every other one (infra-error, systemic):
    reused, the successes between the failures reset the streak as fresh ones do."""
    tasks = [task_yaml("good-1"), task_yaml("broken-1", setup="exit 1"), task_yaml("good-2"),
             task_yaml("broken-2", setup="exit 1"), task_yaml("good-3")]
    suite = write_suite(pytester.path, tasks=tasks, arms=["gold"])
    streak = ("--wfbench-outage-streak", "2")
    pytester.runpytest_subprocess(*suite.args(*streak)).assert_outcomes(passed=3, errors=2)
    earlier = suite.out
    suite.out = pytester.path / "out-2"
    result = pytester.runpytest_subprocess(*suite.args(*streak, "--wfbench-reuse", str(earlier)))
    result.assert_outcomes(passed=3, errors=2)
    rows = {row["cell_id"]: row for row in suite.rows()}
    # good-1 is the canary; broken-1, good-2 (reused), broken-2: no two systemic in a row.
    assert [cell for cell, row in rows.items() if row["reused"]] == ["good-2-gold-r1",
                                                                     "good-3-gold-r1"]
    assert rows["broken-2-gold-r1"]["error_kind"] == "infra-error"
    session = json.loads((suite.out / "sweep.json").read_text())["sessions"][-1]
    assert session["state"] == "complete", session
    assert "aborted" not in (suite.out / "report.md").read_text()


def test_prices_match_the_longest_model_prefix_and_extend(tmp_path: Path) -> None:
    extra = tmp_path / "prices.json"
    extra.write_text(json.dumps({"acme-1": {"input": 1, "output": 2, "cache_write": 3,
                                            "cache_read": 4}}))
    prices = load_prices(["claude-sonnet-4-5 9 9 9 9"], [extra])
    assert price_of("claude-sonnet-4-5-20250929", prices) == Price(9, 9, 9, 9)
    assert price_of("claude-sonnet-4-20250514", prices) == Price(3.0, 15.0, 3.75, 0.3)
    assert price_of("acme-1", prices) == Price(1, 2, 3, 4)
    assert price_of("mystery-model", prices) is None
    row = {"model": "acme-1", "cost_usd": None, "input_tokens": 1_000_000,
           "output_tokens": 1_000_000, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0}
    assert row_cost(row, prices) == 3.0
    assert row_cost({**row, "cost_usd": 0.25}, prices) == 0.25


def test_the_ledger_admits_only_what_the_budget_can_pay(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, 2.5)
    assert ledger.admit("c1", "a") is None  # nothing known yet: the first cell starts
    ledger.settle("c1", "a", 1.0)
    assert ledger.admit("c2", "a") is None  # 1 spent + 1 expected <= 2.5
    reason = ledger.admit("c3", "a")  # 1 spent + 1 running + 1 expected > 2.5
    assert reason is not None and "$1.0000 recorded, $1.0000 expected for the running" in reason
    ledger.settle("c2", "a", 1.0)
    assert ledger.admit("c4", "a") is not None and ledger.spent() == 2.0


@pytest.mark.cli
def test_a_budget_below_three_cells_runs_no_more_than_it_allows(
    pytester: pytest.Pytester, sweep: Any
) -> None:
    usages = [Usage(2000, 100), Usage(2000, 100)]
    per_cell = cost(usages[0] + usages[1])
    tasks = [task_yaml(f"t{i}") for i in range(5)]
    suite = agent_suite(pytester.path, ["baseline"], tasks=tasks)
    script = [turn(FIX, usage=usages[0]), turn("Fixed.", usage=usages[1])] * 5
    budget = 2.5 * per_cell
    result, _ = sweep(suite, script, "--wfbench-max-cost", f"{budget:.8f}")
    result.assert_outcomes(passed=2, skipped=3)
    rows = suite.rows()
    ran = [row for row in rows if row["status"] == "ran"]
    assert len(ran) == 2 and sum(row["cost_usd"] for row in ran) <= budget
    for row in rows:
        if row["status"] == "skipped":
            assert row["skip_reason"].startswith("not run: the cost budget of $")
    report = (suite.out / "report.md").read_text()
    assert "**stopped at the cost budget: partial evidence" in report
    result.stdout.fnmatch_lines(["wfbench spend: baseline * tokens $*; sweep * tokens $*"])


def test_a_budget_needs_the_model_priced(pytester: pytest.Pytester, api_key: str) -> None:
    suite = write_suite(pytester.path, arms=["baseline"])
    args = suite.args("--collect-only", "--wfbench-model", "claude-mystery-9",
                      "--wfbench-max-cost", "1", "--wfbench-claude", sys.executable)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--wfbench-max-cost needs the price of model "
                                 "'claude-mystery-9'*wfbench_prices*"])
    pytester.makeini("[pytest]\nwfbench_prices =\n    claude-mystery-9 1 2 3 4\n")
    assert pytester.runpytest_subprocess(*args).ret == pytest.ExitCode.OK


@pytest.mark.cli
@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_outage_breaker_stops_starting_cells(
    pytester: pytest.Pytester, sweep: Any, workers: list[str]
) -> None:
    tasks = [task_yaml(f"t{i}", sandbox={"env": {"CLAUDE_CODE_MAX_RETRIES": "0"}})
             for i in range(8)]
    suite = agent_suite(pytester.path, ["baseline"], tasks=tasks)
    failing = [http_error(500, message="the service is down")] * 40
    result, _ = sweep(suite, failing, "--wfbench-outage-streak", "3", *workers)
    assert result.ret != 0
    rows = suite.rows()
    errors = [row for row in rows if row["error_kind"] == "session-error"]
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert len(rows) == 8 and len(errors) + len(skipped) == 8
    if not workers:
        assert len(errors) == 3  # exactly N systemic rows, serially
    session = json.loads((suite.out / "sweep.json").read_text())["sessions"][-1]
    assert session["state"] == "aborted" and session["stopped_at"]
    assert all(row["started_at"] < session["stopped_at"] for row in errors)
    for row in skipped:
        assert row["skip_reason"].startswith("not run: the outage breaker tripped after 3")
    assert "**aborted: partial evidence" in (suite.out / "report.md").read_text()
    # Workers and the controller wrote rows, and their own line log describes the
    # file (a compaction's log would record one state of it, not one a write).
    logged = logged_lines(suite.out, suite.out / "results.jsonl")
    assert logged is not None
    states = {entry[STATE_FIELD:] for entry in ENTRY.iter_unpack(logged.entries)}
    assert len(states) > 1


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_live_progress_shows_the_running_cell_and_its_stage(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    """Serially and under -n; not a terminal, so one line per change (a cell's
    stage), however long the stage lasts."""
    suite = write_suite(pytester.path, tasks=[task_yaml("slow")], arms=["dawdler"],
                        arm_definitions={"dawdler": script_arm("sleep 7")})
    process = subprocess.Popen([sys.executable, "-m", "pytest", *suite.args(*workers)],
                               cwd=pytester.path, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    status = suite.out / "status.json"
    seen: dict[str, Any] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            data = json.loads(status.read_text())
        except (OSError, ValueError):
            data = {}
        running = data.get("running") or []
        if running and running[0].get("stage") == "session":
            seen = running[0]
            break
        time.sleep(0.2)
    output = process.communicate(timeout=120)[0].decode()
    worker = str(seen.get("worker"))
    assert seen.get("cell") == "slow-dawdler-r1", output
    assert worker == "main" if not workers else worker in ("gw0", "gw1"), output
    session_lines = [line for line in output.splitlines()
                     if line.startswith(f"wfbench running: slow-dawdler-r1 [{worker}] session")]
    assert len(session_lines) == 1, output
    final = json.loads(status.read_text())
    assert final["running"] == [] and final["finished"] == 1


def test_a_resumed_sweep_counts_what_its_kept_rows_cost(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, 1.0)
    ledger.record_earlier(0.9)
    ledger.settle("nothing-running", "a", 5.0)  # no reservation: nothing to settle
    assert ledger.spent() == 0.9
    assert ledger.admit("c1", "a") is None  # 0.9 spent, nothing known of a cell yet
    ledger.settle("c1", "a", 0.2)
    assert ledger.admit("c2", "a") is not None
