"""report.html of a sweep larger than DETAIL_CELLS: every cell counted in the
grid, the header and the plots (from the report's table), the listed cells
shown whole (their rows read again, by their lines), and the same figures as a
page of every cell."""

from __future__ import annotations

import gc
import math
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench import heap, outdir, store
from pytest_wfbench.aggregate import summarize
from pytest_wfbench.outdir import write_report
from pytest_wfbench.redact import Redactor
from pytest_wfbench.render.html import overview, render_html
from pytest_wfbench.render.html.cell import outcome
from pytest_wfbench.render.html.charts import tick_label
from pytest_wfbench.render.html.overview import NAMES, outcome_at, outcomes_at, overview_of
from pytest_wfbench.render.html.page import DISTRIBUTIONS
from pytest_wfbench.store import ResultsStore
from pytest_wfbench.table import Table
from tests.rows import row, runs

PROVENANCE = {"sweep_id": "s1", "suite": "big", "sandbox_backend": "bubblewrap"}
METRICS = [name for name, _ in DISTRIBUTIONS]
SQUARE = re.compile(r'<a class="sq f o-(\w+)"(?: href="#cell-([^"]+)")? title="([^"]+)"'
                    r' data-task="([^"]+)" data-arm="([^"]+)"[^>]*>(\d+)</a>')
CELL = re.compile(r'<details class="cell f" id="cell-([^"]+)"')


def sweep_rows() -> list[dict[str, Any]]:
    """Every outcome of the page, on three tasks and two arms, with costs."""
    rows: list[dict[str, Any]] = []
    for t in ("t1", "t2", "t3"):
        rows += runs(t, "baseline", "RRFTSX-R", cost_usd=0.5, input_tokens=100)
        rows += runs(t, "workflow", "RFRRRRXR", cost_usd=0.25, input_tokens=60)
    rows.append(row("t1", "workflow", 9, resolved=True, suspicious=["writes conftest.py"],
                    cost_usd=0.3))
    rows.append(row("t2", "workflow", 9, kind="harness-error", cost_usd=0.3))
    rows.append(row("t3", "workflow", 9, kind="suspicious", suspicious=["exit"],
                    cost_usd=0.3))
    for i, r in enumerate(rows):
        r["cost_usd"] = None if r["status"] == "skipped" else r["cost_usd"] + i / 1000
    return rows


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overview, "DETAIL_CELLS", 10)
    monkeypatch.setattr(overview, "LISTED_CELLS", 4)
    monkeypatch.setattr(overview, "DOTS_PER_ARM", 5)


def test_the_outcome_from_the_columns_is_the_rows_own() -> None:
    rows = sweep_rows()
    # Kept as projections, without error_class: a review row, one that fits no column.
    rows.append(row("t1", "review", 1, kind="oracle-failed", review={"verdict": "approve"}))
    rows.append(row("t1", "review", 2, kind="skill-not-invoked", review={"verdict": "x"}))
    rows.append(row("t2", "odd", 1, kind="verify-failed", num_turns="many"))
    rows.append({**row("t2", "odd", 2), "error_kind": ["no", "text"]})  # hashes as no kind
    rows.append({**row("t3", "odd", 1), "lane": None, "status": ["ran"]})
    table = Table.of(rows)
    assert [outcome_at(table, i) for i in table.positions] == [outcome(r) for r in rows]
    # All at once, as the grid takes them: the same.
    assert [NAMES[place] for place in outcomes_at(table, table.positions)] == [
        outcome(r) for r in rows]
    plain = Table.of(sweep_rows())  # no row kept whole but the listed ones
    assert [NAMES[place] for place in outcomes_at(plain, plain.positions)] == [
        outcome_at(plain, i) for i in plain.positions]
    assert {outcome(r) for r in rows} == {"resolved", "suspicious", "negative", "failure",
                                         "excluded", "skipped"}


def test_the_runs_drawn_are_evenly_spaced_in_order_of_value_the_ends_among_them(
        small_limits: None) -> None:
    rows = [row("t", "a", run, resolved=True, cost_usd=float((run * 37) % 101))
            for run in range(101)]
    skewed = [row("t", "a", run, resolved=True, cost_usd=float(run) ** 3) for run in range(9)]
    drawn = overview_of(Table.of(skewed), ["cost_usd"]).spreads["cost_usd"]["a"].drawn
    assert [value for value, _, _ in drawn] == [0.0, 8.0, 64.0, 216.0, 512.0]  # by rank
    rows.append(row("t", "a", 200, resolved=True, cost_usd=None))  # no figure: left out
    spread = overview_of(Table.of(rows), ["cost_usd"]).spreads["cost_usd"]["a"]
    assert [value for value, _, _ in spread.drawn] == [0.0, 25.0, 50.0, 75.0, 100.0]
    assert spread.runs == 101 and spread.median == 50.0
    assert spread.drawn[1][1] == next(r["cell_id"] for r in rows if r["cost_usd"] == 25.0)
    few = overview_of(Table.of(rows[:3]), ["cost_usd"]).spreads["cost_usd"]["a"]
    assert sorted(value for value, _, _ in few.drawn) == sorted(
        r["cost_usd"] for r in rows[:3]) and few.median == 37.0


