"""Tool-cost lanes with Mercurial: the break tests git has, a helper that
fails, and a secret in a step's stderr."""

from __future__ import annotations

import secrets

import pytest

from tests.test_lanes import lane_file, run, step

HG = {"hg": {"binary": "hg", "driver": "hg"}}


def test_a_mercurial_remote_that_rejects_pushes_fails_the_publish_step(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hook also prints a secret: the step's stderr tail keeps the hook's
    # words, redacted, and no file the sweep writes holds the secret.
    secret = f"sk-wfbench-{secrets.token_hex(12)}"
    monkeypatch.setenv("WFBENCH_TEST_SECRET", secret)
    hook = f"echo 'rejected by policy, token {secret}' >&2; exit 1"
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop", "subjects": ["hg"],
                                           "remote_hooks": {"pretxnchangegroup": hook}}],
                          subjects=HG)
    result, rows = run(pytester, task_file, "--wfbench-secret-env", "WFBENCH_TEST_SECRET")
    result.assert_outcomes(failed=1)
    row = rows["loop-hg-r1"]
    assert row["error_kind"] == "step-failed" and row["oracle_passed"] is None
    publish = step(row, "task.publish")
    assert publish["expected"] is False and publish["returncode"] not in (0, None)
    assert f"task.publish exited {publish['returncode']} (expected [0])" in row["error_detail"]
    assert "pretxnchangegroup hook exited with status 1" in publish["stderr_tail"]
    assert "rejected by policy, token [REDACTED]" in publish["stderr_tail"]
    out = pytester.path / "out"
    for written in out.rglob("*"):
        if written.is_file():
            assert secret not in written.read_text(errors="replace"), written
    assert secret not in result.stdout.str()


def test_a_fault_fixture_that_replays_fails_the_mercurial_cell(
    pytester: pytest.Pytester
) -> None:
    task_file = lane_file(pytester.path, [{"id": "cut", "kind": "interrupted_publication",
                                           "subjects": ["hg"], "fault_replays": 1}], subjects=HG)
    result, rows = run(pytester, task_file)
    result.assert_outcomes(failed=1)
    row = rows["cut-hg-r1"]
    assert row["error_kind"] == "oracle-failed"
    assert "2 mutation request(s) reached the remote" in row["error_detail"]
    # The client itself sent one complete push: the replay was the fixture's.
    assert row["extras"]["mutation_requests_sent"] == 1


def test_mercurial_output_beyond_the_admitted_size_is_cut_and_flagged(
    pytester: pytest.Pytester
) -> None:
    task_file = lane_file(pytester.path, [{"id": "warm", "kind": "agent_task_baseline",
                                           "subjects": ["hg"]}], subjects=HG)
    result, rows = run(pytester, task_file, "--wfbench-admitted-output-chars", "40")
    result.assert_outcomes(passed=1)
    handoff = step(rows["warm-hg-r1"], "cold.review.handoff")
    assert handoff["output_cut"] is True and handoff["stdout_bytes"] > 40
    assert handoff["estimated_tokens"] == -(-len(handoff["command"]) // 4) + 40 // 4
    assert step(rows["warm-hg-r1"], "cold.publish")["output_cut"] is False


def test_a_failing_helper_command_makes_a_skip_row_not_an_error(
    pytester: pytest.Pytester
) -> None:
    # An hg that cannot create repositories: the harness's first helper fails.
    wrapper = pytester.path / "broken-hg"
    wrapper.write_text('#!/bin/sh\ncase "$1" in init) echo "no space left on device" >&2; '
                       'exit 3;; esac\nexec hg "$@"\n')
    wrapper.chmod(0o755)
    task_file = lane_file(pytester.path, [{"id": "loop", "kind": "task_loop",
                                           "subjects": ["broken"]}],
                          subjects={"broken": {"binary": str(wrapper), "driver": "hg"}})
    result, rows = run(pytester, task_file)
    result.assert_outcomes(skipped=1)
    row = rows["loop-broken-r1"]
    assert row["status"] == "skipped" and row["error_kind"] is None
    assert "helper command exited 3" in row["skip_reason"]
    assert "no space left on device" in row["skip_reason"]
    failed = step(row, "setup.remote_create")
    assert failed["step_kind"] == "harness" and failed["returncode"] == 77
    assert failed["expected"] is False and failed["harness_command_count"] == 1
    assert "no space left on device" in failed["stderr_tail"]
    assert row["steps"][-1]["operation"] == "harness.helper"
    result.stdout.fnmatch_lines(["*SKIPPED*helper command exited 3*"])
    report = (pytester.path / "out" / "report.md").read_text()
    assert "skipped: subject 'broken': helper command exited 3" in report

