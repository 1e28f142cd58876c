"""Tool-cost lanes: scenarios performed by subjects, measured step by step."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_wfbench.cells import subject_order
from pytest_wfbench.lanes.steps import ACTING_KINDS
from pytest_wfbench.options import DEFAULT_RANDOM_SEED

SHIPPED = Path(__file__).resolve().parent.parent / "tasks" / "vcs-loop.yaml"
SCENARIOS = ("task_loop", "agent_task_baseline", "interrupted_publication",
             "publication_replay")
VERSIONS = {"git": "git version", "hg": "Mercurial Distributed SCM"}


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
    """One sweep; a single run per scenario cell unless ``extra`` asks for more."""
    out = pytester.path / "out"
    runs = () if "--wfbench-runs" in extra else ("--wfbench-runs", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wfbench-tasks",
                                           str(task_file), "--wfbench-out", str(out), "-rs",
                                           *runs, *extra)
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()] \
        if results.exists() else []
    by_id = {row["cell_id"]: row for row in rows}
    assert len(by_id) == len(rows), "a cell has two rows"
    return result, by_id


def step(row: dict[str, Any], operation: str) -> dict[str, Any]:
    return next(s for s in row["steps"] if s["operation"] == operation)


def check_totals(row: dict[str, Any]) -> None:
    """The agent-facing totals are the agent's steps only; harness steps apart."""
    acting = [s for s in row["steps"] if s["step_kind"] in ACTING_KINDS and s["measured"]]
    harness = [s for s in row["steps"] if s["step_kind"] == "harness"]
    totals = row["totals"]
    assert totals["elapsed_ms"] == pytest.approx(sum(s["elapsed_ms"] for s in acting), abs=0.01)
    assert totals["tool_calls"]["total"] == len(acting)
    assert totals["estimated_tokens"] == sum(s["estimated_tokens"] for s in acting)
    assert totals["harness"]["elapsed_ms"] == pytest.approx(
        sum(s["elapsed_ms"] for s in harness), abs=0.01)
    assert totals["harness"]["harness_command_count"] == sum(
        s["harness_command_count"] for s in harness)
    reads = () if row["task"] == "publication_replay" else ("oracle.read",)
    for operation in ("setup.remote_create", "setup.remote_seed", *reads):
        found = step(row, operation)
        assert found["step_kind"] == "harness" and found["harness_command_count"] >= 1
        assert found["elapsed_ms"] is not None and found["returncode"] == 0


