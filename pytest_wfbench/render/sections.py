"""Report sections read straight from rows: how far each win can be trusted
(suspicious wins, oracles judged by exit code, harness errors) and what the
harness cost beyond the sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_wfbench.aggregate import row_order
from pytest_wfbench.aggregate.select import field_is, grouped, picked, positions_of
from pytest_wfbench.render.format import first_line, fmt
from pytest_wfbench.render.format import table as table_lines
from pytest_wfbench.stats.medians import Column, Groups
from pytest_wfbench.table import Table, gather


def trust_sections(rows: Sequence[dict[str, Any]]) -> list[str]:
    """What the report says about how far each win can be trusted: suspicious
    wins, oracles judged by exit code alone, harness errors (SPEC §5)."""
    table = Table.of(rows)
    return trust_sections_of(table, table.positions)


def trust_sections_of(table: Table, positions: Sequence[int]) -> list[str]:
    """:func:`trust_sections` of these rows of the table (the rows it lists are
    among the table's kept rows)."""
    agent = table.agent(positions)
    ran_rows = field_is(table, "status", agent, "ran")
    ran = picked(agent, ran_rows)
    listed = table.kept_rows(ran) if table.kept else []
    # Only the rows listed are put in order (a stable sort of a part keeps the
    # order the whole would have had).
    suspicious = sorted((r for r in listed if r.get("suspicious")
                         and (r.get("resolved") or r.get("error_kind") == "suspicious")),
                        key=row_order)
    lines = ["## Suspicious wins", "",
             "Resolved cells whose final patch reaches into the judges (pytest internals, "
             "process exit, entry-point metadata, start-up files, the judge's environment, "
             "...). With `--wfbench-suspicious fail` they count as unresolved.", ""]
    if suspicious:
        lines += table_lines(["cell", "counted as", "findings"],
                             [[r.get("cell_id"), "resolved" if r.get("resolved") else "unresolved",
                               "; ".join(r["suspicious"])] for r in suspicious])
    else:
        lines.append("None.")
    by_exit_code = sorted(set(picked(gather(table.obj("task"), agent), ran_rows & field_is(
        table, "oracle_judged_by", agent, "exit-code"))))
    if by_exit_code:
        lines += ["", "## Oracles judged by exit code alone", "",
                  "These tasks declare `oracle.expect: exit-code`: their oracle passes on a "
                  "zero exit status, not on observed test results.", ""]
        lines += [f"- {task}" for task in by_exit_code]
    bugs = sorted((r for r in listed if r.get("error_kind") == "harness-error"), key=row_order)
    if bugs:
        lines += ["", "## Harness errors", "",
                  "An unexpected exception inside pytest-wfbench (a bug: please report it). "
                  "Counted as unresolved where the session had completed.", ""]
        lines += table_lines(["cell", "counted", "detail"],
                             [[r.get("cell_id"), "yes" if r.get("counted") else "no",
                               first_line(r.get("error_detail"))] for r in bugs])
    return lines


def overhead_section(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per arm: what its cells cost beyond their sessions (template, clone, judges,
    evidence), and the harness's share of the cells' time."""
    table = Table.of(rows)
    return overhead_section_of(table, table.positions)


def _array(column: Sequence[float]) -> Column:
    return np.array(column, dtype=np.float64)


def overhead_section_of(table: Table, positions: Sequence[int]) -> list[str]:
    """:func:`overhead_section` of these rows of the table."""
    duration, overhead = table.number("duration_s"), table.number("harness_overhead_s")
    agent = table.agent(positions)
    at = positions_of(agent)
    timed = ~np.isnan(np.frombuffer(overhead, np.float64)[at])  # NaN: no overhead
    by_arm = grouped(list(map(str, gather(table.obj("arm"), agent))), at,
                     timed & field_is(table, "status", agent, "ran"))
    if not by_arm:
        return []
    arms = sorted(by_arm)
    layout = Groups([by_arm[arm] for arm in arms])
    cell_s, overhead_s = layout.medians(_array(duration)), layout.medians(_array(overhead))
    stage_ms = {name: layout.medians(_array(column)) for name, column in table.stages.items()
                if name != "session"}
    body = []
    for group, arm in enumerate(arms):
        members = by_arm[arm]
        total = sum(gather(duration, members))
        slowest = sorted(((median, name) for name, found in stage_ms.items()
                          if (median := found.median(group)) is not None), reverse=True)[:3]
        body.append([arm, str(len(members)), fmt(cell_s.median(group), 2),
                     fmt(overhead_s.median(group), 2),
                     "n/a" if total <= 0 else f"{sum(gather(overhead, members)) / total:.0%}",
                     ", ".join(f"{name} {ms:,.0f} ms" for ms, name in slowest)])
    return ["## Harness overhead", "",
            "A cell's duration minus its session's: template, clone, setup, judges, "
            "capture, evidence and clean-up (each row's `stage_ms` has the split).", "",
            *table_lines(["arm", "cells", "median cell s", "median overhead s",
                          "harness share", "slowest stages (median)"], body)]
