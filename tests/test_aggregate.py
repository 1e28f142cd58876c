"""Aggregation, health, savings and rendering: pure functions on plain rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.aggregate import Health, health, median_of, savings, summarize
from pytest_wfbench.outcomes import counted
from pytest_wfbench.redact import Redactor
from pytest_wfbench.report import render_markdown, render_terminal, unusable_lines
from pytest_wfbench.store import ResultsStore, read_rows


def row(task: str, arm: str, run: int = 1, *, kind: str | None = None, resolved: bool = False,
        status: str = "ran", **figures: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cell_id": f"{task}-{arm}-r{run}", "task": task, "class": "bug", "arm": arm,
        "run": run, "status": status, "resolved": resolved, "error_kind": kind,
        "error_detail": f"{kind} detail" if kind else None,
        "counted": status == "ran" and counted(kind), "reused": False,
        "input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "output_tokens": 0, "estimated_tokens": None, "cost_usd": None, "duration_s": 1.0,
        "num_turns": None, "diff_files": 1, "diff_insertions": 2, "diff_deletions": 0,
        "skip_reason": "expensive" if status == "skipped" else None,
    }
    base.update(figures)
    return base


def test_medians_count_only_admissible_rows() -> None:
    rows = [row("t", "a", 1, resolved=True, input_tokens=100, cost_usd=1.0),
            row("t", "a", 2, kind="verify-failed", input_tokens=300, cost_usd=3.0),
            row("t", "a", 3, kind="session-error", input_tokens=9999, cost_usd=99.0)]
    summary = summarize(rows)
    (cell,) = summary.cells
    assert (cell.resolved, cell.valid, len(cell.excluded)) == (1, 2, 1)
    assert cell.medians["tokens"] == 200 and cell.medians["cost_usd"] == 2.0
    assert cell.error_counts == {"verify-failed": 1, "session-error": 1}


def test_cost_median_is_null_when_any_counted_cost_is_unknown() -> None:
    rows = [row("t", "a", 1, cost_usd=1.0), row("t", "a", 2, cost_usd=None)]
    assert median_of(rows, "cost_usd") is None
    assert median_of(rows, "duration_s") == 1.0


def test_tokens_sum_all_kinds() -> None:
    r = row("t", "a", input_tokens=1, cache_creation_input_tokens=2,
            cache_read_input_tokens=3, output_tokens=4)
    assert median_of([r], "tokens") == 10


@pytest.mark.parametrize(("kinds", "expected"), [
    ([], Health.UNKNOWN),
    ([None, "oracle-failed"], Health.OBSERVED_OK),
    ([None, "infra-error"], Health.DEGRADED),
    (["skill-not-invoked"], Health.DEGRADED),  # evidence failure, still counted
    (["infra-error", "session-error"], Health.UNUSABLE),
    (["oracle-unavailable"], Health.UNUSABLE),
])
def test_health(kinds: list[str | None], expected: Health) -> None:
    assert health([row("t", "a", i, kind=k) for i, k in enumerate(kinds)]) is expected


def test_reused_and_skipped_rows_are_not_fresh_attempts() -> None:
    assert health([row("t", "a", status="skipped")]) is Health.UNKNOWN
    assert health([row("t", "a", kind="infra-error", reused=True)]) is Health.UNKNOWN


def test_savings_against_baseline() -> None:
    assert savings(200.0, 150.0) == 25.0
    assert savings(100.0, 150.0) == -50.0
    assert savings(0.0, 1.0) is None and savings(None, 1.0) is None
    rows = [row("t", "baseline", input_tokens=200, duration_s=10.0),
            row("t", "workflow", input_tokens=150, duration_s=20.0)]
    summary = summarize(rows)
    assert summary.baseline_arm == "baseline"
    assert summary.savings["workflow"]["tokens"] == 25.0
    assert summary.savings["workflow"]["duration_s"] == -100.0
    assert summarize(rows, baseline_arm="workflow").savings["baseline"]["tokens"] == pytest.approx(
        -33.333, rel=1e-3)


def test_no_baseline_no_savings() -> None:
    summary = summarize([row("t", "gold"), row("t", "noop")])
    assert summary.baseline_arm is None and summary.savings == {}


def test_report_lists_excluded_skipped_unusable_and_provenance() -> None:
    rows = [row("t", "gold", resolved=True), row("t", "broken", kind="infra-error"),
            row("u", "gold", status="skipped")]
    summary = summarize(rows)
    text = render_markdown(summary, {"sweep_id": "s1", "suite": "demo", "model": None,
                                     "sandbox_backend": "bubblewrap"})
    assert "| t | bug | gold | 1/1 |" in text
    assert "| t-broken-r1 | infra-error | infra-error detail |" in text
    assert "| u-gold-r1 | expensive |" in text
    assert "UNUSABLE arms: broken" in text
    assert "## Provenance" in text and "- model: n/a" in text
    assert "No baseline arm" in text
    assert unusable_lines(summary) == [
        "wfbench: arm 'broken' is UNUSABLE: failures and not one admissible row"]
    terminal = render_terminal(summary)
    assert terminal[0].split()[:3] == ["arm", "health", "resolved/valid"]
    assert any(line.startswith("broken") and "UNUSABLE" in line for line in terminal)


def test_redactor_replaces_secrets_in_text_and_data() -> None:
    redactor = Redactor.from_environment(["MY_TOKEN"], {"ANTHROPIC_API_KEY": "sk-ant-12345678",
                                                        "MY_TOKEN": "tok-abcdefgh",
                                                        "OTHER": "not-a-secret"})
    assert redactor.text("key sk-ant-12345678!") == "key [REDACTED]!"
    assert redactor.data({"a": ["tok-abcdefgh", 1, None], "sk-ant-12345678": "x"}) == {
        "a": ["[REDACTED]", 1, None], "[REDACTED]": "x"}
    assert redactor.text("not-a-secret") == "not-a-secret"
    assert Redactor(["short"]).text("short") == "short"


def test_a_torn_last_line_does_not_swallow_the_next_row(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path, Redactor([]))
    store.prepare()
    store.append({"cell_id": "a", "sweep_id": "s"})
    with store.results.open("a") as handle:
        handle.write('{"cell_id": "b", "sweep_')  # a writer killed mid-line
    store.append({"cell_id": "c", "sweep_id": "s"})
    assert [row["cell_id"] for row in read_rows(store.results, "s")] == ["a", "c"]