def test_the_shipped_scenarios_pass_for_git_and_mercurial(pytester: pytest.Pytester) -> None:
    # The shipped scenarios, with jj certainly missing whether or not it is installed here.
    shipped = yaml.safe_load(SHIPPED.read_text())
    assert [s["kind"] for s in shipped["scenarios"]] == list(SCENARIOS)
    assert all(s["subjects"] == ["git", "hg", "jj"] for s in shipped["scenarios"])
    absent = f"wfbench-absent-jj-{secrets.token_hex(4)}"
    shipped["subjects"]["jj"]["binary"] = absent
    task_file = pytester.path / "vcs-loop.yaml"
    task_file.write_text(json.dumps(shipped, indent=2))
    result, rows = run(pytester, task_file, "-n", "2")
    result.assert_outcomes(passed=8, skipped=4)
    for scenario in SCENARIOS:
        for subject in ("git", "hg"):
            row = rows[f"{scenario}-{subject}-r1"]
            assert row["resolved"] is True and row["oracle_passed"] is True, row["error_detail"]
            assert row["lane"] == "tool-cost" and row["transport"]
            assert row["subject_version"].startswith(VERSIONS[subject])
            assert row["extras"]["subject_order"] == ["git", "hg", "jj"]
            assert all("stderr_tail" in s for s in row["steps"])
            check_totals(row)
        assert rows[f"{scenario}-hg-r1"]["transport"] == rows[f"{scenario}-git-r1"]["transport"]
        skipped = rows[f"{scenario}-jj-r1"]
        assert skipped["status"] == "skipped"
        assert f"subject 'jj': binary '{absent}' is not installed" in skipped["skip_reason"]
        assert skipped["steps"][0]["returncode"] == 77
        assert skipped["transport"] == rows[f"{scenario}-git-r1"]["transport"]

    loop = rows["task_loop-git-r1"]
    operations = [s["operation"] for s in loop["steps"] if s["step_kind"] in ACTING_KINDS]
    assert operations == [f"{p}.{op}" for p in ("task", "followup") for op in (
        "acquire", "edit", "snapshot.stage", "snapshot.commit", "publish", "release")]
    assert loop["totals"]["tool_calls"] == {"total": 12, "terminal": 10, "vcs": 10}
    assert set(loop["totals"]["phase_elapsed_ms"]) == {"task", "followup"}
    hg_loop = rows["task_loop-hg-r1"]
    operations = [s["operation"] for s in hg_loop["steps"] if s["step_kind"] in ACTING_KINDS]
    assert operations == [f"{p}.{op}" for p in ("task", "followup") for op in (
        "acquire", "acquire.update", "acquire.branch", "edit", "snapshot.stage",
        "snapshot.commit", "publish", "release")]
    # A share's removal is a terminal command, not a Mercurial one.
    assert hg_loop["totals"]["tool_calls"] == {"total": 16, "terminal": 14, "vcs": 12}
    assert step(hg_loop, "task.publish")["command"].split()[1:] == ["push", "--quiet", "-B",
                                                                    "task/1"]

    for subject, warm_model in (("git", "git_worktree"), ("hg", "hg_share")):
        cold = rows[f"agent_task_baseline-{subject}-r1"]
        assert cold["totals"]["unmeasured_operations"] == ["cold.ci.observe", "warm.ci.observe"]
        assert cold["totals"]["coverage_complete"] is False
        assert "local_file" in step(cold, "cold.ci.observe")["reason"]
        assert cold["extras"]["disk_usage_bytes"]["cold_bytes"] > 0
        assert cold["extras"]["acquisition"] == {
            "cold": {"model": "fresh_clone", "cache_state": "no_shared_store"},
            "warm": {"model": warm_model, "cache_state": "shared_store"}}
        assert cold["extras"]["os_cache_state"] == "unknown"
        assert cold["extras"]["os_cache_state_reason"]
        assert cold["extras"]["network_bytes"] is None and cold["extras"]["network_bytes_reason"]
        for operation in ("cleanup.warm", "cleanup.cold"):
            assert step(cold, operation)["step_kind"] == "harness"
            assert step(cold, operation)["harness_command_count"] == 1

        fault = rows[f"interrupted_publication-{subject}-r1"]
        extras = fault["extras"]
        assert fault["transport"] == "loopback_fault_fixture"
        assert extras["outcome"] == "unknown" and extras["publication_outcome"] == "unknown"
        assert extras["mutation_requests"] == 1 and extras["mutation_requests_sent"] == 1
        assert extras["head_preserved"] and extras["work_marked_unpushed"]
        assert extras["working_tree_dirty_after"] is False and extras["reconciled"] is True
        assert extras["network_request_bytes_observed"] > extras["request_bytes"] > 0
        push = step(fault, "publish.push")
        assert push["expected_returncodes"] == list(range(1, 128)) and push["expected"]
        assert push["stderr_tail"].strip()  # the client said why it failed
        assert step(fault, "reconcile.inspect")["expected"]
        assert step(fault, "reconcile.publish")["expected"]

        replay = rows[f"publication_replay-{subject}-r1"]["extras"]
        sent = replay["mutation_requests_sent"]
        # Closing after every answer leaves no connection to replay on (as above).
        assert sent["no_keepalive"] == 1 and replay["blind_replay_requests"]["no_keepalive"] == 0
        # Kept alive, a replay is a measurement, whatever it is: consistent counts.
        assert sent["keepalive"] >= 1
        assert replay["blind_replay_requests"]["keepalive"] == sent["keepalive"] - 1
        for variant in ("keepalive", "no_keepalive"):
            assert replay["variants"][variant]["keepalive"] is (variant == "keepalive")
            assert replay["variants"][variant]["publication_outcome"] == "unknown"

    out = pytester.path / "out"
    environment = json.loads((out / "environment.json").read_text())
    assert environment["subjects"]["hg"].startswith("Mercurial Distributed SCM")
    assert environment["subjects"]["jj"] is None
    report = (out / "report.md").read_text()
    for title in ("### Task loop", "### Cold clone and warm task", "### Interrupted publication",
                  "### Blind replay of an unanswered push", "### Environment"):
        assert title in report
    header = ("| step | git ms (median of 1) | git est. tokens | hg ms (median of 1) | "
              "hg est. tokens |")
    assert report.count(header) == 4
    assert "| task.acquire.update | - | - |" in report  # a step git does not need
    assert "| harness step (not in the totals) | git ms | git commands | hg ms |" in report
    assert "| git | 1 | loopback_fault_fixture | unknown | unknown | 2 | 1 |" in report


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
    publish = step(row, "task.publish")
    assert publish["expected"] is False and publish["returncode"] == 1
    assert "pre-receive hook declined" in publish["stderr_tail"]
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
    handoff = step(rows["warm-git-r1"], "cold.review.handoff")
    assert handoff["output_cut"] is True and handoff["stdout_bytes"] > 40
    assert handoff["estimated_tokens"] == -(-len(handoff["command"]) // 4) + 40 // 4
    assert step(rows["warm-git-r1"], "cold.publish")["output_cut"] is False


def test_a_subject_without_its_binary_is_a_skip_row(pytester: pytest.Pytester) -> None:
    task_file = lane_file(
        pytester.path, [{"id": "loop", "kind": "task_loop",
                         "subjects": ["git", "ghost", "ghost-hg"]}],
        subjects={"git": {"binary": "git"},
                  "ghost": {"binary": "wfbench-no-such-vcs", "driver": "git"},
                  "ghost-hg": {"binary": "wfbench-no-such-hg", "driver": "hg"}})
    result, rows = run(pytester, task_file)
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*binary 'wfbench-no-such-vcs' is not installed here*"])
    result.stdout.fnmatch_lines(["*binary 'wfbench-no-such-hg' is not installed here*"])
    assert rows["loop-ghost-r1"]["steps"][0]["returncode"] == 77
    assert rows["loop-ghost-hg-r1"]["steps"][0]["returncode"] == 77


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q",
                                           *args)
    return [line.split("[")[1].rstrip("]") for line in result.outlines
            if "test_scenario[" in line or "test_cell[" in line]


