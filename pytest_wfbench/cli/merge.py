"""``wfbench merge DIR... -o OUT``: sweeps or shards into one out dir. The
decisions are :mod:`.mergeplan`'s; this module reads the inputs and writes OUT:
results.jsonl, superseded.jsonl, the kept rows' artifacts (copied, regular
files only, never through a link), environment.json, sweep.json and the
report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_wfbench.cli.errors import CHECK_FAILED, FAILED, OK, USAGE, CliError
from pytest_wfbench.cli.mergeplan import MergeError, MergeInput, MergePlan, plan_merge
from pytest_wfbench.cli.outdirs import SweepDir, read_sweep_dir
from pytest_wfbench.control.replay import copy_artifacts
from pytest_wfbench.outdir import write_report
from pytest_wfbench.redact import Redactor
from pytest_wfbench.row import utc_now
from pytest_wfbench.shard import parse_sweep_id
from pytest_wfbench.store import (
    ENVIRONMENT,
    SUPERSEDED,
    ResultsStore,
    write_sweep_record,
)


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "merge", help="merge sweeps or the shards of one sweep into one out dir",
        description="Merge the out dirs DIR... (whole sweeps, or the shards of one sweep) into "
        "the new out dir OUT, with one sweep.json and one report. A cell in several inputs "
        "must have the same identity in each (else the merge is refused, naming the cell and "
        "the parts that differ); the first admissible row of it is kept. The shards of one "
        "sweep keep its id; other merges get --sweep-id or 'merged-<digest of the inputs' "
        "ids>'.",
        epilog="exit status: 0 merged; 1 refused (cells with different identities, shards "
        "missing or of differently split sweeps); 2 usage error; 3 OUT could not be written")
    parser.add_argument("dirs", metavar="DIR", type=Path, nargs="+", help="an out dir to merge")
    parser.add_argument("-o", "--out", metavar="OUT", type=Path, required=True,
                        help="the merged out dir (new, or empty)")
    parser.add_argument("--sweep-id", metavar="ID",
                        help="the merged sweep's id (default: see above)")
    parser.add_argument("--baseline-arm", metavar="NAME",
                        help="the merged sweep's baseline arm (needed when the inputs differ)")
    parser.add_argument("--allow-missing-shards", action="store_true",
                        help="merge the shards given even when some of the sweep's are "
                        "missing: the merged sweep is 'incomplete' and names their tasks")
    parser.add_argument("--secret-env", metavar="NAME", action="append", default=[],
                        help="an environment variable whose value is redacted too; repeatable")
    parser.set_defaults(run=run)


def _check_out(out: Path, inputs: list[SweepDir]) -> None:
    resolved = out.resolve()
    for item in inputs:
        if item.path.resolve() == resolved:
            raise CliError(f"-o {out}: is also an input; give a new directory", USAGE)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"-o {out}: exists and is not an empty directory; give a new one",
                       USAGE)


def write_merge(plan: MergePlan, inputs: list[SweepDir], out: Path,
                redactor: Redactor) -> list[str]:
    """Write OUT from the plan; returns notes (artifacts that could not be copied)."""
    store = ResultsStore(out, redactor)
    store.prepare()
    notes = []
    rows = []
    for index, row in plan.rows:
        names = list(row.get("artifacts") or [])
        copied = copy_artifacts(names, inputs[index].path, out)
        if copied != names:
            lost = sorted(set(names) - set(copied))
            notes.append(f"{row.get('cell_id')}: artifacts not copied (missing, or not regular "
                         f"files) from {inputs[index].path}: {', '.join(lost)}")
        rows.append({**row, "artifacts": copied})
    store.append_many(rows)
    superseded = [row for item in inputs for row in item.superseded()] + plan.dropped
    if superseded:
        (out / SUPERSEDED).write_text("".join(
            json.dumps(redactor.data(row), sort_keys=True, ensure_ascii=False) + "\n"
            for row in superseded), encoding="utf-8")
    environment = next((item.path / ENVIRONMENT for item in inputs
                        if (item.path / ENVIRONMENT).is_file()), None)
    if environment is not None:
        store.write_text(ENVIRONMENT, environment.read_text(encoding="utf-8"))
    write_sweep_record(store, {**plan.record, "out_dir": str(out.resolve())})
    return notes


def run(args: argparse.Namespace) -> int:
    if args.sweep_id is not None:
        try:
            parse_sweep_id(args.sweep_id)
        except ValueError as error:
            raise CliError(f"--sweep-id: {error}", USAGE) from None
    inputs = [read_sweep_dir(path, "DIR") for path in args.dirs]
    _check_out(args.out, inputs)
    try:
        plan = plan_merge([MergeInput(str(item.path), item.record, item.rows) for item in inputs],
                          now=utc_now(), sweep_id=args.sweep_id, baseline_arm=args.baseline_arm,
                          allow_missing_shards=args.allow_missing_shards)
    except MergeError as error:
        raise CliError(str(error), CHECK_FAILED) from error
    redactor = Redactor.from_environment(args.secret_env)
    try:
        notes = write_merge(plan, inputs, args.out, redactor)
        report, html = write_report(ResultsStore(args.out, redactor))
    except OSError as error:
        raise CliError(f"-o {args.out}: cannot be written: {error}", FAILED) from error
    print(f"wfbench merge: {len(plan.rows)} cells from {len(inputs)} out dirs into {args.out} "
          f"(sweep {plan.sweep_id}, {plan.state})")
    for overlap in plan.overlaps:
        print(f"wfbench merge: {overlap.cell_id}: {overlap.note}")
    for note in notes:
        print(f"wfbench merge: {note}")
    if plan.reason:
        print(f"wfbench merge: {plan.state}: {plan.reason}")
    for name in report.files:
        print(f"wfbench report: {args.out / name}")
    print(html.line)
    return FAILED if html.failed else OK
