"""report.html in a real browser: Debian's Chromium, headless, driven by
Playwright, on the page a real sweep wrote. It loads from file:// with no
console error and no request off the file, its charts draw, the filters hide
cells, a grid square opens its cell, and nothing an arm wrote runs.

Screenshots are kept for people to look at: .tools/artifacts/report.png (and
report-agent.png from the agent sweep), git-ignored."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Locator, Page, expect, sync_playwright

from tests.conftest import Suite, script_arm, task_yaml, write_suite
from tests.fakeapi import FakeAnthropic, Usage, tool_use, turn

CHROMIUM = Path(os.environ.get("WFBENCH_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parent.parent / ".tools" / "artifacts"
DEMO = Path(__file__).resolve().parent.parent / "tasks" / "demo.yaml"
HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">.txt'
HOSTILE_TEXT = "</textarea></pre><script>window.__pwned=2</script>"
MODEL = "claude-sonnet-4-5"


@dataclass
class Browser:
    page: Page
    console: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def open(self, path: Path) -> Page:
        self.page.goto(path.as_uri())
        return self.page


def open_by_square(page: Page, href: str) -> Locator:
    """Click the square linking to a cell, and wait for the page's script to
    open the cell: it does on ``hashchange``, an event that comes after the
    click returns (reading the cell at once raced it on a loaded machine)."""
    page.click(f"a.sq[href='{href}']")
    cell = page.locator(f"[id='{href.removeprefix('#')}']")
    expect(cell).to_have_attribute("open", "")
    return cell


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    """Chromium with a fresh profile; every console error, page error and
    request is recorded."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"Chromium is not installed at {CHROMIUM}: `make test` installs it "
                    "(apt-get install chromium), or set WFBENCH_TEST_CHROMIUM")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=str(CHROMIUM), headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            found = Browser(page)

            def on_console(message: ConsoleMessage) -> None:
                if message.type in ("error", "warning"):
                    found.console.append(f"{message.type}: {message.text}")

            page.on("console", on_console)
            page.on("pageerror", lambda error: found.console.append(f"pageerror: {error}"))
            page.on("request", lambda request: found.requests.append(request.url))
            yield found
        finally:
            context.close()


