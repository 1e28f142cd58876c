"""Rendering report.md and the terminal summary: pure, deterministic to the byte."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from typing import Any

from pytest_wfbench.aggregate import summarize
from pytest_wfbench.decisions import Digests, PromotionContext, PromotionPolicy, decide
from pytest_wfbench.outdir import provenance
from pytest_wfbench.render.terminal import harness_error_lines, suspicious_lines
from pytest_wfbench.report import (
    overhead_section,
    promotion_lines,
    render_markdown,
    render_terminal,
    trust_sections,
    unusable_lines,
)
from pytest_wfbench.stats import wilson_interval
from tests.rows import row, runs

PROVENANCE = {"sweep_id": "s1", "suite": "demo", "model": None, "sandbox_backend": "bubblewrap"}


def sweep() -> list[dict[str, Any]]:
    """Two tasks, a baseline, a cheaper arm that fails one task and a costlier one."""
    rows = []
    for task in ("a", "b"):
        rows += runs(task, "baseline", "RRF", output_tokens=1000, cost_usd=1.0,
                     session_duration_s=60.0, duration_s=70.0, harness_overhead_s=10.0)
        rows += runs(task, "workflow", "RRR" if task == "a" else "FFF", output_tokens=400,
                     cost_usd=0.5, session_duration_s=30.0, duration_s=41.0,
                     harness_overhead_s=11.0)
    return rows


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end == -1 else text[start:end]


def test_report_lists_excluded_skipped_unusable_and_provenance() -> None:
    rows = [row("t", "gold", resolved=True), row("t", "broken", kind="infra-error"),
            row("u", "gold", status="skipped")]
    summary = summarize(rows)
    text = render_markdown(summary, PROVENANCE)
    assert "| t | bug | gold | 1/1 | 21%-100% |" in text
    assert "| t-broken-r1 | infra-error | infra-error detail |" in text
    assert "| u-gold-r1 | expensive |" in text
    assert "UNUSABLE arms: broken" in text
    assert "## Provenance" in text and "- model: n/a" in text
    assert "No baseline arm" in text
    assert unusable_lines(summary) == [
        "wfbench: arm 'broken' is UNUSABLE: every fresh attempt failed "
        "(1 of 1 fresh attempts failed: infra-error x1)"]


def test_arms_table_has_the_wilson_interval_health_and_per_field_figures() -> None:
    text = render_markdown(summarize(sweep()), PROVENANCE)
    arms = section(text, "Arms")
    interval = wilson_interval(4, 6)
    assert f"{interval.low:.0%}-{interval.high:.0%}" == "30%-90%"
    # arm, health, resolved/valid, CI, tasks, excluded, skipped, tokens, input,
    # cache creation, cache read, output, est. tokens, cost, session s, cell s, overhead s
    assert ("| baseline | OBSERVED_OK | 4/6 | 30%-90% | 2 | 0 | 0 | 1,000 | 0 | 0 | 0 | 1,000 "
            "| n/a | $1.0000 | 60 | 70 | 10 |") in arms
    health = section(text, "Health")
    assert "| workflow | OBSERVED_OK | 6 | 6 | 0 | 0 | - |" in health


def test_savings_are_flagged_where_the_arm_did_not_resolve() -> None:
    text = render_markdown(summarize(sweep()), PROVENANCE)
    savings = section(text, "Savings against `baseline`")
    assert "| a | workflow | 3/3 vs 2/3 | +60.0% |" in savings
    assert "| b | workflow | 0/3 vs 2/3 | +60.0% |" in savings
    per_task = savings[savings.index("### Savings per task"):]
    assert [line.endswith("| UNRESOLVED |") for line in per_task.splitlines()
            if line.startswith("| a |") or line.startswith("| b |")] == [False, True]
    overall = next(line for line in savings.splitlines() if line.startswith("| workflow | 2 |"))
    # Both tasks save the same: the bootstrap interval is the point itself.
    assert "+60.0% [+60.0%, +60.0%]" in overall
    assert overall.endswith("| UNRESOLVED, 1 of 2 tasks flagged |")
    assert "seed 20261130, 2000 resamples" in savings


def test_paired_comparison_and_the_too_small_line() -> None:
    text = render_markdown(summarize(sweep()), PROVENANCE)
    paired = section(text, "Resolve rates against `baseline`")
    # a: runs 1-2 both resolved, run 3 arm only; b: runs 1-2 baseline only, run 3 neither.
    assert "| workflow | 6 | 2 | 2 | 1 | 2 | 1 | -16.7 pts |" in paired
    assert "| 1.000 |" in paired  # exact McNemar p for 1 against 2
    assert "- Too small to tell `workflow` from `baseline`" in paired
    assert "a 10-point difference from a 67% resolve rate" in paired
    assert "runs per task on 2 tasks, or" in paired and "tasks at 3 runs each." in paired


def test_pass_k_table() -> None:
    text = render_markdown(summarize(sweep()), PROVENANCE)
    passes = section(text, "pass@k and pass^k")
    assert "| baseline | 1 | 2 | 0.667 | 0.667 |" in passes
    assert "| baseline | 3 | 2 | 1.000 | 0.000 |" in passes
    assert "| workflow | 3 | 2 | 0.500 | 0.500 |" in passes


def test_the_report_is_the_same_bytes_for_the_same_rows_in_any_order() -> None:
    rows = sweep()
    shuffled = list(rows)
    random.Random(3).shuffle(shuffled)
    first = render_markdown(summarize(rows), PROVENANCE, trust_sections(rows))
    assert first == render_markdown(summarize(shuffled), PROVENANCE, trust_sections(shuffled))
    assert first == render_markdown(summarize(rows), PROVENANCE, trust_sections(rows))


def test_every_section_keeps_its_place() -> None:
    rows = [*sweep(), row("c", "baseline", kind="session-error"),
            row("d", "baseline", status="skipped"),
            row("a", "workflow", 4, resolved=True, suspicious=["pytest internals"])]
    text = render_markdown(summarize(rows), PROVENANCE,
                           [*trust_sections(rows), *overhead_section(rows)])
    titles = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert titles == ["Arms", "Health", "Resolve rates against `baseline`",
                      "Savings against `baseline`", "pass@k and pass^k", "Tasks and arms",
                      "Excluded runs", "Skipped cells", "Suspicious wins", "Harness overhead",
                      "Caveats", "Provenance"]
    assert "| c-baseline-r1 | session-error | session-error detail |" in text
    assert "| a-workflow-r4 | resolved | pytest internals |" in text


def test_the_promotion_section_renders_the_evidence() -> None:
    rows = [*(r for t in "ab" for r in runs(t, "workflow", "RRR", cost_usd=1.0)),
            *(r for t in "ab" for r in runs(t, "candidate_workflow", "RRR", cost_usd=0.5))]
    digests = Digests(overlay="o1", incumbent_skills="s1", task_prompts="p1", oracles="q1",
                      model="m", effort=None, harness_version="0.1.0")
    context = PromotionContext(sweep_state="complete", digests=digests,
                               now=datetime(2026, 12, 1, tzinfo=UTC))
    evidence = decide(rows, "candidate_workflow", "workflow", PromotionPolicy(), context)
    summary = summarize(rows)
    text = render_markdown(summary, PROVENANCE, promotions=[evidence])
    promotion = section(text, "Promotion")
    assert "### `candidate_workflow` against `workflow`: **promote**" in promotion
    assert "| min_runs | yes | yes |" in promotion and "| significance | no | yes |" in promotion
    assert "| a | 3/3 | $0.5000 | 3/3 | $1.0000 | +50.0% |" in promotion
    assert "| overall | 6/6 | $1.0000 (sum) | 6/6 | $2.0000 (sum) | +50.0% |" in promotion
    assert "expires 2026-12-08T00:00:00Z" in promotion and "overlay o1" in promotion
    # From promotion.json as written and read back: the same bytes.
    reread = json.loads(json.dumps(evidence))
    assert render_markdown(summary, PROVENANCE, promotions=[reread]) == text
    assert text.index("## Promotion") < text.index("## Caveats")
    assert promotion_lines([reread]) == [
        "wfbench promotion: candidate_workflow over workflow: promote (cost_usd +50.0%; every "
        "required condition held: cost_usd improved by 50.0% over 2 tasks)"]


def test_terminal_summary_is_compact() -> None:
    terminal = render_terminal(summarize(sweep()))
    assert terminal[0].split() == ["arm", "health", "resolved/valid", "95%", "CI", "excl",
                                   "skip", "tokens", "cost", "session", "s"]
    assert terminal[1].split() == ["baseline", "OBSERVED_OK", "4/6", "30%-90%", "0", "0",
                                   "1,000", "$1.0000", "60"]
    assert len(terminal) == 3


def test_provenance_facts_from_the_rows() -> None:
    rows = [{**row("t", "gold", resolved=True), "model": "m2", "effort": "high"},
            {**row("t", "noop", kind="session-error"), "counted": False, "model": "m1"},
            row("u", "gold", status="skipped"), row("t", "late", status="skipped"),
            {**row("v", "gold", status="skipped"), "model": ""}]
    facts = provenance(rows, {"settings": {"runs": 3}})
    assert facts["selected tasks"] == ["t"]
    assert facts["skipped tasks"] == ["u", "v"]
    assert facts["model"] == ["m1", "m2"] and facts["effort"] == ["high"]
    assert facts["arms"] == ["gold", "late", "noop"]
    assert facts["partial-evidence notes"] == ["t-noop-r1: session-error"]
    assert facts["runs per cell"] == 3
    assert provenance([row("t", "gold", status="skipped")], {})["model"] is None


def test_a_table_line_is_its_cells_each_kept_one_cell() -> None:
    """A line is written at once when no cell has a bar or a line break, else
    cell by cell: either way each cell is cell() of its text."""
    from pytest_wfbench.render.format import cell, table

    rng = random.Random(8)
    alphabet = ["a", "|", "\\|", "\n", "\r", " ", "x", "1", "-"]
    for _ in range(500):
        width = rng.randrange(1, 5)
        rows = [["".join(rng.choice(alphabet) for _ in range(rng.randrange(4)))
                 for _ in range(width)] for _ in range(rng.randrange(4))]
        lines = table([f"h{k}" for k in range(width)], rows)
        assert lines[2:] == ["| " + " | ".join(cell(text) for text in row) + " |"
                             for row in rows]
        assert all(line.count("\n") == line.count("\r") == 0 for line in lines)


def test_the_spend_lines_are_the_exact_sums_of_the_fresh_cells() -> None:
    """Per arm, every fresh cell's tokens (a null as 0) and measured costs, each
    summed exactly (math.fsum); reused and skipped cells spent nothing here."""
    import math

    from pytest_wfbench.aggregate.spend import spend_lines
    from pytest_wfbench.table import Table

    rng = random.Random(11)
    rows = []
    for run in range(1, 41):
        for arm in ("workflow", "baseline"):
            rows.append(row("t", arm, run, status="skipped" if run % 9 == 0 else "ran",
                            reused=run % 7 == 0,
                            input_tokens=None if run % 5 == 0 else rng.randrange(10**6),
                            output_tokens=rng.randrange(10**4),
                            cost_usd=None if arm == "baseline" and run % 3 else rng.random()))
    fresh = [r for r in rows if r["status"] == "ran" and not r["reused"]]
    parts, tokens_all, cost_all = [], 0.0, 0.0
    for arm in ("baseline", "workflow"):
        mine = [r for r in fresh if r["arm"] == arm]
        tokens = math.fsum(math.fsum(r[k] for r in mine if r[k] is not None) for k in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "output_tokens"))
        cost = math.fsum(r["cost_usd"] for r in mine if r["cost_usd"] is not None)
        parts.append(f"{arm} {tokens:,.0f} tokens ${cost:,.4f}")
        tokens_all, cost_all = tokens_all + tokens, cost_all + cost
    assert spend_lines(Table.of(rows)) == [
        f"wfbench spend: {'; '.join(parts)}; sweep {tokens_all:,.0f} tokens ${cost_all:,.4f}"]


def test_a_row_whose_listed_fields_are_no_text_is_still_reported() -> None:
    """An excluded run without an error kind, a suspicious win whose cell id is
    a number: their lines are written (as text, null as empty), not a crash."""
    from pytest_wfbench.render.format import table

    odd_cells: list[Any] = ["x", None, 3]
    assert table(["a", "b", "c"], [odd_cells]) == ["| a | b | c |", "|---|---|---|",
                                                    "| x |  | 3 |"]
    odd = row("t", "a", 2, counted=False)  # ran, not counted, no error kind
    text = render_markdown(summarize([row("t", "a", 1, resolved=True), odd]),
                           provenance([odd], {}))
    assert "| t-a-r2 |  | " in text
    # Rows without a cell id (a hand-edited file, before any compaction), their
    # error detail no text: the report and the terminal's lines say what they can.
    nameless = [{k: v for k, v in r.items() if k != "cell_id"} for r in (
        row("t", "a", 3, kind="session-error", error_detail={"exit": 1}),
        row("t", "a", 4, kind="harness-error", error_detail=["x"]),
        row("t", "a", 5, resolved=True, suspicious=["writes conftest.py"]))]
    rows = [row("t", "a", 1, resolved=True), *nameless]
    text = render_markdown(summarize(rows), provenance(rows, {}), trust_sections(rows))
    assert "|  | session-error | {'exit': 1} |" in text
    assert "|  | harness-error | ['x'] |" in text and "|  | resolved | writes conftest.py |" in text
    assert harness_error_lines(rows) and suspicious_lines(rows) == [
        line for line in suspicious_lines(rows) if "None" in line]
