"""Rendering a summary: ``report.md`` and the terminal table (SPEC §7). Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from pytest_wfbench.aggregate import Group, Health, Summary

CAVEATS = (
    "Medians and resolve rates count only admissible rows (SPEC §5); excluded runs are "
    "listed below and never scored as failures of the agent.",
    "Scripted arms (gold, noop, script) spend no model tokens: their token columns are 0 and "
    "their cost is n/a (not measured, never zero). Script arms carry an estimate of the "
    "tokens an agent would have read (characters / 4) in 'est. tokens'.",
    "Token columns sum input, cache creation, cache read and output tokens over all models.",
    "With few runs per cell a median is a single observation; compare arms on several runs.",
)


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value.is_integer():
            return f"{int(value):,}"
        return f"{value:,.{digits}f}"
    return str(value)


def fmt_cost(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _cell(text: str) -> str:
    """A table cell that stays one cell: no pipe or line break of the text ends it."""
    return text.replace("|", "\\|").replace("\r", "\\r").replace("\n", "\\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return lines


def _rate(g: Group) -> str:
    return f"{g.resolved}/{g.valid}"


def _churn(g: Group) -> str:
    m = g.medians
    if m.get("diff_files") is None:
        return "n/a"
    return f"{fmt(m['diff_files'])} (+{fmt(m['diff_insertions'])} -{fmt(m['diff_deletions'])})"


def _errors(g: Group) -> str:
    return ", ".join(f"{kind} x{n}" for kind, n in sorted(g.error_counts.items())) or "-"


def render_markdown(summary: Summary, provenance: dict[str, Any],
                    extra_sections: Sequence[str] = ()) -> str:
    suite = provenance.get("suite", "sweep")
    lines = [f"# wfbench report: {suite}", "",
             f"Sweep `{provenance.get('sweep_id')}`.", ""]
    if summary.rows:
        lines += _agent_sections(summary)
    if extra_sections:
        lines += ["", *extra_sections]
    lines += ["", "## Caveats", ""] + [f"- {c}" for c in _caveats(summary, provenance)]
    lines += ["", "## Provenance", ""] + [f"- {k}: {_prov(v)}" for k, v in provenance.items()]
    return "\n".join(lines) + "\n"


def _agent_sections(summary: Summary) -> list[str]:
    lines = [f"{summary.rows} task rows.", "", "## Arms", ""]
    lines += table(
        ["arm", "health", "resolved/valid", "excluded", "skipped", "median tokens",
         "median est. tokens", "median cost", "median duration s"],
        [[g.arm, summary.health[g.arm].value, _rate(g), str(len(g.excluded)), str(g.skipped),
          fmt(g.medians["tokens"]), fmt(g.medians["estimated_tokens"]),
          fmt_cost(g.medians["cost_usd"]), fmt(g.medians["duration_s"], 2)]
         for g in summary.arms],
    )
    unusable = summary.unusable
    if unusable:
        lines += ["", f"**UNUSABLE arms: {', '.join(unusable)}** — failures and not one "
                  "admissible row; the sweep exits non-zero."]
    if summary.baseline_arm and summary.savings:
        lines += ["", f"## Savings against `{summary.baseline_arm}`", "",
                  "(baseline - arm) / baseline over the arms' medians; positive saves.", ""]
        metrics = list(next(iter(summary.savings.values())))
        lines += table(["arm", *metrics],
                       [[arm, *(fmt_pct(values[m]) for m in metrics)]
                        for arm, values in summary.savings.items()])
    lines += ["", "## Tasks and arms", ""]
    lines += table(
        ["task", "class", "arm", "resolved/valid", "excluded", "median tokens", "median cost",
         "median duration s", "median turns", "median churn: files (+ins -del)", "errors"],
        [[g.task or "", g.task_class or "", g.arm, _rate(g), str(len(g.excluded)),
          fmt(g.medians["tokens"]), fmt_cost(g.medians["cost_usd"]),
          fmt(g.medians["duration_s"], 2), fmt(g.medians["num_turns"]), _churn(g), _errors(g)]
         for g in summary.cells],
    )
    excluded = [row for g in summary.cells for row in g.excluded]
    lines += ["", "## Excluded runs", ""]
    if excluded:
        lines += table(["cell", "error kind", "detail"],
                       [[r["cell_id"], r["error_kind"], _first_line(r.get("error_detail"))]
                        for r in excluded])
    else:
        lines.append("None.")
    lines += ["", "## Skipped cells", ""]
    if summary.skipped:
        lines += table(["cell", "reason"],
                       [[r["cell_id"], r.get("skip_reason") or ""] for r in summary.skipped])
    else:
        lines.append("None.")
    return lines


def _caveats(summary: Summary, provenance: dict[str, Any]) -> list[str]:
    caveats = list(CAVEATS)
    if provenance.get("sandbox_backend") != "bubblewrap":
        caveats.insert(0, "**Cells ran WITHOUT a sandbox (--wfbench-unsafe-no-sandbox)**: "
                       "nothing kept the arms from the hidden oracle or the host.")
    if summary.rows and not summary.baseline_arm:
        caveats.append("No baseline arm in this sweep: no savings are reported.")
    return caveats


def _prov(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "none"
    return "n/a" if value is None else str(value)


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def render_terminal(summary: Summary) -> list[str]:
    """A compact per-arm table for the terminal summary."""
    headers = ["arm", "health", "resolved/valid", "excl", "skip", "tokens", "cost", "dur s"]
    rows = [[g.arm, summary.health[g.arm].value, _rate(g), str(len(g.excluded)), str(g.skipped),
             fmt(g.medians["tokens"]), fmt_cost(g.medians["cost_usd"]),
             fmt(g.medians["duration_s"], 2)] for g in summary.arms]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def unusable_lines(summary: Summary) -> list[str]:
    return [f"wfbench: arm {arm!r} is UNUSABLE: failures and not one admissible row"
            for arm in summary.unusable if summary.health[arm] is Health.UNUSABLE]


def trust_sections(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the report says about how far each win can be trusted: suspicious
    wins, oracles judged by exit code alone, harness errors (SPEC §5)."""
    ran = [r for r in rows if r.get("status") == "ran" and r.get("lane", "agent") == "agent"]
    suspicious = [r for r in ran if r.get("suspicious")
                  and (r.get("resolved") or r.get("error_kind") == "suspicious")]
    lines = ["## Suspicious wins", "",
             "Resolved cells whose final patch reaches into the judges (pytest internals, "
             "process exit, entry-point metadata, start-up files, the judge's environment, "
             "...). With `--wfbench-suspicious fail` they count as unresolved.", ""]
    if suspicious:
        lines += table(["cell", "counted as", "findings"],
                       [[r["cell_id"], "resolved" if r.get("resolved") else "unresolved",
                         "; ".join(r["suspicious"])] for r in suspicious])
    else:
        lines.append("None.")
    by_exit_code = sorted({r["task"] for r in ran if r.get("oracle_judged_by") == "exit-code"})
    if by_exit_code:
        lines += ["", "## Oracles judged by exit code alone", "",
                  "These tasks declare `oracle.expect: exit-code`: their oracle passes on a "
                  "zero exit status, not on observed test results.", ""]
        lines += [f"- {task}" for task in by_exit_code]
    bugs = [r for r in ran if r.get("error_kind") == "harness-error"]
    if bugs:
        lines += ["", "## Harness errors", "",
                  "An unexpected exception inside pytest-wfbench (a bug: please report it). "
                  "Counted as unresolved where the session had completed.", ""]
        lines += table(["cell", "counted", "detail"],
                       [[r["cell_id"], "yes" if r.get("counted") else "no",
                         _first_line(r.get("error_detail"))] for r in bugs])
    return lines


