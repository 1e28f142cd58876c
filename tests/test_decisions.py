"""The promotion gate on hand-built row sets: every condition, each refusal, and
the paired-evidence rule."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_wfbench.aggregate import Health
from pytest_wfbench.decisions import (
    KEEP_INCUMBENT,
    PROMOTE,
    Digests,
    PromotionContext,
    PromotionPolicy,
    candidate_arm,
    candidate_pairs,
    decide,
    improvement,
    incumbent_of,
)
from tests.rows import row, runs

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
DIGESTS = Digests(overlay="sha256:overlay", incumbent_skills="sha256:skills",
                  task_prompts={"b": "p-b", "a": "p-a"}, oracles="sha256:oracles",
                  model="claude-sonnet-4-5", effort="high", harness_version="0.1.0")
CANDIDATE, INCUMBENT = "candidate_workflow", "workflow"


def arm_rows(arm: str, costs: dict[str, list[float]], outcomes: dict[str, str] | None = None,
             ) -> list[dict[str, Any]]:
    """Rows of one arm: per task, one run per cost, resolved unless ``outcomes``
    says otherwise (see tests.rows.runs)."""
    rows = []
    for task, task_costs in costs.items():
        marks = (outcomes or {}).get(task, "R" * len(task_costs))
        for r, cost in zip(runs(task, arm, marks), task_costs, strict=True):
            r["cost_usd"] = cost
            r["output_tokens"] = int(cost * 1000)
            rows.append(r)
    return rows


def incumbent(cost: float = 1.0, tasks: str = "abc", n: int = 3) -> list[dict[str, Any]]:
    return arm_rows(INCUMBENT, {t: [cost] * n for t in tasks})


def judge(rows: list[dict[str, Any]], *, state: str = "complete",
          health: dict[str, Health] | None = None, **policy: Any) -> dict[str, Any]:
    context = PromotionContext(sweep_state=state, digests=DIGESTS, now=NOW,  # type: ignore[arg-type]
                               health=health or {})
    evidence = decide(rows, CANDIDATE, INCUMBENT, PromotionPolicy(**policy), context)
    json.dumps(evidence, allow_nan=False)  # promotion.json takes it as it is
    return evidence


def held(evidence: dict[str, Any]) -> dict[str, bool]:
    return {c["name"]: c["held"] for c in evidence["conditions"]}


def failed(evidence: dict[str, Any]) -> list[str]:
    return [c["name"] for c in evidence["conditions"] if c["required"] and not c["held"]]


def test_a_cheaper_candidate_that_resolves_as_much_is_promoted() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.8, 0.7, 0.9] for t in "abc"})]
    evidence = judge(rows)
    assert evidence["verdict"] == PROMOTE and failed(evidence) == []
    assert evidence["reasons"] == ["every required condition held: cost_usd improved by "
                                   "20.0% over 3 tasks"]
    overall = evidence["overall"]
    assert overall["improvement_pct"] == pytest.approx(20.0)
    assert overall["interval_pct"] == pytest.approx([20.0, 20.0])
    assert overall["candidate"] == {"scored_runs": 9, "resolved_runs": 9, "resolved_tasks": 3,
                                    "median_sum": pytest.approx(2.4)}
    assert overall["incumbent"]["median_sum"] == pytest.approx(3.0)
    task = evidence["tasks"][0]
    assert task["task"] == "a" and task["improvement_pct"] == pytest.approx(20.0)
    assert task["candidate"] == {"scored_runs": 3, "resolved_runs": 3, "excluded_runs": 0,
                                 "resolved": True, "median": 0.8}
    low, high = task["interval_pct"]
    assert 10.0 - 1e-9 <= low <= 20.0 <= high <= 30.0 + 1e-9  # medians of resampled runs
    assert evidence["health"] == {CANDIDATE: "OBSERVED_OK", INCUMBENT: "OBSERVED_OK"}
    assert evidence["recorded_at"] == "2026-12-01T09:30:00Z"
    assert evidence["expires_at"] == "2026-12-08T09:30:00Z"
    assert evidence["digests"]["overlay"] == "sha256:overlay"
    assert list(evidence["digests"]["task_prompts"]) == ["a", "b"]
    assert evidence["policy"]["metric"] == "cost_usd" and evidence["policy"]["min_runs"] == 3


@pytest.mark.parametrize("state", ["aborted", "cancelled"])
def test_an_aborted_or_cancelled_sweep_never_promotes(state: str) -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"})]
    evidence = judge(rows, state=state)
    assert evidence["verdict"] == KEEP_INCUMBENT and failed(evidence) == ["sweep_complete"]
    assert evidence["reasons"] == [f"the sweep is {state}: its evidence is partial"]


def test_an_unusable_arm_never_promotes() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"})]
    given = judge(rows, health={INCUMBENT: Health.UNUSABLE})
    assert given["verdict"] == KEEP_INCUMBENT and failed(given) == ["arms_usable"]
    assert given["health"][INCUMBENT] == "UNUSABLE"
    # Judged from the rows when the context does not say: every fresh attempt of
    # the candidate failed its evidence, counted or not.
    skipped_skill = arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"},
                             {t: "SSS" for t in "abc"})
    evidence = judge([*incumbent(1.0), *skipped_skill])
    assert evidence["health"][CANDIDATE] == "UNUSABLE"
    assert "arms_usable" in failed(evidence)


def test_any_excluded_candidate_run_refuses() -> None:
    candidate = arm_rows(CANDIDATE, {"a": [0.5] * 4, "b": [0.5] * 3, "c": [0.5] * 3},
                         {"a": "RRXR"})
    evidence = judge([*incumbent(1.0), *candidate])
    # Three scored runs on every task for both: only the excluded run refuses.
    assert failed(evidence) == ["no_excluded_candidate_runs"]
    assert evidence["excluded_candidate_runs"] == ["a-candidate_workflow-r3"]
    assert evidence["tasks"][0]["candidate"]["excluded_runs"] == 1


def test_a_reused_excluded_row_is_not_a_fresh_run() -> None:
    candidate = arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"})
    candidate.append(row("a", CANDIDATE, 4, kind="infra-error", reused=True))
    assert judge([*incumbent(1.0), *candidate])["verdict"] == PROMOTE


def test_too_few_scored_runs_per_task_refuse() -> None:
    rows = [*incumbent(1.0, n=2), *arm_rows(CANDIDATE, {t: [0.5] * 2 for t in "abc"})]
    evidence = judge(rows)
    assert failed(evidence) == ["min_runs"]
    assert "fewer than 3 scored runs: a (candidate 2, incumbent 2)" in evidence["reasons"][0]
    assert judge(rows, min_runs=2)["verdict"] == PROMOTE


def test_paired_evidence_needs_the_same_number_of_scored_runs() -> None:
    """A candidate whose worst run is excluded must not gain by it: with the
    incumbent's four scored runs against its three, the evidence is not paired."""
    rows = [*incumbent(1.0, n=4), *arm_rows(CANDIDATE, {t: [0.5] * 4 for t in "abc"},
                                           {"b": "RRRX"})]
    rows = [r for r in rows if not (r["arm"] == CANDIDATE and r["run"] == 4 and r["task"] != "b")]
    evidence = judge(rows)
    assert set(failed(evidence)) == {"paired_runs", "no_excluded_candidate_runs"}
    # The same shape without any exclusion: a run the candidate never had.
    fewer = [r for r in rows if not (r["arm"] == CANDIDATE and r["run"] == 4)]
    evidence = judge(fewer)
    assert failed(evidence) == ["paired_runs"]
    assert evidence["reasons"][0] == (
        "different numbers of scored runs: a (candidate 3, incumbent 4), b (candidate 3, "
        "incumbent 4), c (candidate 3, incumbent 4)")