def test_the_random_seed_shuffles_subjects_reproducibly(pytester: pytest.Pytester) -> None:
    subjects = {name: {"binary": "git"} for name in ("git", "git-b", "git-c", "git-d")}
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop",
                                           "subjects": list(subjects)}], subjects=subjects)
    base = ("--wfbench-tasks", str(task_file), "--wfbench-runs", "3")
    declared = collected(pytester, *base)
    assert declared == [f"loop-{s}-r{r}" for r in (1, 2, 3) for s in subjects]
    first = collected(pytester, *base, "--wfbench-random-seed", "7")
    assert first == collected(pytester, *base, "--wfbench-random-seed", "7") != declared
    assert first == [f"loop-{s}-r{r}" for r in (1, 2, 3)
                     for s in subject_order(list(subjects), 7, "loop", r)]
    # Asked for without a seed of its own: the documented default seed, every time.
    default = [f"loop-{s}-r{r}" for r in (1, 2, 3)
               for s in subject_order(list(subjects), DEFAULT_RANDOM_SEED, "loop", r)]
    assert default != declared
    assert collected(pytester, *base, "--wfbench-random-seed", "default") == default
    assert collected(pytester, *base, "-o", "wfbench_random_seed=default") == default
    # The command line wins over the ini file.
    assert collected(pytester, *base, "-o", "wfbench_random_seed=default",
                     "--wfbench-random-seed", "7") == first
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", *base,
                                        "--wfbench-random-seed", "often")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*must be a whole number or 'default', got 'often'*"])


def test_the_row_records_its_runs_subject_order(pytester: pytest.Pytester) -> None:
    subjects = {name: {"binary": "git", "driver": "git"} for name in ("git", "git-b", "git-c")}
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "interrupted_publication",
                                           "subjects": list(subjects)}], subjects=subjects)
    result, rows = run(pytester, task_file, "--wfbench-runs", "2", "--wfbench-random-seed", "3")
    result.assert_outcomes(passed=6)
    for run_index in (1, 2):
        order = subject_order(list(subjects), 3, "loop", run_index)
        for name in subjects:
            row = rows[f"loop-{name}-r{run_index}"]
            assert row["extras"]["subject_order"] == order and row["random_seed"] == 3


def test_scenario_cells_run_three_times_unless_told(
    pytester: pytest.Pytester, suite_factory: Any
) -> None:
    suite = suite_factory()
    lanes = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop", "subjects": ["git"]}])
    both = ("--wfbench-tasks", str(suite.task_file), "--wfbench-tasks", str(lanes))
    found = collected(pytester, *both)
    assert [c for c in found if c.startswith("loop-")] == ["loop-git-r1", "loop-git-r2",
                                                           "loop-git-r3"]
    tasks = [c for c in found if not c.startswith("loop-")]
    assert tasks and all(c.endswith("-r1") for c in tasks)  # task cells keep one run
    told = collected(pytester, *both, "--wfbench-runs", "2")
    assert [c for c in told if c.startswith("loop-")] == ["loop-git-r1", "loop-git-r2"]
    assert {c.rsplit("-", 1)[1] for c in told if not c.startswith("loop-")} == {"r1", "r2"}


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
    assert "timed out" in step(row, "task.publish")["reason"]  # killed (exit 137), not waited for