def keep_screenshot(page: Page, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    kept = SCREENSHOTS / name
    shutil.copyfile(shot, kept)
    print(f"screenshot of report.html: {kept}")
    return kept


def visible_cells(page: Page) -> list[str]:
    return sorted(page.eval_on_selector_all(
        "details.cell", "cells => cells.filter(c => !c.hidden).map(c => c.id.slice(5))"))


def demo_like_suite(base: Path) -> Suite:
    """Two tasks on the calc project under gold, noop, a fixing script and a
    script whose file name, content and command carry markup; plus a
    tool-cost scenario run by git and Mercurial."""
    vandal = script_arm(f"printf '%s\\n' '{HOSTILE_TEXT}' > '{HOSTILE_NAME}'")
    return write_suite(
        base, tasks=[task_yaml("fix-add"), task_yaml("fix-add-again", **{"class": "regression"})],
        arms=["gold", "noop", "fixer", "vandal"],
        arm_definitions={"fixer": script_arm("sed -i 's/a - b/a + b/' calc.py",
                                             "python -m pytest -q -p no:cacheprovider tests"),
                         "vandal": vandal},
        extra={"subjects": {"git": {"binary": "git"}, "hg": {"binary": "hg", "driver": "hg"}},
               "scenarios": [{"id": "task_loop", "kind": "task_loop",
                              "subjects": ["git", "hg"]}]})


def drawn_charts(page: Page, section: str) -> dict[str, Locator]:
    """The charts of a section by their captions, in page order; each drew (an
    SVG of some size with marks in it) and carries its title for screen readers."""
    charts: dict[str, Locator] = {}
    figures = page.locator(f"{section} figure.chart-box")
    for i in range(figures.count()):
        figure = figures.nth(i)
        caption = figure.locator("figcaption").inner_text()
        svg = figure.locator("svg.chart")
        assert svg.count() == 1, f"{caption}: no chart drawn"
        box = svg.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50, caption
        assert svg.locator("circle, rect").count() > 0, f"{caption}: an empty chart"
        assert svg.locator("title").first.text_content(), caption
        charts[caption] = svg
    return charts


def assert_loads_cleanly(browser: Browser, report: Path) -> None:
    assert browser.console == []
    assert browser.requests == [report.as_uri()], "the page asked for something off the file"
    assert browser.page.evaluate("typeof window.__pwned") == "undefined"


def test_the_report_of_a_sweep_renders_filters_and_keeps_arm_text_inert(
    pytester: pytest.Pytester, browser: Browser, tmp_path: Path
) -> None:
    suite = demo_like_suite(pytester.path)
    result = pytester.runpytest_subprocess(*suite.args("-n", "2", "--wfbench-runs", "2"))
    result.assert_outcomes(passed=12, failed=4, xfailed=4)
    report = suite.out / "report.html"
    result.stdout.fnmatch_lines([f"wfbench html:   {report}"])
    rows = suite.rows()
    page = browser.open(report)
    assert_loads_cleanly(browser, report)

    # Each chart the page is meant to have draws, under its title: resolve rate against
    # spend (scripted arms spend estimated tokens), the distributions per arm, the
    # lane's steps. Cost and model tokens are n/a and 0 for scripted arms: each says so.
    plots = drawn_charts(page, "#plots")
    assert list(plots) == ["Resolve rate (95% Wilson interval) against median est. tokens, "
                           "per arm", "Est. tokens (scripted arms) per counted run",
                           "Session time (s) per counted run"]
    assert plots["Resolve rate (95% Wilson interval) against median est. tokens, per arm"] \
        .locator("circle").count() == 4  # one point per arm
    for name in ("Est. tokens (scripted arms)", "Session time (s)"):
        dots = plots[f"{name} per counted run"].locator("circle")
        assert dots.count() == 16, name  # a dot per counted run (the lane's are not here)
    notes = page.inner_text("#plots")
    assert "Cost (USD) per counted run: nothing to draw: no counted run measured it" in notes
    assert "Tokens per counted run: nothing to draw: every counted run's is 0" in notes
    lanes = drawn_charts(page, "#lanes")
    assert list(lanes) == ["task_loop on local_file: median ms per step"]
    lane = lanes["task_loop on local_file: median ms per step"]
    assert lane.locator("rect").count() > 10
    legend = lane.text_content() or ""
    assert "git" in legend and "hg" in legend

    # Every row is a cell and a square of a grid.
    every = sorted(r["cell_id"] for r in rows)
    assert visible_cells(page) == every
    assert page.locator("a.sq").count() == len(rows)

    # Filters hide cells (and squares) that do not match, and Show all brings them back.
    page.select_option("select[data-filter=arm]", "gold")
    gold = sorted(r["cell_id"] for r in rows if r["arm"] == "gold")
    assert visible_cells(page) == gold and len(gold) == 4
    assert page.locator("#cell-fix-add-noop-r1").is_hidden()
    assert page.locator("a.sq:visible").count() == 4
    assert page.inner_text("#filter-count") == f"4 of {len(rows)} cells"
    page.select_option("select[data-filter=arm]", "")
    page.select_option("select[data-filter=outcome]", "negative")
    negative = sorted(r["cell_id"] for r in rows if r["status"] == "ran" and r["counted"]
                      and not r["resolved"])
    assert visible_cells(page) == negative and len(negative) == 8
    page.select_option("select[data-filter=task]", "fix-add-again")
    assert visible_cells(page) == [c for c in negative if c.startswith("fix-add-again-")]
    assert page.locator("tr[data-task=fix-add]").is_hidden()
    page.click("#filter-reset")
    assert visible_cells(page) == every

    # A square opens its cell; the vandal's file name and text show as text.
    cell = open_by_square(page, "#cell-fix-add-vandal-r1")
    shown = cell.inner_text()
    assert HOSTILE_NAME in shown and HOSTILE_TEXT in shown
    assert page.locator("img, textarea").count() == 0
    assert page.locator("script").count() == 1
    assert cell.locator("pre.diff .d-add").count() >= 1
    assert cell.locator("pre.diff .d-header").count() >= 1
    assert open_by_square(page, "#cell-task_loop-hg-r1").locator("table.steps").is_visible()
    assert_loads_cleanly(browser, report)

    page.click("#close-all")
    page.goto(report.as_uri())
    keep_screenshot(page, tmp_path, "report.png")


@pytest.mark.cli
def test_the_demo_report_renders_and_its_screenshot_is_kept(
    pytester: pytest.Pytester, browser: Browser, tmp_path: Path
) -> None:
    """The bundled demo suite as `make demo` sweeps it: its page loads cleanly,
    draws its charts, and its screenshot is kept (.tools/artifacts/demo-report.png)."""
    out = pytester.path / "out"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wfbench-tasks", str(DEMO),
                                           "--wfbench-out", str(out), "-n", "2")
    assert result.ret == 0, result.stdout.str()[-2000:]
    report = out / "report.html"
    page = browser.open(report)
    assert_loads_cleanly(browser, report)
    charts = drawn_charts(page, "#plots")
    assert any(caption.startswith("Resolve rate (95% Wilson interval)") for caption in charts), \
        list(charts)
    cells = visible_cells(page)
    assert {"add-median-gold-r1", "add-median-noop-r1"} <= set(cells)
    kept = keep_screenshot(page, tmp_path, "demo-report.png")
    assert kept.stat().st_size > 10_000