def test_a_large_page_counts_every_cell_and_shows_the_listed_ones_whole(
        small_limits: None) -> None:
    rows = sweep_rows()
    table = Table.of(rows)
    assert overview.large(len(rows))
    seen = overview_of(table, METRICS)
    page = render_html(summarize(rows), seen.detailed, PROVENANCE, overview=seen)
    assert f"&middot; {len(rows)} cells" in page
    # The grid: per task, arm and outcome one square, its count the rows'.
    squares = SQUARE.findall(page)
    assert squares
    counted = {(task, arm, kind): int(n) for kind, _, _, task, arm, n in squares}
    expected: dict[tuple[str, str, str], int] = {}
    for r in rows:
        key = (r["task"], r["arm"], outcome(r))
        expected[key] = expected.get(key, 0) + 1
    assert counted == expected
    # The header's badges count every cell.
    for kind in ("resolved", "excluded", "skipped"):
        n = sum(1 for r in rows if outcome(r) == kind)
        assert f'<span class="badge o-{kind}">{n} ' in page
    # Whole: the listed cells, suspicious wins first, at most LISTED_CELLS.
    shown = CELL.findall(page)
    assert len(shown) == 4 and seen.listed > 4
    assert {"t1-workflow-r9", "t3-workflow-r9"} <= set(shown)
    assert not any(outcome(r) == "skipped" for r in rows if r["cell_id"] in shown)
    assert "more than 10" in page and f"4 of {seen.listed}" in page
    assert 'data-noun="cells shown whole">4 of 4 cells shown whole</span>' in page
    # A square links to a cell only when that cell is on the page.
    for _, href, *_ in squares:
        assert not href or href in shown
    # A resolved run that is not listed is counted, not shown whole.
    assert "t1-baseline-r1" not in shown


def test_a_large_pages_plots_draw_some_runs_and_the_median_of_all(small_limits: None) -> None:
    rows = sweep_rows()
    seen = overview_of(Table.of(rows), METRICS)
    page = render_html(summarize(rows), seen.detailed, PROVENANCE, overview=seen)
    chart = page[page.index("Cost (USD) per counted run"):]
    chart = chart[:chart.index("</figure>")]
    assert "At most 5 runs drawn per arm" in chart
    for arm in ("baseline", "workflow"):
        costs = sorted(r["cost_usd"] for r in rows if r["arm"] == arm
                       and r["status"] == "ran" and r["counted"])
        assert len(costs) > 5
        dots = re.findall(rf"<title>[^<]*-{arm}-r\d+: ([0-9.]+) ", chart)
        assert len(dots) == 5
        # The smallest and the largest are drawn; the bar is every run's median.
        assert float(dots[0]) == pytest.approx(costs[0], abs=1e-4)
        assert float(dots[-1]) == pytest.approx(costs[-1], abs=1e-4)
        assert f"<title>{arm}: median {tick_label(statistics.median(costs))}</title>" in chart


def written_sweep(out: Path) -> tuple[ResultsStore, list[dict[str, Any]]]:
    """sweep_rows() as a sweep's rows in ``out``, a row at a time."""
    results = ResultsStore(out, Redactor([]))
    results.prepare()
    rows = sweep_rows()
    for r in rows:
        r["sweep_id"] = "s1"
        results.append(r)
    return results, rows


