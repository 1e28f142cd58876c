"""Resume and reuse: a sweep killed half-way continues to the rows and report
of one uninterrupted sweep; a comparator arm's unchanged rows are reused, its
changed ones run again, and every decision is explained."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.control.plan import KEPT, plan_resume
from tests.conftest import Suite, junit_cases, script_arm, task_yaml
from tests.rows import row
from tests.test_signals import interrupt, sleeping

SuiteFactory = Callable[..., Suite]
FIX = "sed -i 's/a - b/a + b/' calc.py"
KEYS = ("status", "resolved", "error_kind", "oracle_passed", "authored_tests_passed",
        "diff_files", "diff_insertions", "diff_deletions", "identity", "counted")


def three_task_suite(suite_factory: SuiteFactory, slow_s: float = 2.0) -> Suite:
    arms = {"slowpoke": script_arm(f"sleep {slow_s}", FIX)}
    return suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2"),
                                task_yaml("fix-add-3")],
                         arms=["gold", "noop", "slowpoke"], arm_definitions=arms)


def results(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def by_cell(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    ids = [row["cell_id"] for row in rows]
    assert len(ids) == len(set(ids)), f"a cell has two rows: {sorted(ids)}"
    return {row["cell_id"]: tuple(row[key] for key in KEYS) for row in rows}


def comparable_report(text: str) -> list[str]:
    """The report less what differs between two sweeps of the same cells: the
    sweep id, the out dir, timings (numbers with decimals) and the overhead
    section (nothing but timings)."""
    text = re.sub(r"## Harness overhead\n.*?(?=\n## )", "", text, flags=re.S)
    lines = []
    for line in text.splitlines():
        sweep_id = "sweep" in line.lower() and "`" in line
        if sweep_id or line.startswith(("- sweep_id", "- out dir")):
            continue
        lines.append(re.sub(r"\d+\.\d+", "#", line))
    return _without_timing_columns(lines)


def _without_timing_columns(lines: list[str]) -> list[str]:
    """Tables less their timing columns (a timing of whole seconds has no decimals)."""
    timings = {"session s", "cell s", "overhead s"}
    drop: set[int] = set()
    out = []
    for line in lines:
        if not line.startswith("|"):
            drop = set()
            out.append(line)
            continue
        cells = line.strip("|").split(" | ")
        if not drop and any(cell.strip() in timings for cell in cells):
            drop = {i for i, cell in enumerate(cells) if cell.strip() in timings}
        out.append("|".join(cell for i, cell in enumerate(cells) if i not in drop))
    return out


def kill_when(command: list[str], cwd: Path, rows: Path, count: int) -> None:
    """Run a sweep and SIGKILL its whole process tree once ``count`` rows exist."""
    process = subprocess.Popen(command, cwd=cwd, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1200):
            if rows.exists() and rows.read_bytes().count(b"\n") >= count:
                break
            if process.poll() is not None:
                raise AssertionError("the sweep ended before it could be killed")
            time.sleep(0.1)
        else:
            raise AssertionError("the sweep never wrote its rows")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_a_sweep_killed_half_way_resumes_to_the_rows_and_report_of_one_sweep(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = three_task_suite(suite_factory)
    command = [sys.executable, "-m", "pytest", *suite.args()]
    kill_when(command, pytester.path, suite.out / "results.jsonl", 4)
    killed = results(suite.out)
    assert 4 <= len(killed) < 9
    record = json.loads((suite.out / "sweep.json").read_text())
    stale = Path(record["sessions"][0]["work_dir"])
    assert stale.exists()  # SIGKILL: nothing cleaned up
    resumed = pytester.runpytest_subprocess(*suite.args("--wfbench-resume",
                                                        "--junitxml=resumed.xml"))
    resumed.assert_outcomes(passed=6, xfailed=3)
    assert not stale.exists(), "the killed session's work dir (hidden files) is left"
    rows = results(suite.out)
    assert {row["sweep_id"] for row in rows} == {record["sweep_id"]}
    kept = [row for row in rows if row["cell_id"] in {r["cell_id"] for r in killed}]
    assert {json.dumps(r, sort_keys=True) for r in kept} <= {json.dumps(r, sort_keys=True)
                                                            for r in killed}
    # One uninterrupted sweep of the same cells, for comparison.
    whole = suite.root / "out-whole"
    pytester.runpytest_subprocess(*suite.args(), "--wfbench-out", str(whole))
    assert by_cell(rows) == by_cell(results(whole))
    assert comparable_report((suite.out / "report.md").read_text()) == \
        comparable_report((whole / "report.md").read_text())
    # Every cell reached junit, the kept ones with their first outcome.
    cases = junit_cases(pytester.path / "resumed.xml")
    assert len(cases) == 9 and all(case.find("skipped") is None or "noop" in name
                                   for name, case in cases.items())
    sessions = json.loads((suite.out / "sweep.json").read_text())["sessions"]
    assert [s["state"] for s in sessions] == ["cancelled", "complete"]
    assert sessions[1]["plan"]["kept"] == len(killed)


def test_resume_runs_again_what_changed_and_says_why(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = three_task_suite(suite_factory, slow_s=0)
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=6, xfailed=3)
    first = {row["cell_id"]: row for row in results(suite.out)}
    # The oracle folder is shared by the three tasks here: give fix-add-2 its own.
    (suite.root / "oracle2").mkdir()
    (suite.root / "oracle2" / "test_oracle.py").write_text(
        (suite.root / "oracle" / "test_oracle.py").read_text() + "\n# changed\n")
    document = json.loads(suite.task_file.read_text())
    document["tasks"][1]["oracle"]["files"] = "oracle2/"
    suite.task_file.write_text(json.dumps(document))
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-resume"))
    result.assert_outcomes(passed=6, xfailed=3)
    rows = {row["cell_id"]: row for row in results(suite.out)}
    assert len(rows) == 9
    rerun = {cell for cell in rows if rows[cell]["recorded_at"] != first[cell]["recorded_at"]
             or rows[cell]["identity"] != first[cell]["identity"]}
    assert rerun == {f"fix-add-2-{arm}-r1" for arm in ("gold", "noop", "slowpoke")}
    assert all(rows[cell] == first[cell] for cell in rows if cell not in rerun)
    superseded = [json.loads(line) for line in
                  (suite.out / "superseded.jsonl").read_text().splitlines()]
    assert sorted(row["cell_id"] for row in superseded) == sorted(rerun)
    report = (suite.out / "report.md").read_text()
    assert "| fix-add-2-gold-r1 | identity changed: oracle |" in report


def skills_suite(suite_factory: SuiteFactory) -> Suite:
    """Two script arms whose steps run files of their own skills folders."""
    arms = {"alpha": {**script_arm(".claude/skills/fix/run.sh"), "skills": "skills-a/"},
            "beta": {**script_arm(".claude/skills/fix/run.sh"), "skills": "skills-b/"}}
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")],
                          arms=["alpha", "beta"], arm_definitions=arms)
    for name in ("skills-a", "skills-b"):
        folder = suite.root / name / "fix"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text("---\nname: fix\ndescription: fix add\n---\n")
        (folder / "run.sh").write_text(f"#!/bin/sh\n{FIX}\n")
        (folder / "run.sh").chmod(0o755)
    return suite


def test_comparator_rows_are_reused_with_a_canary_until_their_identity_or_age_says_no(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = skills_suite(suite_factory)
    args = ("--wfbench-runs", "2")
    pytester.runpytest_subprocess(*suite.args(*args)).assert_outcomes(passed=8)
    earlier = suite.out
    first = {row["cell_id"]: row for row in results(earlier)}
    (suite.root / "skills-a" / "fix" / "SKILL.md").write_text("---\nname: fix\n"
                                                              "description: changed\n---\n")
    suite.out = suite.root / "out-2"
    result = pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier),
                                                       "--junitxml=second.xml"))
    result.assert_outcomes(passed=8)
    rows = {row["cell_id"]: row for row in results(suite.out)}
    reused = {cell for cell, row in rows.items() if row["reused"]}
    canary = "fix-add-beta-r1"
    assert reused == {"fix-add-beta-r2", "fix-add-2-beta-r1", "fix-add-2-beta-r2"}
    assert not rows[canary]["reused"] and rows[canary]["recorded_at"] >= \
        first[canary]["recorded_at"]
    for cell in reused:
        assert rows[cell]["recorded_at"] == first[cell]["recorded_at"]
        assert rows[cell]["reused_from"] == first[cell]["sweep_id"]
        assert rows[cell]["sweep_id"] == rows[canary]["sweep_id"]
        for name in rows[cell]["artifacts"]:
            assert (suite.out / name).read_bytes() == (earlier / name).read_bytes()
    assert not any(rows[f"{task}-alpha-r{run}"]["reused"]
                   for task in ("fix-add", "fix-add-2") for run in (1, 2))
    properties = {name: {p.get("name"): p.get("value") for p in case.iter("property")}
                  for name, case in junit_cases(pytester.path / "second.xml").items()}
    assert properties["fix-add-2-beta-r2"]["wfbench.resolved"] == "True"
    report = (suite.out / "report.md").read_text()
    assert "| fix-add-alpha-r1 | not reused: identity changed: arm |" in report
    assert "canary of `beta` (paid for again): `fix-add-beta-r1`" in report
    # A changed oracle file (both tasks share it): nothing is reused; an expired row:
    # nothing either.
    (suite.root / "oracle" / "test_oracle.py").write_text(
        (suite.root / "oracle" / "test_oracle.py").read_text() + "\n# changed\n")
    suite.out = suite.root / "out-3"
    pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier)))
    assert not any(row["reused"] for row in results(suite.out))
    suite.out = suite.root / "out-4"
    (suite.root / "oracle" / "test_oracle.py").write_text(
        (suite.root / "oracle" / "test_oracle.py").read_text().replace("\n# changed\n", ""))
    time.sleep(1.5)
    pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier),
                                              "--wfbench-reuse-max-age", "0.00001"))
    rows = {row["cell_id"]: row for row in results(suite.out)}
    assert not any(row["reused"] for row in rows.values())
    assert "not reused: older than 0 days" in (suite.out / "report.md").read_text()


def test_a_changed_oracle_file_invalidates_reuse_for_its_task_only(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = skills_suite(suite_factory)
    # fix-add-2 has an oracle folder of its own.
    (suite.root / "oracle2").mkdir()
    (suite.root / "oracle2" / "test_oracle.py").write_text(
        (suite.root / "oracle" / "test_oracle.py").read_text())
    document = json.loads(suite.task_file.read_text())
    document["tasks"][1]["oracle"]["files"] = "oracle2/"
    suite.task_file.write_text(json.dumps(document))
    args = ("--wfbench-runs", "2")
    pytester.runpytest_subprocess(*suite.args(*args)).assert_outcomes(passed=8)
    earlier = suite.out
    first = {row["cell_id"]: row for row in results(earlier)}
    (suite.root / "oracle2" / "test_oracle.py").write_text(
        (suite.root / "oracle2" / "test_oracle.py").read_text() + "\n# changed\n")
    suite.out = suite.root / "out-2"
    result = pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier)))
    result.assert_outcomes(passed=8)
    rows = {row["cell_id"]: row for row in results(suite.out)}
    assert {cell for cell, row in rows.items() if row["reused"]} == \
        {"fix-add-alpha-r2", "fix-add-beta-r2"}  # r1 of each arm is its canary
    changed = {f"fix-add-2-{arm}-r{run}" for arm in ("alpha", "beta") for run in (1, 2)}
    report = (suite.out / "report.md").read_text()
    for cell in changed:
        assert rows[cell]["recorded_at"] > first[cell]["recorded_at"]
        assert rows[cell]["identity"]["oracle"] != first[cell]["identity"]["oracle"]
        assert f"| {cell} | not reused: identity changed: oracle |" in report
    for cell in ("fix-add-alpha-r2", "fix-add-beta-r2"):
        assert rows[cell]["identity"] == first[cell]["identity"]
        assert rows[cell]["recorded_at"] == first[cell]["recorded_at"]


def test_a_fresh_arm_runs_again_while_the_other_arms_are_reused(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = skills_suite(suite_factory)
    args = ("--wfbench-runs", "2")
    pytester.runpytest_subprocess(*suite.args(*args)).assert_outcomes(passed=8)
    earlier = suite.out
    first = {row["cell_id"]: row for row in results(earlier)}
    # Nothing changed: without --wfbench-fresh-arms both arms would be reused.
    suite.out = suite.root / "out-2"
    result = pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier),
                                                       "--wfbench-fresh-arms", "alpha"))
    result.assert_outcomes(passed=8)
    rows = {row["cell_id"]: row for row in results(suite.out)}
    alpha = {f"{task}-alpha-r{run}" for task in ("fix-add", "fix-add-2") for run in (1, 2)}
    for cell in alpha:
        assert not rows[cell]["reused"] and rows[cell]["reused_from"] is None
        assert rows[cell]["recorded_at"] > first[cell]["recorded_at"]
        assert rows[cell]["identity"] == first[cell]["identity"]  # reusable but for the flag
    reused = {cell for cell, row in rows.items() if row["reused"]}
    assert reused == {"fix-add-beta-r2", "fix-add-2-beta-r1", "fix-add-2-beta-r2"}
    report = (suite.out / "report.md").read_text()
    assert "canary of `beta` (paid for again): `fix-add-beta-r1`" in report
    assert "canary of `alpha`" not in report
    assert "| fix-add-alpha-r1 | not reused: a fresh arm (--wfbench-fresh-arms) |" in report


def test_resume_keeps_admissible_rows_and_runs_every_errored_cancelled_or_unrun_cell() -> None:
    same = {"task": "t-digest"}
    rows = [row("t", "won", resolved=True, identity=same),
            row("t", "lost", kind="oracle-failed", identity=same),  # counted: never re-rolled
            row("t", "infra", kind="infra-error", identity=same),
            row("t", "service", kind="session-error", identity=same),
            row("t", "broken", kind="harness-error", identity=same),  # excluded: before the session
            row("t", "stopped", kind="cancelled", identity=same),
            row("t", "unrun", status="skipped", skip_reason="not run: the sweep was cancelled "
                "(SIGTERM)", identity=same),
            row("t", "retried", kind="infra-error", identity=same),
            row("t", "retried", resolved=True, identity=same),  # the last row of a cell wins
            row("t", "regressed", resolved=True, identity=same),
            row("t", "regressed", kind="cleanup-failure", identity=same)]
    cells = ["won", "lost", "infra", "service", "broken", "stopped", "unrun", "retried",
             "regressed", "new"]
    plan = plan_resume(rows, {f"t-{arm}-r1": same for arm in cells})
    assert {cell: planned.mode for cell, planned in plan.planned.items()} == {
        "t-won-r1": KEPT, "t-lost-r1": KEPT, "t-retried-r1": KEPT}
    assert plan.planned["t-retried-r1"].row["resolved"] is True
    assert plan.reasons == {
        "t-infra-r1": "not admissible (infra-error)",
        "t-service-r1": "not admissible (session-error)",
        "t-broken-r1": "not admissible (harness-error)",
        "t-stopped-r1": "not admissible (cancelled)",
        "t-unrun-r1": "skipped before (not run: the sweep was cancelled (SIGTERM))",
        "t-regressed-r1": "not admissible (cleanup-failure)",
    }  # t-new-r1 had no row: it runs, with nothing to explain


def test_a_resumed_sweep_runs_again_its_errored_cancelled_and_unrun_cells(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Real rows of each kind: a setup that fails (infra-error, excluded), a cell
    cancelled mid-session by SIGTERM, cells skipped because the sweep was
    cancelled; the resolved cell before them keeps its row."""
    marker = f"5.{secrets.randbelow(10**6):06d}"  # seconds no other process sleeps
    slow = {"sandbox": {"env": {"WFBENCH_TEST_SLEEP": marker}}}
    suite = suite_factory(
        tasks=[task_yaml("quick-1"), task_yaml("broken", setup="exit 1"),
               task_yaml("slow", **slow), task_yaml("quick-2")],
        arms=["sleeper"],
        arm_definitions={"sleeper": script_arm('sleep "${WFBENCH_TEST_SLEEP:-0.1}"', FIX)})
    code = interrupt(suite, pytester.path, [], group=False, signum=signal.SIGTERM, twice=False,
                     running=1, marker=marker)
    assert code == pytest.ExitCode.INTERRUPTED and sleeping(marker) == []
    first = {row["cell_id"]: row for row in results(suite.out)}
    assert {cell: row["error_kind"] or row["status"] for cell, row in first.items()} == {
        "quick-1-sleeper-r1": "ran", "broken-sleeper-r1": "infra-error",
        "slow-sleeper-r1": "cancelled", "quick-2-sleeper-r1": "skipped"}
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-resume"))
    result.assert_outcomes(passed=3, errors=1)  # broken's setup fails again
    rows = {row["cell_id"]: row for row in results(suite.out)}
    assert rows["quick-1-sleeper-r1"] == first["quick-1-sleeper-r1"]
    rerun = {"broken-sleeper-r1", "slow-sleeper-r1", "quick-2-sleeper-r1"}
    for cell in rerun:
        assert rows[cell]["recorded_at"] > first[cell]["recorded_at"]
    assert rows["slow-sleeper-r1"]["resolved"] and rows["quick-2-sleeper-r1"]["resolved"]
    assert rows["broken-sleeper-r1"]["error_kind"] == "infra-error"
    superseded = [json.loads(line) for line in
                  (suite.out / "superseded.jsonl").read_text().splitlines()]
    assert sorted(row["cell_id"] for row in superseded) == sorted(rerun)
    report = (suite.out / "report.md").read_text()
    assert "| broken-sleeper-r1 | not admissible (infra-error) |" in report
    assert "| slow-sleeper-r1 | not admissible (cancelled) |" in report
    assert "| quick-2-sleeper-r1 | skipped before (not run: the sweep was cancelled " \
        "(SIGTERM)) |" in report
    sessions = json.loads((suite.out / "sweep.json").read_text())["sessions"]
    assert [s["state"] for s in sessions] == ["cancelled", "complete"]
    assert sessions[1]["plan"]["kept"] == 1