def test_an_agent_cell_shows_its_transcript_as_turns(
    pytester: pytest.Pytester, browser: Browser, tmp_path: Path, claude_cli: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real CLI against the fake API: its transcript artifact becomes turns
    with the tool call, its trimmed result and the tokens of each turn."""
    monkeypatch.setenv("WFBENCH_ANTHROPIC_API_KEY", f"sk-ant-test-{secrets.token_hex(16)}")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    fix = tool_use("Bash", {"command": "sed -i 's/a - b/a + b/' calc.py && echo "
                            f"'{HOSTILE_TEXT}'", "description": "fix add"})
    script: list[Any] = [turn(fix, usage=Usage(1000, 50, 200, 300)),
                         turn("Fixed add().", usage=Usage(1200, 60, 0, 1500))]
    suite = write_suite(pytester.path, arms=["baseline", "gold"])
    with FakeAnthropic(script) as api:
        result = pytester.runpytest_subprocess(*suite.args(
            "--wfbench-model", MODEL, "--wfbench-base-url", api.base_url,
            "--wfbench-claude", str(claude_cli)))
    result.assert_outcomes(passed=2)
    report = suite.out / "report.html"
    page = browser.open(report)
    assert_loads_cleanly(browser, report)
    cell = open_by_square(page, "#cell-fix-add-baseline-r1")
    assistant = cell.locator(".turn.assistant")
    assert assistant.count() == 2
    assert "in 1,000 · cache w 200 · cache r 300 · out 50" in assistant.first.inner_text()
    assert "in 1,200 · cache w 0 · cache r 1,500 · out 60" in assistant.nth(1).inner_text()
    assert cell.locator(".tool-use .tool").first.inner_text() == "Bash"
    result_block = cell.locator("details.tool-result").first
    result_block.locator("summary").click()
    assert HOSTILE_TEXT in result_block.inner_text()
    assert "Fixed add()." in assistant.nth(1).inner_text()
    # Cost against resolve rate, with the CLI's cost on x; the distributions of cost
    # (the CLI's only: gold's is n/a) and of tokens (gold's are 0) per arm.
    plots = drawn_charts(page, "#plots")
    assert list(plots) == ["Resolve rate (95% Wilson interval) against median cost (USD), "
                           "per arm", "Cost (USD) per counted run", "Tokens per counted run",
                           "Session time (s) per counted run"]  # nothing estimated: no chart
    assert plots["Cost (USD) per counted run"].locator("circle").count() == 1
    tokens = plots["Tokens per counted run"]
    assert tokens.locator("circle").count() == 2
    assert "fix-add-baseline-r1: 4,310" in (tokens.text_content() or "")
    assert page.locator("script").count() == 1
    assert_loads_cleanly(browser, report)
    keep_screenshot(page, tmp_path, "report-agent.png")


def test_a_large_sweeps_page_filters_its_counted_grid_and_opens_a_listed_cell(
    browser: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_wfbench.aggregate import summarize
    from pytest_wfbench.render.html import overview, render_html
    from pytest_wfbench.render.html.overview import overview_of
    from pytest_wfbench.render.html.page import DISTRIBUTIONS
    from pytest_wfbench.table import Table
    from tests.rows import runs

    monkeypatch.setattr(overview, "DETAIL_CELLS", 10)
    monkeypatch.setattr(overview, "LISTED_CELLS", 3)
    rows = [*runs("t1", "baseline", "RRFX", cost_usd=0.5), *runs("t1", "workflow", "RXR-",
                                                                    cost_usd=0.2),
            *runs("t2", "baseline", "RFFX", cost_usd=0.6), *runs("t2", "workflow", "RRRX",
                                                                    cost_usd=0.3)]
    seen = overview_of(Table.of(rows), [name for name, _ in DISTRIBUTIONS])
    report = tmp_path / "report.html"
    report.write_text(render_html(summarize(rows), seen.detailed,
                                  {"sweep_id": "s1", "suite": "big"}, overview=seen))
    page = browser.open(report)
    assert f"{len(rows)} cells" in page.inner_text("header")
    # One square per task, arm and outcome, with its runs; 3 cells shown whole.
    squares = page.locator("a.sq")
    assert sum(int(squares.nth(i).inner_text()) for i in range(squares.count())) == len(rows)
    assert len(visible_cells(page)) == 3
    assert page.inner_text("#filter-count") == "3 of 3 cells shown whole"
    page.select_option("select[data-filter=outcome]", "excluded")
    assert all(page.locator("a.sq:visible").nth(i).get_attribute("data-outcome") == "excluded"
               for i in range(page.locator("a.sq:visible").count()))
    assert page.locator("a.sq:visible").count() == 4  # one per task and arm with one
    assert page.inner_text("#filter-count").endswith("of 3 cells shown whole")
    page.click("#filter-reset")
    open_by_square(page, page.locator("a.sq[href]").first.get_attribute("href") or "")
    assert_loads_cleanly(browser, report)
