"""Report sections of the tool-cost lane. Pure: rows in, Markdown lines out.

Latency is compared only between rows of the same remote transport; across
transports the report compares tool calls and tokens only.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from pytest_wfbench.report import fmt, table

Row = dict[str, Any]
SECTIONS = (
    ("task_loop", "Task loop"),
    ("agent_task_baseline", "Cold clone and warm task"),
    ("interrupted_publication", "Interrupted publication"),
)


def _oracle(row: Row) -> str:
    if row.get("status") != "ran":
        return f"skipped: {row.get('skip_reason')}"
    passed = row.get("oracle_passed")
    text = "pass" if passed else ("not run" if passed is None else "FAIL")
    return text if not row.get("error_kind") else f"{text} ({row['error_kind']})"


def _phase_ms(row: Row, phase: str) -> str:
    return fmt((row.get("totals") or {}).get("phase_elapsed_ms", {}).get(phase))


def _calls(row: Row) -> str:
    calls = (row.get("totals") or {}).get("tool_calls")
    if not calls:
        return "n/a"
    return f"{calls['total']} ({calls['terminal']} terminal, {calls['vcs']} vcs)"


def _common(row: Row) -> list[str]:
    totals = row.get("totals") or {}
    return [row["arm"], str(row["run"]), row.get("transport") or "n/a",
            fmt(totals.get("elapsed_ms")), _calls(row), fmt(totals.get("estimated_tokens"))]


def _rows_of(rows: Sequence[Row], kind: str) -> list[Row]:
    return [r for r in rows if (r.get("extras") or {}).get("scenario_kind") == kind
            or (r.get("status") == "skipped" and r.get("class") == kind)]


def _comparison(rows: Sequence[Row]) -> list[str]:
    ran = [r for r in rows if r.get("status") == "ran" and r.get("counted")]
    transports = sorted({r.get("transport") or "n/a" for r in ran})
    lines: list[str] = []
    body = []
    for transport in transports:
        for subject in sorted({r["arm"] for r in ran if r.get("transport") == transport}):
            mine = [r for r in ran if r.get("transport") == transport and r["arm"] == subject]
            totals = [r.get("totals") or {} for r in mine]
            wall = statistics.median(t.get("elapsed_ms") or 0.0 for t in totals)
            calls = statistics.median(t.get("tool_calls", {}).get("total", 0) for t in totals)
            tokens = statistics.median(t.get("estimated_tokens") or 0 for t in totals)
            body.append([transport, subject, str(len(mine)),
                         fmt(float(wall)) if len(transports) == 1 else "not compared",
                         fmt(float(calls)), fmt(float(tokens))])
    if body:
        lines += ["", "Medians per subject (latency only within one transport):", ""]
        lines += table(["transport", "subject", "runs", "wall ms", "tool calls", "est. tokens"],
                       body)
    return lines


def render_lanes(rows: Sequence[Row], environment: dict[str, Any] | None) -> list[str]:
    lane_rows = [r for r in rows if r.get("lane") == "tool-cost"]
    if not lane_rows:
        return []
    lines = ["## Tool-cost lanes", "",
             "Each step is timed and counted as an agent would pay for it; setup and the "
             "oracle are untimed. Tokens are estimated (characters / 4) from the command and "
             "the admitted output."]
    for kind, title in SECTIONS:
        mine = _rows_of(lane_rows, kind)
        if not mine:
            continue
        lines += ["", f"### {title}", ""]
        if kind == "task_loop":
            lines += table(
                ["subject", "run", "transport", "wall ms", "tool calls", "est. tokens",
                 "task ms", "follow-up ms", "warm-acquire delta ms", "oracle"],
                [[*_common(r), _phase_ms(r, "task"), _phase_ms(r, "followup"),
                  fmt((r.get("extras") or {}).get("warm_acquire_delta_ms")), _oracle(r)]
                 for r in mine])
        elif kind == "agent_task_baseline":
            lines += table(
                ["subject", "run", "transport", "wall ms", "tool calls", "est. tokens",
                 "cold ms", "warm ms", "disk cold/warm bytes", "unmeasured", "oracle"],
                [[*_common(r), _phase_ms(r, "cold"), _phase_ms(r, "warm"),
                  _disk(r), ", ".join((r.get("totals") or {}).get("unmeasured_operations", []))
                  or "-", _oracle(r)] for r in mine])
        else:
            lines += table(
                ["subject", "run", "transport", "outcome", "requests observed",
                 "mutation requests", "request bytes", "head preserved", "work kept unpushed",
                 "oracle"],
                [[r["arm"], str(r["run"]), r.get("transport") or "n/a",
                  *(fmt((r.get("extras") or {}).get(k)) for k in (
                      "outcome", "requests_observed", "mutation_requests", "request_bytes",
                      "head_preserved", "work_marked_unpushed")), _oracle(r)] for r in mine])
        lines += _comparison(mine)
    if environment:
        versions = environment.get("subjects") or {}
        lines += ["", "### Environment", "",
                  f"- host {environment.get('host')}, {environment.get('platform')}, Python "
                  f"{environment.get('python')}, {environment.get('cpu_count')} CPUs",
                  f"- random seed: {fmt(environment.get('random_seed'))}"]
        lines += [f"- {name}: {version or 'not installed'}" for name, version in versions.items()]
    return lines


def _disk(row: Row) -> str:
    usage = (row.get("extras") or {}).get("disk_usage_bytes")
    if not usage:
        return "n/a"
    return f"{usage['cold_bytes']:,} / {usage['warm_bytes']:,}"


def render_lanes_terminal(rows: Sequence[Row]) -> list[str]:
    """One line per tool-cost cell for the terminal summary."""
    lane_rows = [r for r in rows if r.get("lane") == "tool-cost"]
    if not lane_rows:
        return []
    headers = ["cell", "transport", "wall ms", "calls", "est. tokens", "oracle"]
    body = [[r["cell_id"], r.get("transport") or "-",
             fmt((r.get("totals") or {}).get("elapsed_ms")),
             fmt((r.get("totals") or {}).get("tool_calls", {}).get("total")),
             fmt((r.get("totals") or {}).get("estimated_tokens")),
             "skipped" if r.get("status") == "skipped" else _oracle(r)] for r in lane_rows]
    widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True))
            for line in [headers, *body]]
