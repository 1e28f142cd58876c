"""Aggregation, health, savings and comparisons: pure functions on hand-built rows."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.aggregate import (
    Health,
    Settings,
    arm_health,
    health,
    median_of,
    savings,
    summarize,
)
from pytest_wfbench.aggregate.figures import METRICS, medians_at, task_arm_at
from pytest_wfbench.redact import Redactor
from pytest_wfbench.stats import (
    PairedTable,
    exact_mcnemar,
    paired_difference_interval,
    pass_at_k,
    pass_hat_k,
    wilson_interval,
)
from pytest_wfbench.store import ResultsStore, read_rows
from pytest_wfbench.table import Table
from tests.rows import row, runs


def test_medians_count_only_admissible_rows() -> None:
    rows = [row("t", "a", 1, resolved=True, input_tokens=100, cost_usd=1.0),
            row("t", "a", 2, kind="verify-failed", input_tokens=300, cost_usd=3.0),
            row("t", "a", 3, kind="session-error", input_tokens=9999, cost_usd=99.0)]
    summary = summarize(rows)
    (cell,) = summary.cells
    assert (cell.resolved, cell.valid, len(cell.excluded)) == (1, 2, 1)
    assert cell.medians["tokens"] == 200 and cell.medians["cost_usd"] == 2.0
    assert cell.error_counts == {"session-error": 1, "verify-failed": 1}
    assert [(r.run, r.resolved) for r in cell.counted_runs] == [(1, True), (2, False)]


def test_each_usage_field_has_its_own_median_and_tokens_is_the_median_of_totals() -> None:
    rows = [row("t", "a", 1, input_tokens=100, output_tokens=0, cache_read_input_tokens=7),
            row("t", "a", 2, input_tokens=0, output_tokens=100, cache_read_input_tokens=9),
            row("t", "a", 3, input_tokens=1, output_tokens=1, cache_creation_input_tokens=4,
                cache_read_input_tokens=8)]
    medians = summarize(rows).cells[0].medians
    assert (medians["input_tokens"], medians["output_tokens"]) == (1, 1)
    assert (medians["cache_creation_input_tokens"], medians["cache_read_input_tokens"]) == (0, 8)
    # Totals per run are 107, 109 and 14: not the sum of the per-field medians (10).
    assert medians["tokens"] == 107


def test_session_time_cell_time_and_overhead_are_separate_figures() -> None:
    rows = [row("t", "a", i, session_duration_s=s, duration_s=d, harness_overhead_s=d - s)
            for i, (s, d) in enumerate([(10.0, 14.0), (20.0, 21.0), (30.0, 40.0)], start=1)]
    medians = summarize(rows).cells[0].medians
    assert medians["session_duration_s"] == 20.0
    assert medians["duration_s"] == 21.0
    assert medians["harness_overhead_s"] == 4.0


def test_cost_median_is_null_when_any_counted_cost_is_unknown() -> None:
    rows = [row("t", "a", 1, cost_usd=1.0), row("t", "a", 2, cost_usd=None)]
    assert median_of(rows, "cost_usd") is None
    assert median_of(rows, "duration_s") == 1.0


def test_an_arm_combines_the_mean_of_its_per_task_medians() -> None:
    rows = [*(row("easy", "a", i, output_tokens=n, cost_usd=float(n), num_turns=n)
              for i, n in enumerate([1, 2, 3], start=1)),
            row("hard", "a", 1, output_tokens=10, cost_usd=10.0, num_turns=10),
            row("lost", "a", 1, kind="infra-error", output_tokens=999, cost_usd=999.0)]
    arm = summarize(rows).arm("a")
    # Medians 2 and 10; a pooled median of the runs would be 2.5; "lost" has no
    # counted row and does not count as a task.
    assert arm.medians["output_tokens"] == arm.medians["cost_usd"] == 6.0
    assert arm.medians["num_turns"] == 6.0 and arm.medians["estimated_tokens"] is None
    assert arm.tasks == 2 and (arm.resolved, arm.valid, len(arm.excluded)) == (0, 4, 1)
    unknown = summarize([*rows, row("free", "a", 1, cost_usd=None, output_tokens=0)])
    assert unknown.arm("a").medians["cost_usd"] is None
    assert unknown.arm("a").medians["output_tokens"] == pytest.approx(4.0)


def test_a_session_timeout_is_a_counted_unresolved_run_not_a_failure() -> None:
    rows = runs("t", "hang", "RT", output_tokens=50)
    summary = summarize(rows)
    cell = summary.cells[0]
    assert (cell.resolved, cell.valid, cell.excluded) == (1, 2, [])
    assert cell.error_counts == {"session-timeout": 1}
    assert summary.arm("hang").health.status is Health.OBSERVED_OK


@pytest.mark.parametrize(("kinds", "expected"), [
    ([], Health.UNKNOWN),
    ([None, "oracle-failed", "session-timeout"], Health.OBSERVED_OK),
    ([None, "infra-error"], Health.DEGRADED),
    (["verify-failed", "skill-not-invoked"], Health.DEGRADED),
    (["skill-not-invoked"], Health.UNUSABLE),  # counted, yet the arm never did what it is
    (["skill-not-invoked", "evidence-tampered", "session-error"], Health.UNUSABLE),
    (["infra-error", "session-error"], Health.UNUSABLE),
    (["oracle-unavailable"], Health.UNUSABLE),
])
def test_health(kinds: list[str | None], expected: Health) -> None:
    assert health([row("t", "a", i, kind=k) for i, k in enumerate(kinds)]) is expected


def test_health_counters_and_reasons() -> None:
    rows = [row("t", "a", 1, resolved=True), row("t", "a", 2, kind="session-error"),
            row("t", "a", 3, kind="skill-not-invoked"), row("t", "a", 4, kind="oracle-failed"),
            row("t", "a", 5, kind="skill-not-invoked"), row("t", "a", 6, status="skipped"),
            row("t", "a", 7, kind="infra-error", reused=True)]
    status = arm_health(rows)
    assert status.status is Health.DEGRADED
    assert (status.fresh, status.admissible) == (5, 4)
    assert (status.execution_failures, status.evidence_failures) == (1, 2)
    assert status.reasons == {"session-error": 1, "skill-not-invoked": 2}
    assert status.describe() == ("3 of 5 fresh attempts failed: session-error x1, "
                                 "skill-not-invoked x2")


def test_reused_and_skipped_rows_are_not_fresh_attempts() -> None:
    assert health([row("t", "a", status="skipped")]) is Health.UNKNOWN
    assert health([row("t", "a", kind="infra-error", reused=True)]) is Health.UNKNOWN


def test_savings_per_task_and_overall_against_baseline() -> None:
    assert savings(200.0, 150.0) == 25.0
    assert savings(100.0, 150.0) == -50.0
    assert savings(0.0, 1.0) is None and savings(None, 1.0) is None
    rows = [*runs("a", "baseline", "RR", input_tokens=200, session_duration_s=10.0),
            *runs("a", "workflow", "RR", input_tokens=150, session_duration_s=20.0),
            *runs("b", "baseline", "RR", input_tokens=600, session_duration_s=10.0),
            *runs("b", "workflow", "RR", input_tokens=150, session_duration_s=10.0)]
    summary = summarize(rows)
    assert summary.baseline_arm == "baseline"
    per_task = {(s.task, s.arm): s for s in summary.task_savings}
    assert per_task[("a", "workflow")].savings["input_tokens"] == 25.0
    assert per_task[("a", "workflow")].savings["session_duration_s"] == -100.0
    assert per_task[("b", "workflow")].savings["tokens"] == 75.0
    overall = summary.savings["workflow"]
    # The sums of per-task medians: (800 - 300) / 800, and (20 - 30) / 20.
    assert overall.savings["tokens"] == pytest.approx(62.5)
    assert overall.savings["session_duration_s"] == pytest.approx(-50.0)
    assert overall.tasks == ["a", "b"] and not overall.unresolved
    interval = overall.intervals["tokens"]
    # Two tasks: resamples are aa (25 %), bb (75 %) or mixed (62.5 %).
    assert interval is not None and interval.low == 25.0 and interval.high == 75.0
    flipped = summarize(rows, baseline_arm="workflow")
    assert flipped.savings["baseline"].savings["tokens"] == pytest.approx(-500 / 3)


def test_a_saving_where_the_arm_did_not_resolve_is_flagged() -> None:
    rows = [*runs("a", "baseline", "RRF", output_tokens=100),
            *runs("a", "cheap", "RFF", output_tokens=10),       # less often than baseline
            *runs("a", "same", "FRR", output_tokens=50),        # as often
            *runs("b", "baseline", "FFF", output_tokens=100),
            *runs("b", "cheap", "FFF", output_tokens=10),       # never: flagged, baseline too
            *runs("b", "same", "RFX", output_tokens=50)]        # 1/2 against 0/3
    summary = summarize(rows)
    flags = {(s.task, s.arm): s.unresolved for s in summary.task_savings}
    assert flags == {("a", "cheap"): True, ("a", "same"): False,
                     ("b", "cheap"): True, ("b", "same"): False}
    assert summary.savings["cheap"].flagged_tasks == ["a", "b"]
    assert summary.savings["cheap"].unresolved
    assert summary.savings["same"].flagged_tasks == [] and not summary.savings["same"].unresolved
    assert summary.savings["cheap"].savings["output_tokens"] == pytest.approx(90.0)


def test_overall_savings_need_known_costs_and_common_tasks() -> None:
    rows = [row("a", "baseline", cost_usd=2.0), row("a", "arm", cost_usd=1.0),
            row("b", "baseline", cost_usd=2.0), row("b", "arm", cost_usd=None),
            row("c", "arm", cost_usd=0.1)]  # the baseline never ran c
    overall = summarize(rows).savings["arm"]
    assert overall.tasks == ["a", "b"]
    assert overall.savings["cost_usd"] is None and overall.intervals["cost_usd"] is None
    single = summarize(rows[:2]).savings["arm"]
    assert single.savings["cost_usd"] == 50.0 and single.intervals["cost_usd"] is None


def test_the_bootstrap_interval_is_reproducible_and_follows_the_seed() -> None:
    rng = random.Random(4)
    rows = [row(f"t{t}", arm, r, output_tokens=rng.randrange(50, 500))
            for t in range(6) for arm in ("baseline", "arm") for r in (1, 2, 3)]
    first = summarize(rows).savings["arm"].intervals["output_tokens"]
    assert first == summarize(list(reversed(rows))).savings["arm"].intervals["output_tokens"]
    other = summarize(rows, settings=Settings(seed=99)).savings["arm"].intervals["output_tokens"]
    assert first is not None and other is not None and first != other


def test_paired_comparison_pairs_run_r_with_run_r_of_counted_rows() -> None:
    rows = [*runs("a", "baseline", "RRFF"), *runs("a", "arm", "RFRF"),
            *runs("b", "baseline", "RFX"), *runs("b", "arm", "RRR"),
            *runs("c", "arm", "RR")]  # no baseline on c: nothing to pair
    comparison = summarize(rows).comparisons["arm"]
    # a: both, baseline only, arm only, neither; b: both, arm only (run 3 has no
    # counted baseline row).
    assert comparison.table == PairedTable(both=2, first_only=2, second_only=1, neither=1)
    assert (comparison.tasks, comparison.runs) == (2, 4)
    assert comparison.difference == pytest.approx(1 / 6)
    assert comparison.p_value == exact_mcnemar(2, 1)
    assert comparison.interval == paired_difference_interval(comparison.table)
    assert comparison.too_small and comparison.needed is not None
    assert comparison.needed.baseline_rate == pytest.approx(3 / 6)


def test_a_clear_difference_is_not_too_small_to_tell() -> None:
    rows = [r for t in range(10) for r in (*runs(f"t{t}", "baseline", "FFF"),
                                           *runs(f"t{t}", "arm", "RRR"))]
    comparison = summarize(rows).comparisons["arm"]
    assert comparison.table == PairedTable(0, 30, 0, 0)
    assert comparison.interval is not None and comparison.interval.low > 0
    assert not comparison.too_small and comparison.needed is None
    assert comparison.p_value == pytest.approx(2 / 2 ** 30)


def test_without_pairs_the_comparison_plans_for_one_half() -> None:
    rows = [*runs("a", "baseline", "XX"), *runs("a", "arm", "RR")]
    comparison = summarize(rows).comparisons["arm"]
    assert comparison.table.pairs == 0 and comparison.interval is None
    assert comparison.p_value is None and comparison.difference is None
    assert comparison.too_small and comparison.needed is not None
    assert comparison.needed.baseline_rate == 0.5


def test_pass_k_per_arm_over_tasks_with_enough_runs() -> None:
    rows = [*runs("a", "arm", "RRF"), *runs("b", "arm", "RFX"), *runs("c", "arm", "XXX")]
    passes = summarize(rows).arm("arm").pass_k
    assert [p.k for p in passes] == [1, 2, 3] and [p.tasks for p in passes] == [2, 2, 1]
    assert passes[0].pass_at_k == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert passes[1].pass_at_k == pytest.approx(statistics.fmean(
        [pass_at_k(3, 2, 2), pass_at_k(2, 1, 2)]))
    assert passes[1].pass_hat_k == pytest.approx(statistics.fmean(
        [pass_hat_k(3, 2, 2), pass_hat_k(2, 1, 2)]))
    assert (passes[2].pass_at_k, passes[2].pass_hat_k) == (1.0, 0.0)


def test_resolve_rates_carry_wilson_intervals() -> None:
    rows = [*runs("a", "arm", "RRF"), *runs("b", "arm", "RFFF")]
    summary = summarize(rows)
    assert summary.arm("arm").resolve_interval == wilson_interval(3, 7)
    assert summary.cells[0].resolve_interval() == wilson_interval(2, 3)
    assert summarize(runs("a", "arm", "XX")).arm("arm").resolve_interval is None


def test_rows_are_taken_in_task_arm_run_order() -> None:
    rows = [row("b", "z", 10), row("b", "z", 9), row("a", "z", 2), row("a", "y", 1),
            row("b", "y", 1, status="skipped")]
    summary = summarize(rows)
    assert [(g.task, g.arm) for g in summary.cells] == [("a", "y"), ("a", "z"), ("b", "y"),
                                                        ("b", "z")]
    assert [a.arm for a in summary.arms] == ["y", "z"]
    assert [r.run for r in summary.cells[3].counted_runs] == [9, 10]
    assert [r["cell_id"] for r in summary.skipped] == ["b-y-r1"]


def test_no_baseline_no_savings() -> None:
    summary = summarize([row("t", "gold"), row("t", "noop")])
    assert summary.baseline_arm is None and summary.savings == {}
    assert summary.comparisons == {} and summary.task_savings == []


def test_redactor_replaces_secrets_in_text_and_data() -> None:
    redactor = Redactor.from_environment(["MY_TOKEN"], {"ANTHROPIC_API_KEY": "sk-ant-12345678",
                                                        "MY_TOKEN": "tok-abcdefgh",
                                                        "OTHER": "not-a-secret"})
    assert redactor.text("key sk-ant-12345678!") == "key [REDACTED]!"
    assert redactor.data({"a": ["tok-abcdefgh", 1, None], "sk-ant-12345678": "x"}) == {
        "a": ["[REDACTED]", 1, None], "[REDACTED]": "x"}
    assert redactor.text("not-a-secret") == "not-a-secret"
    assert Redactor(["short"]).text("short") == "short"


@pytest.mark.parametrize("seed", range(4))
def test_a_stream_is_redacted_and_neutralized_as_its_whole_text(seed: int) -> None:
    """Redactor.clean_stream (report.html is written in parts): the parts joined
    are clean() of the whole text, whatever the pieces and the part size, with
    secrets that overlap, repeat and fall across pieces and parts."""
    rng = random.Random(seed)
    for _ in range(400):
        # Secrets of a few letters overlap and repeat; with parts of the
        # replacement in them, a replacement and its neighbours make another.
        letters = rng.choice(["ab\x1bc", "ab[]RED", "[REDACTED]xy"])
        secrets = ["".join(rng.choice(letters) for _ in range(rng.randint(8, 14)))
                   for _ in range(rng.randint(0, 3))]
        redactor = Redactor(secrets)
        text = "".join(rng.choice([*letters, "\n", "\u202e", "[REDACTED]", *secrets])
                       for _ in range(rng.randint(0, 300)))
        pieces, start = [], 0
        while start < len(text):
            end = start + rng.randint(0, 20)
            pieces.append(text[start:end])
            start = end
        parts = list(redactor.clean_stream(iter(pieces), size=rng.randint(1, 40)))
        assert "".join(parts) == redactor.clean(text), (secrets, text)
    assert list(Redactor([]).clean_stream([])) == [""]
    chained = Redactor(["LONGSECRET-1234", "hunter22["])
    assert "".join(chained.clean_stream(["xx hunter22", "LONGSECRET-1234 yy"], size=5)) == (
        chained.clean("xx hunter22LONGSECRET-1234 yy")) == "xx [REDACTED]REDACTED] yy"


def test_a_torn_last_line_does_not_swallow_the_next_row(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path, Redactor([]))
    store.prepare()
    store.append({"cell_id": "a", "sweep_id": "s"})
    with store.results.open("a") as handle:
        handle.write('{"cell_id": "b", "sweep_')  # a writer killed mid-line
    store.append({"cell_id": "c", "sweep_id": "s"})
    assert [row["cell_id"] for row in read_rows(store.results, "s")] == ["a", "c"]


def medians_of(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    table = Table.of(rows)
    return medians_at(table, table.positions)


def test_medians_of_every_metric_are_median_of_each() -> None:
    """The medians of a table's columns are median_of() of the rows, metric by metric."""
    rng = random.Random(11)
    for size in (0, 1, 2, 3, 10, 51):
        rows = []
        for _ in range(size):
            fields: dict[str, Any] = {}
            for name in METRICS[1:]:
                draw = rng.random()
                if draw < 0.6:
                    fields[name] = rng.randrange(0, 10**6) if draw < 0.3 else rng.uniform(0, 1e3)
                elif draw < 0.8:
                    fields[name] = None
            rows.append(fields)
        medians = medians_of(rows)
        assert list(medians) == list(METRICS)
        assert medians == {name: median_of(rows, name) for name in METRICS}
    known = [{"cost_usd": 1.0, "input_tokens": 3}, {"cost_usd": 2.0, "output_tokens": 2}]
    assert medians_of(known)["cost_usd"] == 1.5 and medians_of(known)["tokens"] == 2.5
    assert medians_of([*known, {}])["cost_usd"] is None


