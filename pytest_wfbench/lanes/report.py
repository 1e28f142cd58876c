"""Report sections of the tool-cost lane. Pure: rows in, Markdown lines out.

Per scenario: each run, then the subjects side by side per step with medians
over runs (:mod:`.medians`). Subjects are put side by side only within one
remote transport: latency is never compared across transports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_wfbench.lanes.medians import (
    StepMedian,
    by_transport,
    step_medians,
    total_medians,
)
from pytest_wfbench.report import fmt, table

Row = dict[str, Any]
SECTIONS = (
    ("task_loop", "Task loop"),
    ("agent_task_baseline", "Cold clone and warm task"),
    ("interrupted_publication", "Interrupted publication"),
    ("publication_replay", "Blind replay of an unanswered push"),
)
INTRO = ("Each step is timed and counted as an agent would pay for it. The harness's own "
         "work (creating and seeding remotes, workspaces it prepares, clean-up, the "
         "oracle's reads) is timed apart and kept out of the agent-facing totals. Tokens are "
         "estimated (characters / 4) from the command and the admitted output. Subjects are "
         "put side by side only within one remote transport.")


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


def _extra(row: Row, *path: str) -> str:
    value: Any = row.get("extras") or {}
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return fmt(value)


def _rows_of(rows: Sequence[Row], kind: str) -> list[Row]:
    return [r for r in rows if (r.get("extras") or {}).get("scenario_kind") == kind
            or (r.get("status") == "skipped" and r.get("class") == kind)]


def _disk(row: Row) -> str:
    usage = (row.get("extras") or {}).get("disk_usage_bytes")
    if not usage:
        return "n/a"
    return f"{usage['cold_bytes']:,} / {usage['warm_bytes']:,}"


def _runs_table(kind: str, rows: list[Row]) -> list[str]:
    if kind == "task_loop":
        return table(
            ["subject", "run", "transport", "wall ms", "tool calls", "est. tokens",
             "task ms", "follow-up ms", "warm-acquire delta ms", "oracle"],
            [[*_common(r), _phase_ms(r, "task"), _phase_ms(r, "followup"),
              _extra(r, "warm_acquire_delta_ms"), _oracle(r)] for r in rows])
    if kind == "agent_task_baseline":
        return table(
            ["subject", "run", "transport", "wall ms", "tool calls", "est. tokens",
             "cold ms", "warm ms", "disk cold/warm bytes", "warm acquisition", "unmeasured",
             "oracle"],
            [[*_common(r), _phase_ms(r, "cold"), _phase_ms(r, "warm"), _disk(r),
              _extra(r, "acquisition", "warm", "model"),
              ", ".join((r.get("totals") or {}).get("unmeasured_operations", [])) or "-",
              _oracle(r)] for r in rows])
    if kind == "interrupted_publication":
        return table(
            ["subject", "run", "transport", "outcome", "publication outcome",
             "requests observed", "mutation requests", "request bytes", "network bytes observed",
             "head preserved", "work kept unpushed", "dirty after", "reconciled", "oracle"],
            [[r["arm"], str(r["run"]), r.get("transport") or "n/a",
              *(_extra(r, k) for k in (
                  "outcome", "publication_outcome", "requests_observed", "mutation_requests",
                  "request_bytes", "network_request_bytes_observed", "head_preserved",
                  "work_marked_unpushed", "working_tree_dirty_after", "reconciled")),
              _oracle(r)] for r in rows])
    return table(
        ["subject", "run", "transport", "mutation requests (no keep-alive)",
         "blind replays (no keep-alive)", "mutation requests (keep-alive)",
         "blind replays (keep-alive)", "oracle"],
        [[r["arm"], str(r["run"]), r.get("transport") or "n/a",
          _extra(r, "mutation_requests_sent", "no_keepalive"),
          _extra(r, "blind_replay_requests", "no_keepalive"),
          _extra(r, "mutation_requests_sent", "keepalive"),
          _extra(r, "blind_replay_requests", "keepalive"), _oracle(r)] for r in rows])


def _step_cells(median: StepMedian | None) -> list[str]:
    if median is None:
        return ["-", "-"]
    if median.elapsed_ms is None:
        return ["unmeasured", "-"]
    return [fmt(median.elapsed_ms), fmt(median.estimated_tokens)]


def side_by_side(rows: Sequence[Row]) -> list[str]:
    """Per transport: the subjects' medians per step, their totals, and the
    harness's own work, in columns side by side."""
    lines: list[str] = []
    for transport, group in by_transport(rows).items():
        order, medians = step_medians(group)
        subjects = list(medians)
        totals = total_medians(group)
        headers = ["step"]
        for subject in subjects:
            runs = int(totals[subject]["runs"] or 0)
            headers += [f"{subject} ms (median of {runs})", f"{subject} est. tokens"]
        body = [[operation, *(cell for s in subjects
                              for cell in _step_cells(medians[s].get(operation)))]
                for operation in order]
        body.append(["agent-facing total", *(cell for s in subjects for cell in (
            fmt(totals[s]["elapsed_ms"]), fmt(totals[s]["estimated_tokens"])))])
        body.append(["tool calls", *(cell for s in subjects for cell in (
            fmt(totals[s]["tool_calls"]), ""))])
        lines += ["", f"Side by side on `{transport}` (medians over runs; latency compared "
                  "within this transport only):", ""]
        lines += table(headers, body)
        lines += _harness_table(group, subjects, totals)
    return lines


def _harness_table(group: Sequence[Row], subjects: list[str],
                   totals: dict[str, dict[str, float | None]]) -> list[str]:
    """The harness's own steps, timed and counted, apart from the agent's."""
    order, harness = step_medians(group, harness=True)
    if not order:
        return []
    headers = ["harness step (not in the totals)"]
    for subject in subjects:
        headers += [f"{subject} ms", f"{subject} commands"]

    def cells(subject: str, operation: str) -> tuple[str, str]:
        found = harness.get(subject, {}).get(operation)
        if found is None:
            return "-", "-"
        return fmt(found.elapsed_ms), fmt(found.harness_command_count)

    body = [[operation, *(c for s in subjects for c in cells(s, operation))]
            for operation in order]
    body.append(["harness total", *(c for s in subjects for c in (
        fmt(totals[s]["harness_ms"]), fmt(totals[s]["harness_commands"])))])
    return ["", *table(headers, body)]


def render_lanes(rows: Sequence[Row], environment: dict[str, Any] | None) -> list[str]:
    lane_rows = [r for r in rows if r.get("lane") == "tool-cost"]
    if not lane_rows:
        return []
    lines = ["## Tool-cost lanes", "", INTRO]
    for kind, title in SECTIONS:
        mine = sorted(_rows_of(lane_rows, kind), key=lambda r: (str(r["arm"]), r["run"]))
        if not mine:
            continue
        lines += ["", f"### {title}", ""]
        lines += _runs_table(kind, mine)
        lines += side_by_side(mine)
    if environment:
        versions = environment.get("subjects") or {}
        lines += ["", "### Environment", "",
                  f"- host {environment.get('host')}, {environment.get('platform')}, Python "
                  f"{environment.get('python')}, {environment.get('cpu_count')} CPUs",
                  f"- random seed: {fmt(environment.get('random_seed'))}"]
        lines += [f"- {name}: {version or 'not installed'}" for name, version in versions.items()]
    return lines


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
