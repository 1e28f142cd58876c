"""The terminal summary: a compact per-arm table and the lines that must stand
out (UNUSABLE arms, harness errors, suspicious wins, promotion verdicts)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pytest_wfbench.aggregate import Summary
from pytest_wfbench.render.format import first_line, fmt, fmt_cost, fmt_rate_interval


def render_terminal(summary: Summary, hidden: Collection[str] = ()) -> list[str]:
    """Per arm: health, resolved/valid with its interval, tokens, cost and session
    time (each the mean of per-task medians). ``hidden`` arms (the audit's many
    generated arms) are left to the report and counted in one line."""
    confidence = f"{summary.settings.confidence:.0%}"
    headers = ["arm", "health", "resolved/valid", f"{confidence} CI", "excl", "skip", "tokens",
               "cost", "session s"]
    rows = [[a.arm, a.health.status.value, f"{a.resolved}/{a.valid}",
             fmt_rate_interval(a.resolve_interval), str(len(a.excluded)), str(a.skipped),
             fmt(a.medians["tokens"]), fmt_cost(a.medians["cost_usd"]),
             fmt(a.medians["session_duration_s"], 2)] for a in summary.arms
            if a.arm not in hidden]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    left_out = [a for a in summary.arms if a.arm in hidden]
    if left_out:
        out.append(f"... and {len(left_out)} audit arms ({sum(a.attempts for a in left_out)} "
                   "cells): see the report's Audit section")
    return out


def unusable_lines(summary: Summary) -> list[str]:
    return [f"wfbench: arm {arm.arm!r} is UNUSABLE: every fresh attempt failed "
            f"({arm.health.describe()})"
            for arm in summary.arms if arm.arm in summary.unusable]


def harness_error_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    return [f"wfbench: HARNESS ERROR (a bug in pytest-wfbench) in {r.get('cell_id')}: "
            f"{first_line(r.get('error_detail'))}"
            for r in rows if r.get("error_kind") == "harness-error"]


def suspicious_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    wins = [str(r.get("cell_id")) for r in rows if r.get("resolved") and r.get("suspicious")]
    if not wins:
        return []
    return [f"wfbench: {len(wins)} resolved cells are suspicious (their patch reaches into "
            f"the judges; see report.md): {', '.join(wins[:10])}{' ...' if len(wins) > 10 else ''}"]


def promotion_lines(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per candidate: its verdict, and the first reason."""
    lines = []
    for e in sorted(evidence, key=lambda item: str(item["candidate"])):
        gain = e["overall"]["improvement_pct"]
        figure = "n/a" if gain is None else f"{gain:+.1f}%"
        reason = e["reasons"][0] if e["reasons"] else ""
        lines.append(f"wfbench promotion: {e['candidate']} over {e['incumbent']}: "
                     f"{e['verdict']} ({e['metric']} {figure}; {reason})")
    return lines