def harness_error_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [f"wfbench: HARNESS ERROR (a bug in pytest-wfbench) in {r['cell_id']}: "
            f"{_first_line(r.get('error_detail'))}"
            for r in rows if r.get("error_kind") == "harness-error"]


def suspicious_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    wins = [r["cell_id"] for r in rows if r.get("resolved") and r.get("suspicious")]
    if not wins:
        return []
    return [f"wfbench: {len(wins)} resolved cells are suspicious (their patch reaches into "
            f"the judges; see report.md): {', '.join(wins[:10])}{' ...' if len(wins) > 10 else ''}"]


def overhead_section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per arm: what its cells cost beyond their sessions (template, clone, judges,
    evidence), and the harness's share of the cells' time."""
    ran = [r for r in rows if r.get("status") == "ran" and r.get("lane", "agent") == "agent"
           and r.get("harness_overhead_s") is not None]
    if not ran:
        return []
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for row in ran:
        by_arm.setdefault(str(row["arm"]), []).append(row)
    body = []
    for arm, arm_rows in sorted(by_arm.items()):
        total = sum(float(r["duration_s"]) for r in arm_rows)
        overhead = sum(float(r["harness_overhead_s"]) for r in arm_rows)
        stages: dict[str, list[float]] = {}
        for row in arm_rows:
            for name, ms in (row.get("stage_ms") or {}).items():
                stages.setdefault(name, []).append(float(ms))
        slowest = sorted(((statistics.median(v), k) for k, v in stages.items()
                          if k != "session"), reverse=True)[:3]
        body.append([arm, str(len(arm_rows)),
                     fmt(statistics.median(float(r["duration_s"]) for r in arm_rows), 2),
                     fmt(statistics.median(float(r["harness_overhead_s"]) for r in arm_rows), 2),
                     "n/a" if total <= 0 else f"{overhead / total:.0%}",
                     ", ".join(f"{name} {ms:,.0f} ms" for ms, name in slowest)])
    return ["## Harness overhead", "",
            "A cell's duration minus its session's: template, clone, setup, judges, "
            "capture, evidence and clean-up (each row's `stage_ms` has the split).", "",
            *table(["arm", "cells", "median cell s", "median overhead s", "harness share",
                    "slowest stages (median)"], body)]
