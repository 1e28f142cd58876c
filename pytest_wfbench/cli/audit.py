"""``wfbench audit FILE...``: the first step before a paid sweep. A real sweep of
the ``gold``, ``noop``, ``hack`` (the exploit battery) and ``probes`` arms (and
``mutants`` with ``--mutants``), in a pytest subprocess, then a verdict per
task: sound, harness exploit (a bug in pytest-wfbench), weak oracle (which
probe) or under-specified (its mutants' kill rate). Writes ``audit.md`` in the
sweep's out dir; exit status 0 exactly when every task is sound."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from pytest_wfbench.audit.report import DEFAULT_MIN_KILL_RATE, audit_section, audit_tasks
from pytest_wfbench.cli.errors import CHECK_FAILED, FAILED, OK, CliError
from pytest_wfbench.cli.validate import check_files
from pytest_wfbench.outdir import latest_per_cell
from pytest_wfbench.store import RESULTS, iter_rows

AUDIT = "audit.md"
PYTEST_USAGE_ERROR = 4


def audit_command(files: list[Path], out: Path, *, mutants: bool, min_kill_rate: float,
                  max_mutants: int, extra: list[str]) -> list[str]:
    arms = "gold,noop,hack,probes" + (",mutants" if mutants else "")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               "-k", "not test_scenario", "--wfbench-arms", arms, "--wfbench-out", str(out),
               "--wfbench-min-kill-rate", str(min_kill_rate),
               "--wfbench-max-mutants", str(max_mutants)]
    for path in files:
        command += ["--wfbench-tasks", str(path)]
    return [*command, *extra]


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "audit", help="audit a task suite before paying for it (exploits, weak oracles, "
        "mutation score)",
        description="Run gold, noop, the exploit battery (hack) and the weak-oracle probes "
        "(and the oracle's mutants with --mutants) on the suite, offline, and say of each "
        "task whether it is sound, a harness exploit, a weak oracle or under-specified. "
        "Arguments after '--' go to pytest (e.g. -- -n 2).",
        epilog="exit status: 0 every task sound; 1 a task is not (audit.md says why); 2 "
        "usage error; 3 the sweep could not run")
    parser.add_argument("files", metavar="FILE", type=Path, nargs="+", help="a task file")
    parser.add_argument("--mutants", action="store_true",
                        help="also run the oracle's mutants and judge its kill rate")
    parser.add_argument("--min-kill-rate", type=float, default=DEFAULT_MIN_KILL_RATE,
                        metavar="SHARE", help="below it a task is under-specified (0.6)")
    parser.add_argument("--max-mutants", type=int, default=20, metavar="N",
                        help="mutants per task (20)")
    parser.add_argument("--out", metavar="DIR", type=Path,
                        help="the audit sweep's out dir (default: a new temporary one)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 0.0 <= args.min_kill_rate <= 1.0:
        raise CliError(f"--min-kill-rate must be between 0 and 1, got {args.min_kill_rate}")
    if args.max_mutants < 0:
        raise CliError(f"--max-mutants must be 0 or more, got {args.max_mutants}")
    for path in args.files:
        if not path.is_file():
            raise CliError(f"FILE {path}: no such file")
    _, errors = check_files(args.files, None, 1)
    for error in errors:
        print(f"wfbench audit: {error}", file=sys.stderr)
    if errors:
        return CHECK_FAILED
    out = args.out or Path(tempfile.mkdtemp(prefix="wfbench-audit-")) / "out"
    command = audit_command(args.files, out, mutants=args.mutants,
                            min_kill_rate=args.min_kill_rate, max_mutants=args.max_mutants,
                            extra=args.pytest_args)
    try:
        code = subprocess.run(command, env=os.environ.copy(), check=False).returncode
    except OSError as error:
        raise CliError(f"the audit sweep could not start: {error}", FAILED) from error
    rows = latest_per_cell(iter_rows(out / RESULTS))
    if code == PYTEST_USAGE_ERROR or not rows:
        print(f"wfbench audit: the audit sweep could not run (pytest exit status {code}; its "
              "output is above)", file=sys.stderr)
        return FAILED
    audits = audit_tasks(rows)
    section = audit_section(rows, args.min_kill_rate)
    (out / AUDIT).write_text("# wfbench audit\n\n" + "\n".join(section) + "\n", encoding="utf-8")
    sound = True
    for audit in audits:
        verdicts = audit.verdicts(args.min_kill_rate)
        sound = sound and verdicts == ["sound"]
        rate = audit.kill_rate()
        unmeasured = audit.unmeasured()
        figure = (f", kill rate {rate:.0%}" if rate is not None
                  else f" ({unmeasured})" if unmeasured else "")
        print(f"wfbench audit: {audit.task}: {'; '.join(verdicts)}{figure}")
    print(f"wfbench audit: {out / AUDIT}")
    return OK if sound and code == 0 else CHECK_FAILED
