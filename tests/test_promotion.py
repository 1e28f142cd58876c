"""Candidate overlays and the promotion gate through a real sweep: script arms
whose steps run files of their skills folder, offline."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]
FIX = "sed -i 's/a - b/a + b/' calc.py"


def skill_suite(suite_factory: SuiteFactory, run_sh: str) -> Suite:
    arms = {"alpha": {**script_arm("sh .claude/skills/fix/run.sh"), "skills": "skills/"}}
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")],
                          arms=["alpha"], arm_definitions=arms)
    folder = suite.root / "skills" / "fix"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: fix\ndescription: fix add\n---\n")
    (folder / "run.sh").write_text(run_sh)
    return suite


def overlay(base: Path, name: str, run_sh: str) -> Path:
    folder = base / name / "fix"
    folder.mkdir(parents=True)
    (folder / "run.sh").write_text(run_sh)
    return base / name


ARGS = ("--wfbench-runs", "3", "--wfbench-promotion-metric", "estimated_tokens")


def test_a_cheaper_candidate_promotes_and_a_breaking_one_keeps_the_incumbent(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    # The incumbent prints a lot (an agent would read it all); the candidate does not.
    suite = skill_suite(suite_factory, f"seq 1 3000\n{FIX}\n")
    cheaper = overlay(suite.root, "cheaper", f"{FIX}\n")
    result = pytester.runpytest_subprocess(*suite.args(*ARGS, "--wfbench-candidate-overlay",
                                                       str(cheaper)))
    result.assert_outcomes(passed=12)
    rows = suite.rows()
    candidates = [row for row in rows if row["arm"] == "candidate_alpha"]
    assert len(candidates) == 6 and len({row["overlay_digest"] for row in candidates}) == 1
    assert candidates[0]["overlay_digest"] and all(
        row["overlay_digest"] is None for row in rows if row["arm"] == "alpha")
    assert all(row["identity"]["arm"] != rows[0]["identity"]["arm"] for row in candidates)
    evidence = json.loads((suite.out / "promotion.json").read_text())["candidates"]
    (promotion,) = evidence
    assert promotion["verdict"] == "promote", promotion["reasons"]
    assert promotion["candidate"] == "candidate_alpha" and promotion["incumbent"] == "alpha"
    assert promotion["digests"]["overlay"] == candidates[0]["overlay_digest"]
    report = (suite.out / "report.md").read_text()
    assert "## Promotion" in report and "promote" in report
    result.stdout.fnmatch_lines(["wfbench promotion: candidate_alpha over alpha: promote*"])

    broken = overlay(suite.root, "broken", "echo nothing fixed\n")
    suite.out = suite.root / "out-broken"
    result = pytester.runpytest_subprocess(*suite.args(*ARGS, "--wfbench-candidate-overlay",
                                                       str(broken)))
    result.assert_outcomes(passed=6, failed=6)
    (promotion,) = json.loads((suite.out / "promotion.json").read_text())["candidates"]
    assert promotion["verdict"] == "keep_incumbent"
    held = {condition["name"]: condition["held"] for condition in promotion["conditions"]}
    assert held["resolved_tasks"] is False


def test_without_an_overlay_there_is_no_candidate_and_no_promotion_file(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = skill_suite(suite_factory, f"{FIX}\n")
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=2)
    assert {row["arm"] for row in suite.rows()} == {"alpha"}
    assert not (suite.out / "promotion.json").exists()
    result = pytester.runpytest_subprocess(*suite.args(
        "--wfbench-candidate-overlay", str(suite.root / "nope")))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--wfbench-candidate-overlay*is not a folder of candidate*"])