def test_a_large_sweeps_page_reads_no_row_again_but_those_it_details(
        tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows are not read again: the page's detailed cells (LISTED_CELLS at
    most), whose rows the table holds slim, are read whole from their lines."""
    results, rows = written_sweep(tmp_path)

    def no_rows(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a large page read the rows again")

    monkeypatch.setattr(outdir, "iter_rows", no_rows)
    monkeypatch.setattr(store, "iter_rows", no_rows)
    report, html = write_report(results)
    assert html.path is not None and not html.failed, html.line
    page = html.path.read_text()
    assert f"&middot; {len(rows)} cells" in page and len(CELL.findall(page)) == 4
    assert report.files["report.md"] == (tmp_path / "report.md").read_text()
    assert report.table.slimmed and report.table.read_whole is not None


def test_a_sweep_at_the_limit_shows_every_cell_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, rows = written_sweep(tmp_path)
    monkeypatch.setattr(overview, "DETAIL_CELLS", len(rows))
    _, html = write_report(results)
    assert html.path is not None
    page = html.path.read_text()
    assert sorted(CELL.findall(page)) == sorted(r["cell_id"] for r in rows)
    assert "more than" not in page


def lane_row(run: int) -> dict[str, Any]:
    return row("loop", "git", run, resolved=True, lane="tool-cost", transport="local_file",
               totals={},
               steps=[{"operation": "push", "step_kind": "vcs", "elapsed_ms": 4.0 + run,
                       "measured": True}])


def test_every_lane_row_reaches_the_lanes_whatever_is_shown_whole(small_limits: None) -> None:
    rows = [*runs("a", "baseline", "XXXXXX"), *[lane_row(run) for run in (1, 2, 3)]]
    seen = overview_of(Table.of(rows), METRICS)
    assert len(seen.detailed) == 4 and len(seen.lane_rows) == 3
    page = render_html(summarize(rows[:6]), seen.detailed, PROVENANCE, overview=seen)
    assert "Tool-cost scenarios and subjects" in page and 'id="lanes"' in page
    assert page.count('data-task="loop"') >= 1
    # the lane grid has a square per lane run, each its own run number
    lane_grid = page[page.index("Tool-cost scenarios and subjects"):]
    lane_grid = lane_grid[:lane_grid.index("</table>")]
    assert len(re.findall(r'class="sq f o-', lane_grid)) == 3


def test_harness_errors_are_shown_whole_before_other_excluded_runs(small_limits: None) -> None:
    rows = [*runs("a-task", "arm", "XXXXXX"), row("z-task", "arm", 1, kind="harness-error")]
    seen = overview_of(Table.of(rows), METRICS)
    assert "z-task-arm-r1" in [r["cell_id"] for r in seen.detailed]
    assert [r["cell_id"] for r in seen.detailed] == sorted(
        r["cell_id"] for r in seen.detailed)  # shown in row order


def test_a_large_page_that_fails_is_reported_not_raised(
        tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    results, _ = written_sweep(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("boom")

    monkeypatch.setattr("pytest_wfbench.render.html.glue.overview_of", broken)
    report, html = write_report(results)
    assert html.failed and html.path is None and "ValueError: boom" in html.line
    assert (tmp_path / "report.md").read_text() == report.files["report.md"]


@pytest.mark.parametrize("large", [False, True])
def test_a_large_report_is_frozen_out_of_the_collectors_reach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """What a large report built lives as long as its process (the end of a
    sweep, a wfbench command): frozen, later collections never walk it (they
    took 0.1 s of a 100,000-row report's end); a small one is left alone."""
    results, rows = written_sweep(tmp_path)
    monkeypatch.setattr(heap, "FREEZE_FROM", len(rows) if large else len(rows) + 1)
    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(gc.isenabled()))
    _, html = write_report(results)
    assert html.path is not None and not html.failed, html.line
    # Frozen while the collector is paused: no collection walks it first.
    assert frozen == ([False, False] if large else [])
    assert gc.isenabled()


def test_a_large_page_of_infinite_and_negative_figures_is_drawn(small_limits: None) -> None:
    """Counts past the largest float (infinite totals), an infinite cost and a
    negative one: their medians are labelled as they are, their dots drawn at
    the axis' ends; the page is made (an infinite median raised)."""
    rows = [*runs("t", "a", "RRRRRR", cost_usd=0.5),
            *[row("t", "b", run, resolved=True, input_tokens=1e308, output_tokens=1e308,
                  cost_usd=math.inf if run % 2 else -1.0) for run in range(1, 8)]]
    seen = overview_of(Table.of(rows), METRICS)
    assert seen.spreads["tokens"]["b"].median == math.inf
    page = render_html(summarize(rows), seen.detailed, PROVENANCE, overview=seen)
    assert "<title>b: median inf</title>" in page
    assert 'cx="inf"' not in page and 'cx="-inf"' not in page


def test_a_row_whose_lane_is_null_is_not_the_agents_on_either_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's rows on the page are the report's (Table.agent: lane "agent",
    or no lane at all): a row whose lane is null is another's, on a large page
    (counted in the grid) as on a small one (a square each)."""
    rows = [*runs("t", "a", "RRFRRF"), {**row("t", "a", 9, resolved=True), "lane": None}]
    table = Table.of(rows)
    assert len(table.agent()) == 6
    monkeypatch.setattr(overview, "DETAIL_CELLS", 5)
    seen = overview_of(table, METRICS)
    page = render_html(summarize(rows[:6]), seen.detailed, PROVENANCE, overview=seen)
    counted = {(task, arm, kind): int(n) for kind, _, _, task, arm, n in SQUARE.findall(page)}
    assert counted[("t", "a", "resolved")] == 4
    monkeypatch.setattr(overview, "DETAIL_CELLS", 500)
    small = render_html(summarize(rows[:6]), rows, PROVENANCE)
    assert 'title="t-a-r1: ' in small and 'title="t-a-r9: ' not in small