def test_a_small_improvement_is_not_enough() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.97] * 3 for t in "abc"})]
    evidence = judge(rows)
    assert failed(evidence) == ["min_improvement"]
    assert evidence["reasons"] == ["cost_usd improved by +3.0% overall (minimum 5%)"]
    assert judge(rows, min_improvement=2.0)["verdict"] == PROMOTE


def test_no_task_may_regress_beyond_the_maximum() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {"a": [0.3] * 3, "b": [0.3] * 3,
                                                   "c": [1.3] * 3})]
    evidence = judge(rows)
    assert evidence["overall"]["improvement_pct"] == pytest.approx(36.667, abs=1e-3)
    assert failed(evidence) == ["max_task_regression"]
    assert "c (-30.0%)" in evidence["reasons"][0]
    assert judge(rows, max_task_regression=35.0)["verdict"] == PROMOTE


def test_fewer_resolved_tasks_refuse() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"},
                                       {"b": "RFR"})]
    evidence = judge(rows)
    assert failed(evidence) == ["resolved_tasks"]
    assert evidence["reasons"] == ["candidate resolved 2 tasks, incumbent 3"]
    assert evidence["tasks"][1]["candidate"]["resolved"] is False
    # A task resolved in most of its runs counts under a laxer share.
    assert judge(rows, resolved_share=0.5)["verdict"] == PROMOTE


def test_significance_is_a_condition_only_when_required() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {"a": [0.5] * 3, "b": [1.1] * 3,
                                                   "c": [1.0] * 3})]
    lax = judge(rows)
    assert lax["verdict"] == PROMOTE
    significance = next(c for c in lax["conditions"] if c["name"] == "significance")
    assert significance["required"] is False and significance["held"] is False
    # Resampling b three times (1 in 27) makes it 10 % worse: the interval reaches below zero.
    assert lax["overall"]["interval_pct"][0] == pytest.approx(-10.0)
    strict = judge(rows, require_significance=True)
    assert strict["verdict"] == KEEP_INCUMBENT and failed(strict) == ["significance"]
    clear = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.8] * 3 for t in "abc"})]
    assert judge(clear, require_significance=True)["verdict"] == PROMOTE


