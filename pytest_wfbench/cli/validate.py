"""``wfbench validate FILE...``: task files checked as a sweep checks them,
without running anything (loading, with the same errors, and the expansion into
cells); with ``--gold`` a real ``gold,noop`` sweep in a pytest subprocess proves
each task sound: gold resolves it and noop does not (a review task's clean
control: noop's empty approval must resolve it); ``--mutants`` adds the
oracle's mutants to that sweep and judges each task's kill rate (a task under
the minimum is under-specified: pytest_wfbench.audit)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_wfbench.audit.report import DEFAULT_MIN_KILL_RATE, audit_tasks
from pytest_wfbench.cells import KNOWN_ARMS, expand, expand_scenarios
from pytest_wfbench.cli.errors import CHECK_FAILED, FAILED, OK, CliError
from pytest_wfbench.outdir import latest_per_cell
from pytest_wfbench.render.format import first_line
from pytest_wfbench.store import RESULTS, iter_rows
from pytest_wfbench.tasks import TaskFile, TaskFileError, load_task_file, load_task_files

SOUNDNESS_ARMS = ("gold", "noop")
PYTEST_USAGE_ERROR = 4


@dataclass(frozen=True)
class Soundness:
    """Whether the gold,noop sweep proved a task sound, and why not."""

    task: str
    sound: bool
    reason: str


def check_files(paths: Sequence[Path], arms: Sequence[str] | None,
                runs: int) -> tuple[list[TaskFile], list[str]]:
    """Load each file alone (so every file's first error is reported), then all
    together (ids unique across the sweep), and expand them into cells."""
    files, errors = [], []
    for path in paths:
        try:
            task_file = load_task_file(path, known_arms=KNOWN_ARMS)
            expand(task_file, arms, runs)
            expand_scenarios(task_file, runs, None)
        except TaskFileError as error:
            errors.append(str(error))
            continue
        files.append(task_file)
    if not errors and len(files) > 1:
        try:
            load_task_files(paths, known_arms=KNOWN_ARMS)
        except TaskFileError as error:
            errors.append(str(error))
    return files, errors


def soundness(files: Sequence[TaskFile], rows: Sequence[dict[str, Any]]) -> list[Soundness]:
    """Each task's verdict from the rows of its gold and noop cells (run 1)."""
    by_cell = {str(row.get("cell_id")): row for row in rows}
    verdicts = []
    for task_file in files:
        for task in task_file.tasks:
            gold = by_cell.get(f"{task.id}-gold-r1")
            noop = by_cell.get(f"{task.id}-noop-r1")
            clean = task.oracle.review is not None and task.oracle.review.clean_control
            verdicts.append(_verdict(task.id, gold, noop, clean))
    return verdicts


def _why(row: dict[str, Any]) -> str:
    return f"{row.get('error_kind')}: {first_line(row.get('error_detail')) or 'no detail'}"


def _verdict(task: str, gold: dict[str, Any] | None, noop: dict[str, Any] | None,
             clean_control: bool) -> Soundness:
    for arm, row in (("gold", gold), ("noop", noop)):
        if row is None:
            return Soundness(task, False, f"not proven: its {arm} cell has no row")
        if row.get("status") == "skipped":
            return Soundness(task, False, f"not proven: its {arm} cell was skipped "
                                          f"({row.get('skip_reason')})")
        if not row.get("counted"):
            return Soundness(task, False, f"not proven: its {arm} cell is an excluded run "
                                          f"({_why(row)})")
    assert gold is not None and noop is not None
    if not gold.get("resolved"):
        return Soundness(task, False, f"unsound: gold does not resolve it ({_why(gold)})")
    if clean_control and not noop.get("resolved"):
        return Soundness(task, False, "unsound: a clean control that noop's empty approval does "
                                      f"not resolve ({_why(noop)})")
    if not clean_control and noop.get("resolved"):
        return Soundness(task, False, "unsound: noop resolves it (its oracle passes without any "
                                      "change)")
    return Soundness(task, True, "sound: gold resolves it, noop " +
                     ("resolves it (a clean control)" if clean_control else "does not"))


def gold_command(paths: Sequence[Path], out: Path, *, scenarios: bool,
                 extra: Sequence[str], mutants: int | None = None,
                 min_kill_rate: float = DEFAULT_MIN_KILL_RATE) -> list[str]:
    """The gold,noop sweep (with ``mutants``: and at most that many mutants per
    task): one run per cell, tool-cost scenarios deselected."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    for path in paths:
        command += ["--wfbench-tasks", str(path.resolve())]
    arms = [*SOUNDNESS_ARMS, *(["mutants"] if mutants is not None else [])]
    command += ["--wfbench-arms", ",".join(arms), "--wfbench-runs", "1",
                "--wfbench-out", str(out)]
    if mutants is not None:
        command += ["--wfbench-max-mutants", str(mutants),
                    "--wfbench-min-kill-rate", str(min_kill_rate)]
    if scenarios:
        command += ["-k", "not test_scenario"]
    return [*command, *extra]


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "validate", help="check task files without running anything (--gold: prove each task "
        "sound)",
        description="Check task files as a sweep does before any cell runs: every field, "
        "with errors naming the file, the line, the task and the field, and the expansion "
        "into cells (arms, runs). With --gold, also run the gold and noop arms (a real "
        "sweep: pytest --wfbench-tasks FILE --wfbench-arms gold,noop, in a subprocess; "
        "arguments after '--' are passed to it, e.g. -- -n 2) and say of each task whether "
        "it is sound.",
        epilog="exit status: 0 every file valid (and with --gold every task sound); 1 a file "
        "is invalid, or a task is unsound or not proven (skipped, excluded); 2 usage error; "
        "3 the sweep could not run (e.g. its sandbox preflight failed)")
    parser.add_argument("files", metavar="FILE", type=Path, nargs="+", help="a task file")
    parser.add_argument("--arms", metavar="A,B",
                        help="check that these arms exist (default: each file's 'arms')")
    parser.add_argument("--runs", metavar="N", type=int, default=1, help="runs per cell")
    parser.add_argument("--gold", action="store_true",
                        help="run the gold and noop arms to prove each task sound")
    parser.add_argument("--mutants", action="store_true",
                        help="with the gold and noop arms, run the oracle's mutants and judge "
                        "each task's kill rate (implies --gold)")
    parser.add_argument("--max-mutants", type=int, default=20, metavar="N",
                        help="with --mutants: mutants per task (20)")
    parser.add_argument("--min-kill-rate", type=float, default=DEFAULT_MIN_KILL_RATE,
                        metavar="SHARE", help="with --mutants: below it a task is "
                        "under-specified (0.6)")
    parser.add_argument("--out", metavar="DIR", type=Path,
                        help="with --gold: the sweep's out dir (default: a temporary one, "
                        "kept when a task is not sound)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    arms = [a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else None
    if args.runs < 1:
        raise CliError(f"--runs must be a positive whole number, got {args.runs}")
    if args.max_mutants < 0:
        raise CliError(f"--max-mutants must be 0 or more, got {args.max_mutants}")
    if not 0.0 <= args.min_kill_rate <= 1.0:
        raise CliError(f"--min-kill-rate must be between 0 and 1, got {args.min_kill_rate}")
    for path in args.files:
        if not path.is_file():
            raise CliError(f"FILE {path}: no such file")
    files, errors = check_files(args.files, arms, args.runs)
    for error in errors:
        print(f"wfbench validate: {error}", file=sys.stderr)
    for task_file in files:
        cells = len(expand(task_file, arms, args.runs))
        scenario_cells = len(expand_scenarios(task_file, args.runs, None))
        print(f"wfbench validate: {task_file.path}: valid: {len(task_file.tasks)} tasks, "
              f"{len(task_file.scenarios)} scenarios, {cells + scenario_cells} cells")
    if errors:
        return CHECK_FAILED
    if not (args.gold or args.mutants):
        return OK
    return _run_gold(args, files)


def _run_gold(args: argparse.Namespace, files: list[TaskFile]) -> int:
    if not any(task_file.tasks for task_file in files):
        print("wfbench validate: --gold: the files declare no task (only scenarios): nothing "
              "to prove")
        return OK
    temporary = args.out is None
    out = Path(tempfile.mkdtemp(prefix="wfbench-validate-")) if temporary else args.out
    command = gold_command(args.files, out, scenarios=any(f.scenarios for f in files),
                           extra=args.pytest_args,
                           mutants=args.max_mutants if args.mutants else None,
                           min_kill_rate=args.min_kill_rate)
    try:
        exit_code = subprocess.run(command, env=os.environ.copy(), check=False).returncode
    except OSError as error:
        raise CliError(f"--gold: the sweep could not start ({command[0]}): {error}",
                       FAILED) from error
    rows = latest_per_cell(iter_rows(out / RESULTS))
    if exit_code == PYTEST_USAGE_ERROR or not rows:
        print(f"wfbench validate: --gold: the gold,noop sweep could not run (pytest exit "
              f"status {exit_code}; its output is above)", file=sys.stderr)
        return FAILED
    verdicts = soundness(files, rows)
    for verdict in verdicts:
        print(f"wfbench validate: {verdict.task}: {verdict.reason}")
    if args.mutants:
        verdicts += _mutation_scores(rows, args.min_kill_rate)
    sound = all(v.sound for v in verdicts) and exit_code == 0
    if exit_code != 0 and all(v.sound for v in verdicts):
        print(f"wfbench validate: --gold: the sweep failed (pytest exit status {exit_code}) "
              "although every task's cells are as they should be: see its output above",
              file=sys.stderr)
    if sound and temporary:
        shutil.rmtree(out, ignore_errors=True)
    else:
        print(f"wfbench validate: the gold,noop sweep's out dir: {out}")
    return OK if sound else CHECK_FAILED


def _mutation_scores(rows: Sequence[dict[str, Any]], min_kill_rate: float) -> list[Soundness]:
    """Each task's kill rate, printed; a task under the minimum is not sound."""
    found = []
    for audit in audit_tasks(rows):
        rate = audit.kill_rate()
        counts = (f"{audit.mutants} mutants: {audit.killed_by_verify} killed by verify, "
                  f"{audit.killed_by_oracle} by the oracle, {len(audit.survivors)} survived")
        if rate is None:
            reason = f"{audit.unmeasured() or 'no mutants'} ({counts})"
        elif rate < min_kill_rate:
            reason = f"under-specified: kill rate {rate:.0%} < {min_kill_rate:.0%} ({counts})"
        else:
            reason = f"kill rate {rate:.0%} ({counts})"
        print(f"wfbench validate: {audit.task}: {reason}")
        found.append(Soundness(audit.task, rate is None or rate >= min_kill_rate, reason))
    return found
