"""The promotion gate of a large sweep (decisions/gate.py, stats/medians.py):
its per-task intervals drawn for all resamples at once, its figures the
report's, its rows a few fields each. The evidence is the evidence the gate
gives of whole rows, one resample at a time, to the byte."""

from __future__ import annotations

import json
import math
import random
import statistics
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from pytest_wfbench.aggregate import summarize_table
from pytest_wfbench.decisions import Digests, PromotionContext, PromotionPolicy, decide
from pytest_wfbench.decisions.evidence import promotion_evidence
from pytest_wfbench.decisions.gate import improvement
from pytest_wfbench.stats import bootstrap
from pytest_wfbench.stats.bootstrap import stratified_bootstrap, stratified_median_intervals
from pytest_wfbench.stats.medians import DrawnMedians, row_medians
from pytest_wfbench.table import Table
from tests.rows import row

POOL = [3.0, 3.0, 7.5, 0.0, 1e308, 12.25, 2.0**-30, 40.0]


def column(rng: random.Random, size: int, *, missing: float, signed: bool) -> list[float]:
    values = [rng.choice(POOL) * rng.choice((1, 1, 1, 1e-3)) for _ in range(size)]
    if signed:
        values = [-v if rng.random() < 0.3 else v for v in values]  # -0.0 among them
    return [math.nan if rng.random() < missing else v for v in values]


def median_or_none(values: list[float], all_known: bool) -> float | None:
    known = [v for v in values if v == v]
    if not values or (all_known and len(known) < len(values)) or not known:
        return None
    return statistics.median(known)