def test_an_unmeasured_metric_cannot_promote() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.5] * 3 for t in "abc"})]
    for r in rows:
        if r["arm"] == CANDIDATE and r["task"] == "c":
            r["cost_usd"] = None
    evidence = judge(rows)
    assert {"min_improvement", "max_task_regression"} <= set(failed(evidence))
    assert "cost_usd is not known on every task" in evidence["reasons"]
    assert evidence["overall"]["candidate"]["median_sum"] is None
    by_tokens = judge(rows, metric="output_tokens")
    assert by_tokens["verdict"] == PROMOTE
    assert by_tokens["overall"]["improvement_pct"] == pytest.approx(50.0)


def test_no_rows_cannot_promote() -> None:
    evidence = judge([])
    assert evidence["verdict"] == KEEP_INCUMBENT
    assert {"min_runs", "paired_runs", "min_improvement", "max_task_regression"} <= set(
        failed(evidence))


def test_only_the_two_arms_are_read_and_tasks_nobody_ran_are_listed() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {t: [0.8] * 3 for t in "abc"}),
            *runs("a", "baseline", "XXX"), row("z", CANDIDATE, status="skipped"),
            row("z", INCUMBENT, status="skipped")]
    evidence = judge(rows)
    assert evidence["verdict"] == PROMOTE
    assert [t["task"] for t in evidence["tasks"]] == ["a", "b", "c"]
    assert evidence["tasks_not_run"] == ["z"]


def test_the_evidence_is_the_same_for_the_same_rows_in_any_order() -> None:
    rows = [*incumbent(1.0), *arm_rows(CANDIDATE, {"a": [0.5, 0.9, 0.7], "b": [1.0, 0.8, 1.2],
                                                   "c": [0.6, 0.6, 0.9]})]
    shuffled = list(rows)
    random.Random(5).shuffle(shuffled)
    assert json.dumps(judge(rows), sort_keys=True) == json.dumps(judge(shuffled), sort_keys=True)


def test_the_expiry_counts_from_now_in_utc() -> None:
    noon_at_plus_two = datetime(2026, 12, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    context = PromotionContext(sweep_state="complete", digests=DIGESTS, now=noon_at_plus_two)
    evidence = decide([], CANDIDATE, INCUMBENT, PromotionPolicy(expiry_days=1), context)
    assert (evidence["recorded_at"], evidence["expires_at"]) == ("2026-12-01T10:00:00Z",
                                                                 "2026-12-02T10:00:00Z")


def test_policy_and_context_are_checked() -> None:
    with pytest.raises(ValueError, match="diff_files"):
        PromotionPolicy(metric="diff_files")
    with pytest.raises(ValueError):
        PromotionPolicy(min_runs=0)
    with pytest.raises(ValueError):
        PromotionPolicy(resolved_share=0.0)
    with pytest.raises(ValueError, match="timezone"):
        PromotionContext(sweep_state="complete", digests=DIGESTS, now=datetime(2026, 12, 1))
    with pytest.raises(ValueError, match="sweep state"):
        PromotionContext(sweep_state="paused", digests=DIGESTS, now=NOW)  # type: ignore[arg-type]


def test_improvement_and_candidate_names() -> None:
    assert improvement(2.0, 1.5) == 25.0 and improvement(1.0, 1.2) == pytest.approx(-20.0)
    assert improvement(0.0, 0.0) == 0.0
    assert improvement(0.0, 1.0) is None and improvement(None, 1.0) is None
    assert candidate_arm("workflow") == CANDIDATE and incumbent_of(CANDIDATE) == INCUMBENT
    assert incumbent_of("workflow") is None and incumbent_of("candidate_") is None
    assert candidate_pairs(["candidate_b", "b", "a", "candidate_a", "candidate_gone"]) == [
        ("candidate_a", "a"), ("candidate_b", "b")]


@pytest.mark.parametrize("bad", [{"seed": 20261130.0}, {"seed": "7"}, {"confidence": 1.5},
                                 {"confidence": 0.0}, {"resamples": 0}, {"resamples": 2.5}])
def test_a_policy_the_bootstrap_cannot_follow_is_refused(bad: dict[str, Any]) -> None:
    """A float seed would be another random stream (random.Random hashes it), a
    confidence outside (0, 1) no interval: a clear error, never a made-up one."""
    with pytest.raises(ValueError, match=next(iter(bad))):
        PromotionPolicy(**bad)