def test_a_candidate_arm_is_never_reused(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = skills_suite(suite_factory)
    document = json.loads(suite.task_file.read_text())
    document["arms"] = ["alpha"]
    suite.task_file.write_text(json.dumps(document))
    overlay = suite.root / "cheaper" / "fix"
    overlay.mkdir(parents=True)
    (overlay / "run.sh").write_text(f"#!/bin/sh\n{FIX}\n")
    (overlay / "run.sh").chmod(0o755)
    args = ("--wfbench-runs", "2", "--wfbench-candidate-overlay", str(overlay.parent))
    pytester.runpytest_subprocess(*suite.args(*args)).assert_outcomes(passed=8)
    earlier = suite.out
    suite.out = suite.root / "out-2"
    result = pytester.runpytest_subprocess(*suite.args(*args, "--wfbench-reuse", str(earlier)))
    result.assert_outcomes(passed=8)
    rows = {row["cell_id"]: row for row in results(suite.out)}
    assert {cell for cell, row in rows.items() if row["reused"]} == \
        {"fix-add-alpha-r2", "fix-add-2-alpha-r1", "fix-add-2-alpha-r2"}
    report = (suite.out / "report.md").read_text()
    for task in ("fix-add", "fix-add-2"):
        for run in (1, 2):
            assert f"| {task}-candidate_alpha-r{run} | not reused: a candidate arm |" in report