@pytest.mark.parametrize("case", range(24))
def test_an_interval_of_medians_drawn_at_once_is_the_bootstraps(case: int) -> None:
    """stratified_bootstrap of improvement(median of the incumbent's draws,
    median of the candidate's), a resample at a time from lists, and the same
    drawn as matrices: the same interval, whatever the values (missing ones,
    zeros and -0.0, huge ones), the sizes (one run) and the batches."""
    rng = random.Random(case)
    sizes = [rng.choice((1, 2, 3, 7, 40)) for _ in range(2)]
    missing, signed, all_known = rng.choice((0.0, 0.2)), case % 3 == 0, case % 4 == 0
    strata = [column(rng, size, missing=missing, signed=signed) for size in sizes]
    resamples, seed = rng.choice((1, 7, 300)), rng.randrange(2**40)

    def statistic(drawn: list[list[float]]) -> float | None:
        return improvement(median_or_none(drawn[1], all_known),
                           median_or_none(drawn[0], all_known))

    def at_once(medians: list[Any]) -> Any:
        with np.errstate(all="ignore"):
            value = (medians[1] - medians[0]) / medians[1] * 100.0
        return np.where(medians[1] == 0, np.where(medians[0] == 0, 0.0, np.nan), value)

    expected = stratified_bootstrap(strata, statistic, seed=seed, resamples=resamples)
    shorter = [stratum[:max(1, len(stratum) // 2)] for stratum in strata]  # fewer draws
    original = bootstrap.BATCH_DRAWS
    for batch in (original, sum(sizes) * 2 + 1):  # batches of 2 resamples, and the rest
        bootstrap.BATCH_DRAWS = batch
        try:
            found = stratified_median_intervals([strata, strata[::-1], strata, shorter],
                                                at_once, all_known=all_known, seed=seed,
                                                resamples=resamples)
        finally:
            bootstrap.BATCH_DRAWS = original
        assert found[0] == found[2] == expected  # the same sizes share their draws
        assert found[1] == stratified_bootstrap(strata[::-1], statistic, seed=seed,
                                                resamples=resamples)
        assert found[3] == stratified_bootstrap(shorter, statistic, seed=seed,
                                                resamples=resamples)


@pytest.mark.parametrize("size", [31, 40_000])  # ranks held in 16 bits, and wider
def test_drawn_medians_are_the_medians_of_what_each_row_drew(size: int) -> None:
    rng = random.Random(9)
    for signed in (False, True):
        values = np.array(column(rng, size, missing=0.25, signed=signed))
        drawn = np.array([[rng.randrange(size) for _ in range(size)]
                          for _ in range(200 if size < 100 else 3)])
        expected = row_medians(values[drawn])
        for all_known in (False, True):
            want = expected.medians.copy()
            if all_known:
                want[expected.missing > 0] = np.nan
            assert np.array_equal(DrawnMedians(values).of(drawn, all_known=all_known), want,
                                  equal_nan=True)
            assert np.array_equal(np.signbit(DrawnMedians(values).of(drawn)),
                                  np.signbit(expected.medians))


def gate_rows(rng: random.Random) -> list[dict[str, Any]]:
    """A candidate and its incumbent (and another arm) over tasks, with what the
    gate reads varied: excluded runs, reused ones, missing costs, skipped cells,
    a task that only the incumbent ran."""
    rows = []
    for t in range(6):
        for arm in ("workflow", "candidate_workflow", "baseline"):
            if t == 5 and arm == "candidate_workflow":
                continue
            for run in range(1, rng.choice((3, 5)) + 1):
                kind = rng.choice((None, None, None, "oracle-failed", "infra-error"))
                each = row(f"task-{t}", arm, run, resolved=kind is None, kind=kind,
                           cost_usd=None if rng.random() < 0.1 else rng.choice((0.5, 1.25, 2.0)),
                           input_tokens=rng.randrange(100, 900), duration_s=rng.random() * 9,
                           session_duration_s=rng.choice((None, 1.5, 3.0, 4.25)),
                           overlay_digest="o" * 8 if arm.startswith("candidate") else None,
                           skills_fingerprint="s" * 8, model="claude", effort="high",
                           identity={"task": f"digest-{t}", "oracle": f"oracle-{t}",
                                     "other": "not read"})
                if rng.random() < 0.1:
                    each["reused"] = True
                if rng.random() < 0.05:
                    each["status"], each["skip_reason"] = "skipped", "not run: stopped"
                rows.append(each)
    return rows


@pytest.mark.parametrize("metric", ["cost_usd", "tokens", "session_duration_s"])
def test_the_reports_evidence_is_the_gates_of_whole_rows(metric: str) -> None:
    """What the report's gate weighs is read from the table's columns
    (decisions/evidence.py); decide() reads it of whole rows: the same evidence,
    whatever the order the report lists the rows in, and with runs tied in
    row_order (two cells of one task, arm and run: their order is the report's)."""
    rng = random.Random(len(metric))
    rows = gate_rows(rng)
    weighed = [n for n, r in enumerate(rows) if r["arm"] != "baseline"
               and r.get("status") == "ran" and r.get("counted") and not r.get("reused")]
    twins = {}  # a second cell of the same task, arm and run, listed before the first
    for n in weighed[:3] + weighed[-3:]:
        twins[len(rows)] = n
        rows.append(dict(rows[n], cell_id=f"{rows[n]['cell_id']}-again", cost_usd=9.5,
                         input_tokens=77, session_duration_s=0.25, counted=n != weighed[0]))
    table = Table.of(rows)
    order = list(table.positions)
    rng.shuffle(order)
    for twin, first in twins.items():
        if order.index(twin) > order.index(first):
            a, b = order.index(twin), order.index(first)
            order[a], order[b] = order[b], order[a]
    table.positions = type(table.positions)(table.positions.typecode, order)
    record: dict[str, Any] = {
        "settings": {"promotion": {"metric": metric, "resamples": 400, "min_runs": 2}},
        "sessions": [{"finished_at": "2026-12-02T00:00:00Z"}], "harness_version": "9"}
    summary = summarize_table(table, table.positions)
    found = promotion_evidence(table, table.positions, summary, record)
    own = [r for r in table.rows() if r["arm"] in ("workflow", "candidate_workflow")]
    digests = Digests(overlay="o" * 8, incumbent_skills="s" * 8,
                      task_prompts={f"task-{t}": f"digest-{t}" for t in range(6)},
                      oracles={f"task-{t}": f"oracle-{t}" for t in range(6)},
                      model="claude", effort="high", harness_version="9")
    context = PromotionContext("aborted", digests, datetime(2026, 12, 2, tzinfo=UTC),
                               {arm: summary.health[arm]
                                for arm in ("candidate_workflow", "workflow")})
    expected = decide(own, "candidate_workflow", "workflow",
                      PromotionPolicy(metric=metric, resamples=400, min_runs=2), context)
    assert [json.dumps(e, sort_keys=True) for e in found] == [
        json.dumps(expected, sort_keys=True)]
    assert expected["tasks_not_run"] == [] and len(expected["tasks"]) == 6
    assert any(t["interval_pct"] for t in expected["tasks"])


def test_a_tables_fields_are_its_rows_fields() -> None:
    rng = random.Random(3)
    rows = gate_rows(rng)
    rows[4]["run"] = "two"  # no number: the row is kept whole, and says so
    rows[7]["identity"] = {"oracle": "only"}
    table = Table.of(rows)
    names = ("cell_id", "run", "status", "counted", "reused", "cost_usd", "identity",
             "input_tokens", "model")
    expected = [{name: r[name] for name in names if r.get(name) is not None}
                for r in table.rows()]
    for name in names:
        assert table.column(name, table.positions) == [r.get(name) for r in expected], name
    assert expected[4]["run"] == "two" and expected[7]["identity"] == {"oracle": "only"}
    rows[9]["identity"] = "no mapping"  # kept whole: no part of it is read
    table = Table.of(rows)
    order = list(table.positions)[::-1]
    for name in names:
        assert table.column(name, order) == [table.row(i).get(name) for i in order], name
    for part in ("task", "oracle"):  # the parts held
        identities = [table.row(i).get("identity") for i in order]
        assert table.column("identity", order, part) == [
            value.get(part) if isinstance(value, dict) else None for value in identities]
    assert table.column("run", []) == []


def test_the_evidences_digests_are_each_the_first_rows_that_has_one() -> None:
    """Of the report's rows, in its order (not the file's): the first candidate
    row's overlay that is not empty, the first incumbent row's skills, each
    task's first prompt and oracle digest, the first model and effort; a row
    kept whole (its run no number) is read as it is, and an identity that is
    no mapping has no part."""
    rng = random.Random(5)
    rows = gate_rows(rng)
    for n, each in enumerate(rows):
        each["overlay_digest"] = f"o{n}" if n % 3 == 0 else ""
        each["skills_fingerprint"] = f"s{n}" if n % 4 == 1 else None
        each["model"], each["effort"] = f"m{n}", (f"e{n}" if n % 5 == 2 else None)
        each["identity"] = ({"task": f"p{n}"} if n % 2 else {"oracle": f"q{n}"}
                            if n % 7 else "no mapping")
    rows[10]["run"] = "two"  # kept whole
    rows[11]["identity"] = {"task": 7, "oracle": None}
    table = Table.of(rows)
    order = list(table.positions)
    random.Random(1).shuffle(order)
    table.positions = type(table.positions)(table.positions.typecode, order)
    summary = summarize_table(table, table.positions)
    record: dict[str, Any] = {"settings": {"promotion": {"resamples": 20, "min_runs": 2}},
                              "harness_version": "9"}
    [evidence] = promotion_evidence(table, table.positions, summary, record)
    shown = [table.row(i) for i in order]
    own = [r for r in shown if r["arm"] in ("workflow", "candidate_workflow")]

    def first(name: str, rows: list[dict[str, Any]]) -> str | None:
        return next((str(r[name]) for r in rows if r.get(name)), None)

    def by_task(part: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for r in own:
            identity = r.get("identity")
            value = identity.get(part) if isinstance(identity, dict) else None
            if value is not None:
                found.setdefault(str(r["task"]), str(value))
        return dict(sorted(found.items()))

    assert evidence["digests"] == {
        "overlay": first("overlay_digest", [r for r in own if r["arm"] != "workflow"]),
        "incumbent_skills": first("skills_fingerprint",
                                  [r for r in own if r["arm"] == "workflow"]),
        "task_prompts": by_task("task"), "oracles": by_task("oracle"),
        "model": first("model", own), "effort": first("effort", own), "harness_version": "9"}
    assert evidence["digests"]["overlay"] != first(
        "overlay_digest", [r for r in rows if r["arm"] == "candidate_workflow"])  # the order


def test_what_the_gate_reads_of_a_row_a_slim_row_has() -> None:
    """The report's table holds a listed agent row slim (schema.SLIM): every
    field the gate and its digests read of a row (Table.column) must be there."""
    from pytest_wfbench.aggregate.figures import METRICS
    from pytest_wfbench.decisions import GATE_FIELDS
    from pytest_wfbench.decisions.evidence import DIGEST_FIELDS
    from pytest_wfbench.fields import USAGE_FIELDS
    from pytest_wfbench.table.schema import SLIM

    read = {*GATE_FIELDS, *DIGEST_FIELDS, *USAGE_FIELDS, *METRICS} - {"tokens"}
    assert read <= SLIM, read - SLIM


@pytest.mark.parametrize("task", [5, None, ["a", "list"]])
def test_a_task_that_is_no_text_is_weighed_as_the_report_counts_it(task: Any) -> None:
    """A row's task that is no string (a hand-edited or hostile results file)
    is its text, as the report's figures take it: the gate never fails on it,
    and its scored runs are the report's."""
    rows = [row(f"t{t}", arm, r, resolved=True, cost_usd=1.0 + r + t)
            for t in range(2) for arm in ("workflow", "candidate_workflow") for r in range(1, 4)]
    for arm in ("workflow", "candidate_workflow"):
        for r in range(1, 4):
            odd = row("x", arm, r, resolved=True, cost_usd=2.0 + r)
            odd["task"] = task
            rows.append(odd)
    for n, each in enumerate(rows):
        each["cell_id"] = f"c{n}"
    table = Table.of(rows)
    summary = summarize_table(table, table.positions)
    record: dict[str, Any] = {"settings": {"promotion": {"resamples": 50, "min_runs": 2}},
                              "sessions": [{"finished_at": "2026-12-02T00:00:00Z"}]}
    [evidence] = promotion_evidence(table, table.positions, summary, record)
    scored = {t["task"]: t["candidate"]["scored_runs"] for t in evidence["tasks"]}
    assert scored == {cell.task: cell.valid for cell in summary.cells
                      if cell.arm == "candidate_workflow"}
    assert scored[str(task)] == 3
    assert all(t["interval_pct"] is not None for t in evidence["tasks"])


def test_a_run_that_is_no_number_is_weighed_as_the_report_orders_it() -> None:
    """A hand-edited row whose run is no number is kept whole; the report's
    figures take its run as 0 (row_order of whole rows fails on it): the
    report's gate reads the same columns, and never fails on it."""
    rows = [row(f"t{t}", arm, r, resolved=True, cost_usd=1.0 + r + t)
            for t in range(2) for arm in ("workflow", "candidate_workflow") for r in range(1, 4)]
    rows[4]["run"] = "two"
    for n, each in enumerate(rows):
        each["cell_id"] = f"c{n}"
    table = Table.of(rows)
    summary = summarize_table(table, table.positions)
    record: dict[str, Any] = {"settings": {"promotion": {"resamples": 50, "min_runs": 2}}}
    [evidence] = promotion_evidence(table, table.positions, summary, record)
    assert [t["candidate"]["scored_runs"] for t in evidence["tasks"]] == [3, 3]
    assert all(t["interval_pct"] is not None for t in evidence["tasks"])
