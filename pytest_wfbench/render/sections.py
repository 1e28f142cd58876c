"""Report sections read straight from rows: how far each win can be trusted
(suspicious wins, oracles judged by exit code, harness errors) and what the
harness cost beyond the sessions."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from operator import itemgetter
from typing import Any

from pytest_wfbench.aggregate import row_order
from pytest_wfbench.render.format import first_line, fmt, table


def trust_sections(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the report says about how far each win can be trusted: suspicious
    wins, oracles judged by exit code alone, harness errors (SPEC §5)."""
    ran = [r for r in rows if r.get("status") == "ran" and r.get("lane", "agent") == "agent"]
    # Only the rows listed are put in order (a stable sort of a part keeps the
    # order the whole would have had).
    suspicious = sorted((r for r in ran if r.get("suspicious")
                         and (r.get("resolved") or r.get("error_kind") == "suspicious")),
                        key=row_order)
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
    bugs = sorted((r for r in ran if r.get("error_kind") == "harness-error"), key=row_order)
    if bugs:
        lines += ["", "## Harness errors", "",
                  "An unexpected exception inside pytest-wfbench (a bug: please report it). "
                  "Counted as unresolved where the session had completed.", ""]
        lines += table(["cell", "counted", "detail"],
                       [[r["cell_id"], "yes" if r.get("counted") else "no",
                         first_line(r.get("error_detail"))] for r in bugs])
    return lines


def overhead_section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per arm: what its cells cost beyond their sessions (template, clone, judges,
    evidence), and the harness's share of the cells' time."""
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if (row.get("status") == "ran" and row.get("lane", "agent") == "agent"
                and row.get("harness_overhead_s") is not None):
            by_arm.setdefault(str(row["arm"]), []).append(row)
    if not by_arm:
        return []
    body = []
    for arm, arm_rows in sorted(by_arm.items()):
        durations = [float(r["duration_s"]) for r in arm_rows]
        overheads = [float(r["harness_overhead_s"]) for r in arm_rows]
        total = sum(durations)
        stages = _stage_values(arm_rows)
        slowest = sorted(((statistics.median(v), k) for k, v in stages.items()
                          if k != "session"), reverse=True)[:3]
        body.append([arm, str(len(arm_rows)), fmt(statistics.median(durations), 2),
                     fmt(statistics.median(overheads), 2),
                     "n/a" if total <= 0 else f"{sum(overheads) / total:.0%}",
                     ", ".join(f"{name} {ms:,.0f} ms" for ms, name in slowest)])
    return ["## Harness overhead", "",
            "A cell's duration minus its session's: template, clone, setup, judges, "
            "capture, evidence and clean-up (each row's `stage_ms` has the split).", "",
            *table(["arm", "cells", "median cell s", "median overhead s", "harness share",
                    "slowest stages (median)"], body)]


def _stage_values(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Each stage's times over the rows. Rows that time the same stages (most)
    are taken a stage at a time; the values' order does not matter (medians)."""
    groups: list[tuple[Any, list[dict[str, float]]]] = []
    for row in rows:
        stage_ms = row.get("stage_ms") or {}
        names = stage_ms.keys()
        for timed_names, timed in reversed(groups):  # the last group, most often
            if names == timed_names:
                timed.append(stage_ms)
                break
        else:
            groups.append((names, [stage_ms]))
    stages: dict[str, list[float]] = {}
    for names, timed in groups:
        for name in names:
            stages.setdefault(name, []).extend(map(float, map(itemgetter(name), timed)))
    return stages
