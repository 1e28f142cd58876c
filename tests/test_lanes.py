"""Tool-cost lanes: scenarios performed by subjects, measured step by step."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_wfbench.cells import subject_order

SHIPPED = Path(__file__).resolve().parent.parent / "tasks" / "vcs-loop.yaml"


def lane_file(base: Path, scenarios: list[dict[str, Any]],
              subjects: dict[str, Any] | None = None) -> Path:
    document = {"version": 1, "name": "lanes",
                "subjects": subjects or {"git": {"binary": "git"}},
                "scenarios": scenarios}
    path = base / "lanes.yaml"
    path.write_text(json.dumps(document, indent=2))
    return path


def run(pytester: pytest.Pytester, task_file: Path, *extra: str) -> tuple[
        pytest.RunResult, dict[str, dict[str, Any]]]:
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wfbench-tasks",
                                           str(task_file), "--wfbench-out", str(out), "-rs",
                                           *extra)
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()] \
        if results.exists() else []
    by_id = {row["cell_id"]: row for row in rows}
    assert len(by_id) == len(rows), "a cell has two rows"
    return result, by_id


def test_the_shipped_scenarios_pass_for_git_and_skip_a_missing_subject(
    pytester: pytest.Pytester
) -> None:
    # The shipped scenarios, with jj certainly missing whether or not it is installed here.
    shipped = yaml.safe_load(SHIPPED.read_text())
    assert shipped["subjects"]["jj"]["binary"] == "jj"
    absent = f"wfbench-absent-jj-{secrets.token_hex(4)}"
    shipped["subjects"]["jj"]["binary"] = absent
    task_file = pytester.path / "vcs-loop.yaml"
    task_file.write_text(json.dumps(shipped, indent=2))
    result, rows = run(pytester, task_file, "-n", "2")
    result.assert_outcomes(passed=3, skipped=3)
    for scenario in ("task_loop", "agent_task_baseline", "interrupted_publication"):
        row = rows[f"{scenario}-git-r1"]
        assert row["resolved"] is True and row["oracle_passed"] is True, row["error_detail"]
        assert row["lane"] == "tool-cost" and row["transport"]
        assert row["measurement_lock_wait_ms"] is not None
        assert row["subject_version"].startswith("git version")
        skipped = rows[f"{scenario}-jj-r1"]
        assert skipped["status"] == "skipped"
        assert f"subject 'jj': binary '{absent}' is not installed" in skipped["skip_reason"]
        assert skipped["steps"][0]["returncode"] == 77
        assert skipped["transport"] == row["transport"]
    loop = rows["task_loop-git-r1"]
    operations = [s["operation"] for s in loop["steps"] if s["step_kind"] in ("vcs", "edit")]
    assert operations == [f"{p}.{op}" for p in ("task", "followup") for op in (
        "acquire", "edit", "snapshot.stage", "snapshot.commit", "publish", "release")]
    totals = loop["totals"]
    assert totals["tool_calls"] == {"total": 12, "terminal": 10, "vcs": 10}
    assert totals["coverage_complete"] is True and totals["oracle_passed"] is True
    assert set(totals["phase_elapsed_ms"]) == {"task", "followup"}
    assert "warm_acquire_delta_ms" in loop["extras"]
    step = loop["steps"][0] if loop["steps"][0]["step_kind"] == "vcs" else next(
        s for s in loop["steps"] if s["operation"] == "task.acquire")
    assert step["expected"] is True and step["returncode"] == 0 and step["elapsed_ms"] > 0
    cold = rows["agent_task_baseline-git-r1"]
    assert cold["totals"]["coverage_complete"] is False
    assert cold["totals"]["unmeasured_operations"] == ["cold.ci.observe", "warm.ci.observe"]
    unmeasured = next(s for s in cold["steps"] if s["operation"] == "cold.ci.observe")
    assert unmeasured["measured"] is False and "local_file" in unmeasured["reason"]
    assert cold["extras"]["disk_usage_bytes"]["cold_bytes"] > 0
    fault = rows["interrupted_publication-git-r1"]
    assert fault["transport"] == "loopback_fault_fixture"
    assert fault["extras"]["outcome"] == "unknown" and fault["extras"]["mutation_requests"] == 1
    assert fault["extras"]["head_preserved"] and fault["extras"]["work_marked_unpushed"]
    assert fault["extras"]["request_bytes"] > 0
    out = pytester.path / "out"
    environment = json.loads((out / "environment.json").read_text())
    assert environment["subjects"]["git"].startswith("git version")
    assert environment["subjects"]["jj"] is None
    report = (out / "report.md").read_text()
    for title in ("### Task loop", "### Cold clone and warm task", "### Interrupted publication",
                  "### Environment"):
        assert title in report
    assert "| git | 1 | loopback_fault_fixture | unknown | 2 | 1 |" in report


def test_a_remote_that_rejects_pushes_fails_the_publish_step(
    pytester: pytest.Pytester
) -> None:
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop", "subjects": ["git"],
                                           "remote_hooks": {"pre-receive": "exit 1"}}])
    result, rows = run(pytester, task_file)
    result.assert_outcomes(failed=1)
    row = rows["loop-git-r1"]
    assert row["error_kind"] == "step-failed"
    assert "task.publish exited 1 (expected [0])" in row["error_detail"]
    publish = next(s for s in row["steps"] if s["operation"] == "task.publish")
    assert publish["expected"] is False and publish["returncode"] == 1
    assert row["oracle_passed"] is None


def test_a_payload_that_never_reaches_the_branch_fails_the_oracle(
    pytester: pytest.Pytester
) -> None:
    # The remote accepts the push, then a server-side job deletes the branch.
    hook = 'while read old new ref; do git update-ref -d "$ref"; done'
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop", "subjects": ["git"],
                                           "remote_hooks": {"post-receive": hook}}])
    result, rows = run(pytester, task_file)
    result.assert_outcomes(failed=1)
    row = rows["loop-git-r1"]
    assert row["error_kind"] == "oracle-failed"
    assert "payload-task.txt is not on task/1 in the remote" in row["error_detail"]
    assert all(s["expected"] for s in row["steps"] if s["step_kind"] == "vcs" and s["measured"])


def test_a_fault_fixture_that_replays_fails_the_cell(pytester: pytest.Pytester) -> None:
    task_file = lane_file(pytester.path, [{"id": "cut", "kind": "interrupted_publication",
                                           "subjects": ["git"], "fault_replays": 1}])
    result, rows = run(pytester, task_file)
    result.assert_outcomes(failed=1)
    row = rows["cut-git-r1"]
    assert row["error_kind"] == "oracle-failed"
    assert "2 mutation request(s) reached the remote" in row["error_detail"]


def test_output_beyond_the_admitted_size_is_cut_and_flagged(pytester: pytest.Pytester) -> None:
    task_file = lane_file(pytester.path, [{"id": "warm", "kind": "agent_task_baseline",
                                           "subjects": ["git"]}])
    result, rows = run(pytester, task_file, "--wfbench-admitted-output-chars", "40")
    result.assert_outcomes(passed=1)
    handoff = next(s for s in rows["warm-git-r1"]["steps"]
                   if s["operation"] == "cold.review.handoff")
    assert handoff["output_cut"] is True and handoff["stdout_bytes"] > 40
    assert handoff["estimated_tokens"] == -(-len(handoff["command"]) // 4) + 40 // 4
    quiet = next(s for s in rows["warm-git-r1"]["steps"] if s["operation"] == "cold.publish")
    assert quiet["output_cut"] is False


def test_a_subject_without_its_binary_is_a_skip_row(pytester: pytest.Pytester) -> None:
    task_file = lane_file(
        pytester.path, [{"id": "loop", "kind": "task_loop", "subjects": ["git", "ghost"]}],
        subjects={"git": {"binary": "git"},
                  "ghost": {"binary": "wfbench-no-such-vcs", "driver": "git"}})
    result, rows = run(pytester, task_file)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*binary 'wfbench-no-such-vcs' is not installed here*"])
    assert rows["loop-ghost-r1"]["steps"][0]["returncode"] == 77


def test_the_random_seed_shuffles_subjects_reproducibly(pytester: pytest.Pytester) -> None:
    subjects = {name: {"binary": "git"} for name in ("git", "git-b", "git-c", "git-d")}
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop",
                                           "subjects": list(subjects)}], subjects=subjects)

    def collected(*extra: str) -> list[str]:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wfbench-tasks",
                                               str(task_file), "--collect-only", "-q",
                                               "--wfbench-runs", "3", *extra)
        return [line.split("[")[1].rstrip("]") for line in result.outlines
                if "test_scenario[" in line]

    declared = collected()
    assert declared == [f"loop-{s}-r{r}" for r in (1, 2, 3) for s in subjects]
    first, again = collected("--wfbench-random-seed", "7"), collected("--wfbench-random-seed", "7")
    assert first == again != declared
    expected = [f"loop-{s}-r{r}" for r in (1, 2, 3)
                for s in subject_order(list(subjects), 7, "loop", r)]
    assert first == expected


def test_subject_order_is_a_pure_function() -> None:
    names = ["a", "b", "c", "d", "e"]
    assert subject_order(names, None, "s", 1) == names
    assert subject_order(names, 1, "s", 1) == subject_order(names, 1, "s", 1)
    assert sorted(subject_order(names, 1, "s", 2)) == names
    orders = {tuple(subject_order(names, seed, "s", 1)) for seed in range(20)}
    assert len(orders) > 1


def test_a_step_past_the_scenario_timeout_is_killed_and_fails(
    pytester: pytest.Pytester
) -> None:
    task_file = lane_file(pytester.path, [{"id": "slow", "kind": "task_loop", "subjects": ["git"],
                                           "timeout": 3,
                                           "remote_hooks": {"pre-receive": "sleep 60"}}])
    result, rows = run(pytester, task_file)
    result.assert_outcomes(failed=1)
    row = rows["slow-git-r1"]
    assert row["error_kind"] == "step-failed" and "task.publish exited 137" in row["error_detail"]
    publish = next(s for s in row["steps"] if s["operation"] == "task.publish")
    assert "timed out" in publish["reason"]  # killed (exit 137), not waited for