def test_counted_runs_of_one_number_and_outcome_are_one_object() -> None:
    """A report of 100,000 counted runs holds a few Run objects, not one each."""
    table = Table.of([*runs("t", "a", "RRFR"), *runs("u", "a", "RRFR")])
    first = task_arm_at(table, table.positions[:4], "t", "a").counted_runs
    second = task_arm_at(table, table.positions[4:], "u", "a").counted_runs
    assert first == second == [(1, True), (2, True), (3, False), (4, True)]
    assert all(one is other for one, other in zip(first, second, strict=True))


def test_many_groups_figures_at_once_are_each_groups_row_by_row() -> None:
    """The summary takes every (task, arm)'s figures at once (figures.GroupFigures,
    groups_in_run_order): each is what a loop over that group's rows gives,
    whatever the runs (missing, negative, fractional, tied), statuses, flags
    and error kinds."""
    from collections import Counter

    from pytest_wfbench.aggregate.figures import (
        GroupFigures,
        groups_in_run_order,
        run_number,
        shared_run,
    )

    rng = random.Random(12)
    rows = []
    for n in range(400):
        each = row(f"t{rng.randrange(9)}", rng.choice("ab"), rng.choice([1, 2, 3, 3, 7]),
                   status=rng.choice(["ran", "ran", "ran", "skipped", "other"]),
                   kind=rng.choice([None, None, "infra-error", "oracle-failed"]))
        each["run"] = rng.choice([each["run"], None, -2, 2.5, "x"])
        each["counted"] = rng.choice([True, False, None, 1])
        each["resolved"] = rng.choice([True, False, None])
        if rng.random() < 0.05:
            each["error_kind"] = rng.choice([5, "", "odd-kind"])
        each["cell_id"] = f"c{n}"
        rows.append(each)
    table = Table.of(rows)
    groups: dict[tuple[str, str], list[int]] = {}
    for i in table.positions:
        groups.setdefault((str(table.value("task", i)), str(table.value("arm", i))), []).append(i)
    keys = sorted(groups)
    run = table.number("run")
    ordered = groups_in_run_order(table, [groups[key] for key in keys])
    assert ordered == [sorted(groups[key], key=lambda i: run_number(run[i])) for key in keys]
    figures = GroupFigures(table, ordered)
    for n, (key, members) in enumerate(zip(keys, ordered, strict=True)):
        whole = [table.row(i) for i in members]
        ran = [r for r in whole if r.get("status") == "ran"]
        counted = [r for r in ran if r.get("counted") is True or r.get("counted") == 1]
        found = figures.task_arm(n, *key, {})
        assert (found.attempts, found.valid, found.skipped) == (
            len(ran), len(counted), sum(r.get("status") == "skipped" for r in whole))
        assert found.resolved == sum(bool(r.get("resolved")) for r in counted)
        assert found.excluded == [r for r in ran if r not in counted]
        kinds = Counter(str(r["error_kind"]) for r in ran if r.get("error_kind"))
        assert found.error_counts == dict(sorted(kinds.items()))
        assert found.counted_runs == [shared_run(run_number(run[i]), bool(table.row(i).get(
            "resolved"))) for i in members if table.row(i) in counted]
        assert figures.counted[n] == [i for i in members if table.row(i) in counted]
    rows[0]["run"] = float("inf")  # no run number: it fails as it did, row by row
    table = Table.of(rows)
    with pytest.raises(OverflowError):
        groups_in_run_order(table, [list(table.positions)])


@pytest.mark.rows_by_hand
def test_a_report_of_no_agent_rows_is_made(tmp_path: Path) -> None:
    """No row at all, only a tool-cost lane's, or no row of the sweep: the
    summary has no group to take at once, and the report is still made."""
    from pytest_wfbench.outdir import build_report

    assert summarize([]).cells == []
    lane = row("t", "a", 1, lane="tool-cost", sweep_id="s")
    for rows in ([], [lane], [row("t", "a", 1, sweep_id="another")]):
        (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tmp_path / "sweep.json").write_text(json.dumps({"sweep_id": "s"}))
        report = build_report(tmp_path)
        assert report.summary.cells == [] and "report.md" in report.files
