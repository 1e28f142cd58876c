"""``wfbench compare OLD NEW``: two sweeps side by side (:mod:`.sweepdiff`),
as markdown on stdout or, with ``--json``, as JSON. The rendering is pure."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_wfbench.cli.errors import OK
from pytest_wfbench.cli.outdirs import read_sweep_dir
from pytest_wfbench.cli.sweepdiff import MedianDiff, Rate, SweepDiff, compare_sweeps
from pytest_wfbench.redact import neutralize
from pytest_wfbench.render.format import (
    fmt,
    fmt_p,
    fmt_points,
    fmt_points_interval,
    fmt_rate_interval,
    table,
)

LABELS = {"tokens": "tokens", "cost_usd": "cost", "session_duration_s": "session s",
          "duration_s": "cell s", "num_turns": "turns"}
DIGEST_CHARS = 12


def _rate(rate: Rate | None) -> str:
    if rate is None:
        return "-"
    return f"{rate.resolved}/{rate.valid} ({fmt_rate_interval(rate.interval)})"


def _figure(name: str, value: float | None, signed: bool = False) -> str:
    """A figure as report.md writes it; ``signed``: a difference, with its sign."""
    if value is None:
        return "n/a"
    sign = ("+" if value >= 0 else "-") if signed else ("-" if value < 0 else "")
    magnitude = abs(float(value))
    return sign + (f"${magnitude:,.4f}" if name == "cost_usd" else fmt(magnitude, 2))


def _median_cell(diff: MedianDiff) -> str:
    if diff.difference is None:
        return "n/a"
    interval = ("" if diff.interval is None else
                f" [{_figure(diff.metric, diff.interval.low, True)}, "
                f"{_figure(diff.metric, diff.interval.high, True)}]")
    tasks = f"{diff.tasks} task{'s' if diff.tasks != 1 else ''}"
    return f"{_figure(diff.metric, diff.difference, True)}{interval} ({tasks})"


def _value(value: Any) -> str:
    """An identity part's value: digests shortened, None as n/a."""
    if value is None:
        return "n/a"
    text = str(value)
    hexadecimal = len(text) >= 40 and all(c in "0123456789abcdef" for c in text)
    return text[:DIGEST_CHARS] if hexadecimal else text


def _cells(cells: list[str], limit: int = 8) -> str:
    shown = ", ".join(cells[:limit])
    return shown + (f" (+{len(cells) - limit} more)" if len(cells) > limit else "")


def render_markdown(diff: SweepDiff, old_label: str, new_label: str) -> str:
    """The comparison as markdown (the same diff always gives the same bytes)."""
    lines = [f"# wfbench compare: `{diff.old_sweep}` -> `{diff.new_sweep}`", "",
             f"- old: {old_label}", f"- new: {new_label}",
             f"- cells in both: {diff.unchanged + len(diff.changed)} "
             f"({len(diff.changed)} changed outcome, {diff.unchanged} unchanged); only in old: "
             f"{len(diff.only_old)}; only in new: {len(diff.only_new)}", ""]
    lines += ["## Arms", "",
              "Resolve rates over counted runs (Wilson 95% interval); the difference new - old "
              "is paired by cell over the cells both sweeps counted (Newcombe's interval, exact "
              "McNemar test).", ""]
    lines += table(["arm", "old resolved", "new resolved", "paired cells", "difference",
                    "95% CI", "p"],
                   [[a.arm, _rate(a.old), _rate(a.new), str(a.pairs.pairs),
                     fmt_points(a.difference), fmt_points_interval(a.interval),
                     fmt_p(a.p_value)] for a in diff.arms])
    lines += ["", "### Medians", "",
              "Over the tasks both sweeps counted the arm on: each sweep's figure is the mean "
              "of its per-task medians (as in report.md), the difference new - old the mean of "
              "the per-task differences, with a seeded bootstrap interval over tasks (none "
              "with a single task).", ""]
    rows = []
    for arm in diff.arms:
        for median in arm.medians:
            rows.append([arm.arm, LABELS[median.metric], _figure(median.metric, median.old),
                         _figure(median.metric, median.new), _median_cell(median)])
    lines += table(["arm", "figure", "old", "new", "difference [95% CI]"], rows)
    lines += ["", "## Tasks and arms", ""]
    lines += table(["task", "arm", "old resolved", "new resolved", "old tokens", "new tokens",
                    "old cost", "new cost", "old session s", "new session s"],
                   [[t.task, t.arm, _rate(t.old), _rate(t.new),
                     _figure("tokens", t.medians["tokens"][0]),
                     _figure("tokens", t.medians["tokens"][1]),
                     _figure("cost_usd", t.medians["cost_usd"][0]),
                     _figure("cost_usd", t.medians["cost_usd"][1]),
                     _figure("session_duration_s", t.medians["session_duration_s"][0]),
                     _figure("session_duration_s", t.medians["session_duration_s"][1])]
                    for t in diff.tasks])
    lines += ["", "## Cells that changed outcome", ""]
    if diff.changed:
        lines += table(["cell", "old", "new", "identity changes"],
                       [[c.cell_id, c.old, c.new, ", ".join(c.identity) or
                         "none (same conditions, another result)"] for c in diff.changed])
    else:
        lines.append("None.")
    lines += ["", "## Identity changes", "",
              "What decides what a measurement means, where it differs between the two rows "
              "of a cell: the task (its prompt, setup, verify, gold patch, ...), its base "
              "commit and oracle, the arm (its definition with its skills' and plugin's "
              "bytes), model, effort, sandbox backend and harness version. Digests are "
              f"shown by their first {DIGEST_CHARS} characters (--json has them whole).", ""]
    if diff.identity:
        lines += table(["part", "of", "old", "new", "cells"],
                       [[c.part, c.owner, _value(c.old), _value(c.new), _cells(c.cells)]
                        for c in diff.identity])
    else:
        lines.append("None: every cell in both sweeps was measured under the same identity.")
    if diff.settings:
        lines += ["", "## Settings that differ", ""]
        lines += table(["setting", "old", "new"],
                       [[name, _value(old), _value(new)]
                        for name, (old, new) in diff.settings.items()])
    if diff.only_old or diff.only_new:
        lines += ["", "## Cells in one sweep only", ""]
        lines += [f"- only in old: {_cells(diff.only_old, 20) or 'none'}",
                  f"- only in new: {_cells(diff.only_new, 20) or 'none'}"]
    return neutralize("\n".join(lines) + "\n")


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "compare", help="compare two sweeps arm by arm, task by task and cell by cell",
        description="Compare sweep NEW with sweep OLD: resolve rates and medians per arm with "
        "their differences and intervals, per (task, arm) figures, the cells whose outcome "
        "changed and the identity differences (model, arm and skills digest, harness "
        "version, oracle digest, task, base commit) that explain them. Markdown on stdout.",
        epilog="exit status: 0 compared; 2 usage error (e.g. OLD or NEW is not an out dir)")
    parser.add_argument("old", metavar="OLD", type=Path, help="the earlier sweep's out dir")
    parser.add_argument("new", metavar="NEW", type=Path, help="the later sweep's out dir")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    old = read_sweep_dir(args.old, "OLD")
    new = read_sweep_dir(args.new, "NEW")
    diff = compare_sweeps(old.rows, new.rows, old_record=old.record, new_record=new.record)
    if args.json:
        print(json.dumps(diff.to_json(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        print(render_markdown(diff, str(args.old), str(args.new)), end="")
    return OK
