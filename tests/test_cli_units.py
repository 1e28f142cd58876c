"""The pure parts of the wfbench command: merge decisions, the comparison of
two sweeps and its markdown, and the soundness verdicts of validate --gold."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_wfbench.cli.compare import render_markdown
from pytest_wfbench.cli.mergeplan import INCOMPLETE, MergeError, MergeInput, plan_merge
from pytest_wfbench.cli.sweepdiff import compare_sweeps, outcome
from pytest_wfbench.cli.validate import _verdict
from pytest_wfbench.stats import cluster_bootstrap, paired_difference_interval, wilson_interval
from pytest_wfbench.stats.proportions import PairedTable
from tests.rows import row, runs

NOW = "2026-12-01T00:00:00Z"
IDENTITY = {"task": "1" * 64, "base_sha": "2" * 40, "oracle": "3" * 64, "arm": "4" * 64,
            "model": None, "effort": None, "sandbox_backend": "bubblewrap",
            "harness_version": "0.1.0"}


def cell(task: str, arm: str, run: int = 1, *, sweep: str = "s1", shard: str | None = None,
         recorded_at: str = "2026-11-30T10:00:00Z", **fields: Any) -> dict[str, Any]:
    return {**row(task, arm, run, **fields), "sweep_id": sweep, "shard": shard,
            "identity": dict(IDENTITY, **fields.pop("identity", {})),
            "recorded_at": recorded_at, "artifacts": [], "merged_from": None}


def shard_input(label: str, index: int, count: int, assignment: dict[str, int],
                rows: list[dict[str, Any]], sweep: str = "s1",
                state: str = "complete") -> MergeInput:
    record = {"sweep_id": sweep, "suite": "demo", "harness_version": "0.1.0",
              "settings": {"runs": 1, "arms": None, "baseline_arm": None},
              "task_files": [{"path": "/t/demo.yaml", "sha256": "x"}],
              "sessions": [{"state": state, "reason": "stopped" if state != "complete" else None,
                            "plan": {}}],
              "shard": {"index": index, "count": count, "label": f"{index}/{count}",
                        "assignment": assignment}}
    return MergeInput(label, record, rows)


ASSIGNMENT = {"a": 1, "b": 2, "c": 2}


def three_shards() -> list[MergeInput]:
    return [shard_input("s-1", 1, 2, ASSIGNMENT, [cell("a", "gold", shard="1/2", resolved=True),
                                                   cell("a", "noop", shard="1/2",
                                                        kind="oracle-failed")]),
            shard_input("s-2", 2, 2, ASSIGNMENT, [cell("b", "gold", shard="2/2", resolved=True),
                                                   cell("c", "gold", shard="2/2", resolved=True)])]


def test_the_shards_of_one_sweep_merge_into_it() -> None:
    plan = plan_merge(three_shards(), now=NOW)
    assert plan.sweep_id == "s1"
    assert [r["cell_id"] for _, r in plan.rows] == ["a-gold-r1", "a-noop-r1", "b-gold-r1",
                                                     "c-gold-r1"]
    assert all(r["sweep_id"] == "s1" and r["merged_from"] is None for _, r in plan.rows)
    assert [index for index, _ in plan.rows] == [0, 0, 1, 1]
    assert plan.state == "complete" and plan.reason is None
    record = plan.record
    assert record["shard"] is None and record["suite"] == "demo"
    assert record["task_files"] == [{"path": "/t/demo.yaml", "sha256": "x"}]
    assert record["settings"] == {"runs": 1, "arms": None, "baseline_arm": None}
    assert [s.get("source") for s in record["sessions"]] == ["s-1", "s-2", None]
    assert record["sessions"][-1]["kind"] == "merge"
    assert [m["shard"] for m in record["merged_from"]] == ["1/2", "2/2"]


def test_a_missing_shard_is_refused_unless_allowed_then_the_sweep_is_incomplete() -> None:
    first = three_shards()[:1]
    with pytest.raises(MergeError, match=r"shard 2/2 of sweep s1 missing; its tasks have no "
                                         r"rows: b, c\. Merge every shard"):
        plan_merge(first, now=NOW)
    plan = plan_merge(first, now=NOW, allow_missing_shards=True)
    assert plan.state == INCOMPLETE
    assert plan.reason == "partial evidence: shard 2/2 of sweep s1 missing; its tasks have no " \
                          "rows: b, c"


def test_shards_split_differently_or_holding_other_tasks_are_refused() -> None:
    first, second = three_shards()
    other = shard_input("s-2b", 2, 2, {"a": 1, "b": 1, "c": 2}, second.rows)
    with pytest.raises(MergeError, match="s-1 and s-2b are shards of sweep s1 that split it "
                                         "differently"):
        plan_merge([first, other], now=NOW)
    stray = shard_input("s-2c", 2, 2, ASSIGNMENT, [*second.rows, cell("a", "other")])
    with pytest.raises(MergeError, match="s-2c is shard 2/2 of sweep s1 but has rows of tasks "
                                         "another shard runs: a"):
        plan_merge([first, stray], now=NOW)


def test_an_overlapping_cell_of_another_identity_is_refused_naming_the_parts() -> None:
    old = MergeInput("old", {"sweep_id": "s1"}, [cell("a", "gold", resolved=True)])
    new = MergeInput("new", {"sweep_id": "s2"}, [
        cell("a", "gold", sweep="s2", identity={"arm": "c" * 64, "model": "m"})])
    with pytest.raises(MergeError) as raised:
        plan_merge([old, new], now=NOW)
    assert str(raised.value) == (
        "refused: cell a-gold-r1: old and new measured it with different identities: "
        f"arm ({'4' * 12} vs {'c' * 12}), model (n/a vs m)")


def test_identical_overlaps_are_taken_once_and_others_keep_the_first_admissible_row() -> None:
    same = cell("a", "gold", resolved=True)
    failed = cell("b", "gold", kind="oracle-failed", recorded_at="2026-11-30T09:00:00Z")
    later_win = cell("b", "gold", sweep="s2", resolved=True, recorded_at="2026-11-30T11:00:00Z")
    excluded = cell("c", "gold", kind="infra-error", recorded_at="2026-11-30T08:00:00Z")
    counted = cell("c", "gold", sweep="s2", resolved=True)
    skipped = cell("d", "gold", status="skipped")
    ran = cell("d", "gold", sweep="s2", kind="verify-failed")
    plan = plan_merge([MergeInput("x", {"sweep_id": "s1"}, [same, failed, excluded, skipped]),
                       MergeInput("y", {"sweep_id": "s2"}, [dict(same, sweep_id="s1"),
                                                            later_win, counted, ran])], now=NOW)
    kept = {r["cell_id"]: (index, r) for index, r in plan.rows}
    assert kept["a-gold-r1"][0] == 0
    # A counted failure is never re-rolled into a later success; an excluded run
    # gives way to a counted one, a skip to a row that ran.
    assert kept["b-gold-r1"][1]["error_kind"] == "oracle-failed"
    assert kept["c-gold-r1"][1]["resolved"] is True
    assert kept["d-gold-r1"][1]["error_kind"] == "verify-failed"
    notes = {o.cell_id: o for o in plan.overlaps}
    assert notes["a-gold-r1"].identical and "taken once" in notes["a-gold-r1"].note
    assert {r["cell_id"] for r in plan.dropped} == {"b-gold-r1", "c-gold-r1", "d-gold-r1"}
    # Two sweeps: a merged id from both, and each row keeps the id it was measured in.
    assert plan.sweep_id.startswith("merged-") and len(plan.sweep_id) == len("merged-") + 16
    assert plan_merge([MergeInput("y", {"sweep_id": "s2"}, []),
                       MergeInput("x", {"sweep_id": "s1"}, [])], now=NOW).sweep_id == plan.sweep_id
    assert {r["merged_from"] for _, r in plan.rows} == {"s1", "s2"}
    assert {r["sweep_id"] for _, r in plan.rows} == {plan.sweep_id}
    assert plan_merge([MergeInput("x", {"sweep_id": "s1"}, [same])], now=NOW,
                      sweep_id="given").sweep_id == "given"


def test_merged_settings_and_states() -> None:
    a = MergeInput("a", {"sweep_id": "s1", "settings": {"runs": 1, "arms": ["gold"],
                                                        "baseline_arm": "gold"},
                         "sessions": [{"state": "cancelled", "reason": "SIGTERM"}]}, [])
    b = MergeInput("b", {"sweep_id": "s2", "settings": {"runs": 3, "arms": ["noop", "gold"],
                                                        "baseline_arm": "noop"},
                         "sessions": [{"state": "complete"}]}, [])
    with pytest.raises(MergeError, match=r"different baseline arms .*--baseline-arm"):
        plan_merge([a, b], now=NOW)
    plan = plan_merge([a, b], now=NOW, baseline_arm="gold")
    assert plan.record["settings"] == {"runs": [1, 3], "arms": ["gold", "noop"],
                                       "baseline_arm": "gold"}
    assert (plan.state, plan.reason) == ("cancelled", "a: SIGTERM")
    assert plan.record["sessions"][-1]["state"] == "cancelled"


def sweep_pair() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    old = [*runs("a", "arm", "RRF", output_tokens=100, cost_usd=1.0),
           *runs("b", "arm", "RFF", output_tokens=300, cost_usd=3.0),
           *runs("c", "arm", "FFF", output_tokens=200, cost_usd=2.0)]
    new = [*runs("a", "arm", "RRR", output_tokens=80, cost_usd=0.5),
           *runs("b", "arm", "RRF", output_tokens=240, cost_usd=2.0),
           *runs("c", "arm", "FFX", output_tokens=200, cost_usd=2.5)]
    for r in old + new:
        r["identity"] = dict(IDENTITY)
    for r in new:
        if r["task"] == "b":
            r["identity"]["oracle"] = "9" * 64
    return old, new


def test_compare_rates_medians_and_changed_cells_against_independent_values() -> None:
    old, new = sweep_pair()
    diff = compare_sweeps(old, new, old_record={"sweep_id": "o"}, new_record={"sweep_id": "n"},
                          resamples=500)
    (arm,) = diff.arms
    assert arm.old is not None and arm.new is not None
    assert (arm.old.resolved, arm.old.valid) == (3, 9)
    assert (arm.new.resolved, arm.new.valid) == (5, 8)  # c-arm-r3 is excluded
    assert arm.new.interval == wilson_interval(5, 8)
    # Pairs over cells both counted (8): new resolved where old did not: a-r3 and
    # b-r2; never the other way; both: a-r1, a-r2, b-r1; neither: b-r3, c-r1, c-r2.
    table = PairedTable(both=3, first_only=2, second_only=0, neither=3)
    assert arm.pairs == table
    assert arm.difference == pytest.approx(2 / 8)
    assert arm.interval == paired_difference_interval(table)
    assert arm.p_value == pytest.approx(0.5)  # exact McNemar: 2 * (1/2)^2
    tokens = next(m for m in arm.medians if m.metric == "tokens")
    assert (tokens.old, tokens.new, tokens.tasks) == (200.0, 520 / 3, 3)
    assert tokens.difference == pytest.approx(((80 - 100) + (240 - 300) + 0) / 3)
    assert tokens.interval == cluster_bootstrap(
        [(100.0, 80.0), (300.0, 240.0), (200.0, 200.0)],
        lambda pairs: sum(n - o for o, n in pairs) / len(pairs), resamples=500)
    cost = next(m for m in arm.medians if m.metric == "cost_usd")
    assert cost.difference == pytest.approx((-0.5 - 1.0 + 0.5) / 3)
    changed = {c.cell_id: (c.old, c.new, c.identity) for c in diff.changed}
    assert changed == {"a-arm-r3": ("oracle-failed", "resolved", []),
                       "b-arm-r2": ("oracle-failed", "resolved", ["oracle"]),
                       "c-arm-r3": ("oracle-failed", "session-error (excluded)", [])}
    (identity,) = diff.identity
    assert (identity.part, identity.owner, identity.new) == ("oracle", "b", "9" * 64)
    assert identity.cells == ["b-arm-r1", "b-arm-r2", "b-arm-r3"]
    assert diff.unchanged == 6 and diff.only_old == [] and diff.only_new == []
    text = render_markdown(diff, "OLD", "NEW")
    assert "| arm | 3/9 (12%-65%) | 5/8 (31%-86%) | 8 | +25.0 pts |" in text
    assert "| b-arm-r2 | oracle-failed | resolved | oracle |" in text
    assert f"| oracle | b | {'3' * 12} | {'9' * 12} | b-arm-r1, b-arm-r2, b-arm-r3 |" in text
    assert render_markdown(diff, "OLD", "NEW") == text  # the same diff, the same bytes
    assert diff.to_json()["changed_cells"][1]["identity_changes"] == ["oracle"]


def test_compare_names_cells_in_one_sweep_only_and_settings() -> None:
    old = [cell("a", "gold", resolved=True), cell("b", "gold", resolved=True)]
    new = [cell("a", "gold", resolved=True), cell("z", "gold", resolved=True)]
    diff = compare_sweeps(old, new, old_record={"settings": {"model": "m1"}},
                          new_record={"settings": {"model": "m2"}, "harness_version": "0.2"})
    assert diff.only_old == ["b-gold-r1"] and diff.only_new == ["z-gold-r1"]
    assert diff.settings == {"harness_version": (None, "0.2"), "model": ("m1", "m2")}
    assert outcome(cell("x", "y", status="skipped")) == "skipped"


@pytest.mark.parametrize(("gold", "noop", "clean", "sound", "reason"), [
    ({"resolved": True}, {"error_kind": "oracle-failed"}, False, True, "sound: gold resolves"),
    ({"error_kind": "verify-failed"}, {"error_kind": "oracle-failed"}, False, False,
     "unsound: gold does not resolve it (verify-failed"),
    ({"resolved": True}, {"resolved": True}, False, False, "unsound: noop resolves it"),
    ({"resolved": True}, {"resolved": True}, True, True, "sound"),
    ({"resolved": True}, {"error_kind": "oracle-failed"}, True, False, "unsound: a clean control"),
    ({"status": "skipped"}, {"error_kind": "oracle-failed"}, False, False,
     "not proven: its gold cell was skipped"),
    ({"resolved": True}, {"error_kind": "infra-error"}, False, False,
     "not proven: its noop cell is an excluded run (infra-error"),
    ({"resolved": True}, None, False, False, "not proven: its noop cell has no row"),
])
def test_soundness_verdicts(gold: dict[str, Any], noop: dict[str, Any] | None, clean: bool,
                            sound: bool, reason: str) -> None:
    def as_row(arm: str, fields: dict[str, Any] | None) -> dict[str, Any] | None:
        if fields is None:
            return None
        kind = fields.get("error_kind")
        return row("t", arm, kind=kind, resolved=bool(fields.get("resolved")),
                   status=fields.get("status", "ran"))

    verdict = _verdict("t", as_row("gold", gold), as_row("noop", noop), clean)
    assert verdict.sound is sound
    assert verdict.reason.startswith(reason)
