"""report.md from a summary (SPEC §7). Pure and deterministic: the same summary,
provenance and sections always give the same bytes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_wfbench.aggregate import USAGE_FIELDS, PairedComparison, Summary, TaskArm
from pytest_wfbench.render.format import (
    first_line,
    fmt,
    fmt_cost,
    fmt_p,
    fmt_pct,
    fmt_pct_interval,
    fmt_points,
    fmt_points_interval,
    fmt_rate_interval,
    fmt_share,
    table,
)
from pytest_wfbench.render.promotion import promotion_sections

USAGE_HEADERS = ("input", "cache creation", "cache read", "output")
SAVINGS_HEADERS = (("tokens", "tokens"), *zip(USAGE_FIELDS, USAGE_HEADERS, strict=True),
                   ("estimated_tokens", "est. tokens"), ("cost_usd", "cost"),
                   ("session_duration_s", "session s"), ("num_turns", "turns"))
CAVEATS = (
    "Medians and resolve rates count only admissible rows (SPEC §5); excluded runs are "
    "listed below and never scored as failures of the agent. A session that reached its "
    "timeout is the arm's failure: counted, unresolved.",
    "Scripted arms (gold, noop, script) spend no model tokens: their token columns are 0 and "
    "their cost is n/a (not measured, never zero). Script arms carry an estimate of the "
    "tokens an agent would have read (characters / 4) in 'est. tokens'.",
    "'tokens' is each run's total of input, cache creation, cache read and output tokens "
    "over all models; its median is taken over those totals, not summed from the per-field "
    "medians.",
    "'session s' is the arm's own time; 'cell s' the cell's wall time and 'overhead s' the "
    "harness's share (template, clone, judges, evidence).",
    "An arm's figures are the mean of its per-task medians over the tasks where it has "
    "counted rows: arms that ran different tasks are compared by the savings and paired "
    "tables, which use common tasks only.",
    "An arm's resolve interval pools its runs across tasks as if independent; runs of one "
    "task share its difficulty, so the interval is narrower than it should be. The paired "
    "comparison treats (task, run) pairs the same way; savings intervals resample tasks.",
    "With few runs per cell a median is a single observation; compare arms on several runs.",
)


def render_markdown(summary: Summary, provenance: dict[str, Any],
                    extra_sections: Sequence[str] = (),
                    promotions: Sequence[Mapping[str, Any]] = ()) -> str:
    """The whole report. ``promotions`` are promotion.json evidence dicts, one per
    candidate arm; ``extra_sections`` are lines rendered elsewhere (trust,
    overhead, tool-cost lanes)."""
    suite = provenance.get("suite", "sweep")
    lines = [f"# wfbench report: {suite}", "",
             f"Sweep `{provenance.get('sweep_id')}`.", ""]
    state = provenance.get("state")
    if state and not str(state).startswith("complete"):
        lines += [f"**{state}**", ""]
    if summary.rows:
        lines += agent_sections(summary)
    if promotions:
        lines += ["", *promotion_sections(promotions)]
    if extra_sections:
        lines += ["", *extra_sections]
    lines += ["", "## Caveats", ""] + [f"- {c}" for c in _caveats(summary, provenance)]
    lines += ["", "## Provenance", ""] + [f"- {k}: {_prov(v)}" for k, v in provenance.items()]
    return "\n".join(lines) + "\n"


def _rate(resolved: int, valid: int) -> str:
    return f"{resolved}/{valid}"


def _churn(medians: Mapping[str, float | None]) -> str:
    if medians.get("diff_files") is None:
        return "n/a"
    return (f"{fmt(medians['diff_files'])} (+{fmt(medians['diff_insertions'])} "
            f"-{fmt(medians['diff_deletions'])})")


def _errors(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{kind} x{n}" for kind, n in sorted(counts.items())) or "-"


def agent_sections(summary: Summary) -> list[str]:
    lines = [f"{summary.rows} task rows.", ""]
    lines += _arms(summary)
    lines += ["", *_health(summary)]
    if summary.baseline_arm and summary.comparisons:
        lines += ["", *_comparisons(summary)]
    if summary.baseline_arm and summary.savings:
        lines += ["", *_savings(summary)]
    lines += ["", *_pass_k(summary)]
    lines += ["", *_tasks(summary)]
    excluded = [row for g in summary.cells for row in g.excluded]
    lines += ["", "## Excluded runs", ""]
    if excluded:
        lines += table(["cell", "error kind", "detail"],
                       [[r.get("cell_id"), r.get("error_kind"), first_line(r.get("error_detail"))]
                        for r in excluded])
    else:
        lines.append("None.")
    lines += ["", "## Skipped cells", ""]
    if summary.skipped:
        lines += table(["cell", "reason"],
                       [[r.get("cell_id"), r.get("skip_reason") or ""] for r in summary.skipped])
    else:
        lines.append("None.")
    return lines


def _arms(summary: Summary) -> list[str]:
    confidence = f"{summary.settings.confidence:.0%}"
    lines = ["## Arms", "",
             f"resolved/valid over counted runs, with a Wilson {confidence} interval. Every "
             "other figure is per task first: the mean, over the tasks where the arm has "
             "counted rows, of the arm's per-task medians (cost: n/a when any of those "
             "tasks' cost is unknown).", ""]
    lines += table(
        ["arm", "health", "resolved/valid", f"{confidence} CI", "tasks", "excluded", "skipped",
         "tokens", *USAGE_HEADERS, "est. tokens", "cost", "session s", "cell s", "overhead s",
         "turns", "churn: files (+ins -del)"],
        [[a.arm, a.health.status.value, _rate(a.resolved, a.valid),
          fmt_rate_interval(a.resolve_interval), str(a.tasks), str(len(a.excluded)),
          str(a.skipped), fmt(a.medians["tokens"]),
          *(fmt(a.medians[name]) for name in USAGE_FIELDS), fmt(a.medians["estimated_tokens"]),
          fmt_cost(a.medians["cost_usd"]), fmt(a.medians["session_duration_s"], 2),
          fmt(a.medians["duration_s"], 2), fmt(a.medians["harness_overhead_s"], 2),
          fmt(a.medians["num_turns"]), _churn(a.medians)]
         for a in summary.arms],
    )
    unusable = summary.unusable
    if unusable:
        lines += ["", f"**UNUSABLE arms: {', '.join(unusable)}** — every fresh attempt "
                  "failed (evidence failures included); the sweep exits non-zero."]
    return lines


def _health(summary: Summary) -> list[str]:
    return ["## Health", "",
            "Over fresh attempts (rows that ran in this sweep): UNUSABLE when every one "
            "failed, DEGRADED when some did, OBSERVED_OK when none did, UNKNOWN without "
            "any. Failures are execution failures (the harness, the service or the agent "
            "process did not complete) and evidence failures (counted or not).", "",
            *table(["arm", "health", "fresh attempts", "admissible", "execution failures",
                    "evidence failures", "reasons"],
                   [[a.arm, a.health.status.value, str(a.health.fresh),
                     str(a.health.admissible), str(a.health.execution_failures),
                     str(a.health.evidence_failures), _errors(a.health.reasons)]
                    for a in summary.arms])]


def _comparisons(summary: Summary) -> list[str]:
    baseline = summary.baseline_arm
    confidence = f"{summary.settings.confidence:.0%}"
    lines = [f"## Resolve rates against `{baseline}`", "",
             f"Run r of each arm paired with run r of `{baseline}` on the same task, where "
             "both rows count. Difference: the arm's resolve rate minus the baseline's, in "
             f"percentage points, with Newcombe's hybrid score {confidence} interval "
             "(method 10); p: the exact McNemar test on the discordant pairs, two-sided.", ""]
    lines += table(
        ["arm", "pairs", "tasks", "both resolved", "arm only", "baseline only", "neither",
         "difference", f"{confidence} CI", "exact p"],
        [[c.arm, str(c.table.pairs), str(c.tasks), str(c.table.both), str(c.table.first_only),
          str(c.table.second_only), str(c.table.neither), fmt_points(c.difference),
          fmt_points_interval(c.interval), fmt_p(c.p_value)]
         for c in summary.comparisons.values()])
    small = [c for c in summary.comparisons.values() if c.too_small]
    if small:
        lines += ["", *(f"- {_too_small(c, summary)}" for c in small)]
    return lines


def _too_small(c: PairedComparison, summary: Summary) -> str:
    settings = summary.settings
    if c.table.pairs:
        head = (f"Too small to tell `{c.arm}` from `{c.baseline_arm}`: the interval of the "
                f"difference includes zero ({c.table.pairs} pairs on {c.tasks} tasks).")
    else:
        head = (f"Nothing to compare `{c.arm}` with `{c.baseline_arm}` on: no (task, run) "
                "pair where both rows count.")
    needed = c.needed
    if needed is None:
        return head
    tasks, runs = max(1, c.tasks), max(1, c.runs)
    return (f"{head} Detecting a {settings.detectable_difference * 100:g}-point difference "
            f"from a {needed.baseline_rate:.0%} resolve rate (two-sided alpha "
            f"{needed.alpha:.2g}, power {needed.power:.0%}, normal approximation) takes about "
            f"{needed.observations:,} runs per arm: {needed.runs_per_task(tasks):,} runs per "
            f"task on {tasks} tasks, or {needed.tasks_at(runs):,} tasks at {runs} runs each.")


def _savings(summary: Summary) -> list[str]:
    baseline = summary.baseline_arm
    settings = summary.settings
    lines = [f"## Savings against `{baseline}`", "",
             "(baseline - arm) / baseline, in %; positive saves. Overall: over the tasks "
             "both arms have counted rows for, the sums of their per-task medians, with a "
             f"{settings.confidence:.0%} percentile bootstrap interval that resamples tasks "
             f"(seed {settings.seed}, {settings.resamples} resamples; none with fewer than "
             "two tasks). UNRESOLVED: the arm resolved the task less often than the "
             "baseline, or never; saving by failing is not a saving.", ""]
    names = [name for name, _ in SAVINGS_HEADERS]
    headers = [header for _, header in SAVINGS_HEADERS]
    rows = []
    for arm, saving in summary.savings.items():
        flags = []
        if saving.unresolved:
            flags.append("UNRESOLVED")
        if saving.flagged_tasks:
            flags.append(f"{len(saving.flagged_tasks)} of {len(saving.tasks)} tasks flagged")
        rows.append([arm, str(len(saving.tasks)),
                     *(f"{fmt_pct(saving.savings[n])} {fmt_pct_interval(saving.intervals[n])}"
                       if saving.savings[n] is not None else "n/a" for n in names),
                     ", ".join(flags) or "-"])
    lines += table(["arm", "tasks", *headers, "flag"], rows)
    lines += ["", "### Savings per task", ""]
    lines += table(
        ["task", "arm", "resolved: arm vs baseline", *headers, "flag"],
        [[s.task, s.arm, f"{_rate(s.arm_resolved, s.arm_valid)} vs "
          f"{_rate(s.baseline_resolved, s.baseline_valid)}",
          *(fmt_pct(s.savings[n]) for n in names), "UNRESOLVED" if s.unresolved else "-"]
         for s in summary.task_savings])
    return lines


def _pass_k(summary: Summary) -> list[str]:
    lines = ["## pass@k and pass^k", "",
             "Per task, unbiased estimates from its n counted runs of which c resolved: "
             "pass@k = 1 - C(n-c, k)/C(n, k) (at least one of k runs resolves; Chen et al. "
             "2021), pass^k = C(c, k)/C(n, k) (all k resolve; tau-bench), averaged over the "
             "arm's tasks with at least k counted runs.", ""]
    rows = [[a.arm, str(p.k), str(p.tasks), fmt_share(p.pass_at_k), fmt_share(p.pass_hat_k)]
            for a in summary.arms for p in a.pass_k]
    if rows:
        lines += table(["arm", "k", "tasks", "pass@k", "pass^k"], rows)
    else:
        lines.append("No counted runs.")
    return lines


def _tasks(summary: Summary) -> list[str]:
    confidence = f"{summary.settings.confidence:.0%}"
    return ["## Tasks and arms", "",
            "Medians over each (task, arm)'s counted runs.", "",
            *table(["task", "class", "arm", "resolved/valid", f"{confidence} CI", "excluded",
                    "tokens", *USAGE_HEADERS, "est. tokens", "cost", "session s", "cell s",
                    "overhead s", "turns", "churn: files (+ins -del)", "errors"],
                   [_task_row(g, summary.settings.confidence) for g in summary.cells])]


def _task_row(g: TaskArm, confidence: float) -> list[str]:
    m = g.medians
    return [g.task, g.task_class or "", g.arm, _rate(g.resolved, g.valid),
            fmt_rate_interval(g.resolve_interval(confidence)), str(len(g.excluded)),
            fmt(m["tokens"]), *(fmt(m[name]) for name in USAGE_FIELDS),
            fmt(m["estimated_tokens"]), fmt_cost(m["cost_usd"]),
            fmt(m["session_duration_s"], 2), fmt(m["duration_s"], 2),
            fmt(m["harness_overhead_s"], 2), fmt(m["num_turns"]), _churn(m),
            _errors(g.error_counts)]


def _caveats(summary: Summary, provenance: dict[str, Any]) -> list[str]:
    caveats = list(CAVEATS)
    if provenance.get("sandbox_backend") != "bubblewrap":
        caveats.insert(0, "**Cells ran WITHOUT a sandbox (--wfbench-unsafe-no-sandbox)**: "
                       "nothing kept the arms from the hidden oracle or the host.")
    if summary.rows and not summary.baseline_arm:
        caveats.append("No baseline arm in this sweep: no savings or paired comparison are "
                       "reported.")
    return caveats


def _prov(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "none"
    return "n/a" if value is None else str(value)
