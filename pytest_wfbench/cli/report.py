"""``wfbench report DIR``: render an out dir's report files again from its files
alone (:func:`pytest_wfbench.outdir.write_report`, what the sweep itself calls),
so they come out byte for byte as the sweep wrote them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pytest_wfbench.cli.errors import FAILED, OK, USAGE, CliError
from pytest_wfbench.cli.outdirs import read_sweep_dir
from pytest_wfbench.decisions.policy import PolicyError
from pytest_wfbench.outdir import write_report
from pytest_wfbench.redact import Redactor
from pytest_wfbench.store import SWEEP, ResultsStore


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report", help="render an out dir's report.md, report.html and promotion.json again",
        description="Render the report files of the sweep in DIR again from its files "
        "(results.jsonl, sweep.json, environment.json, artifacts/): report.md, report.html "
        "when Jinja2 is installed, and promotion.json when candidate arms ran. They are "
        "what the sweep wrote, byte for byte.",
        epilog="exit status: 0 written; 2 usage error (DIR is not an out dir, or its "
        "promotion settings are not a policy); 3 a file could "
        "not be written or report.html failed to render")
    parser.add_argument("dir", metavar="DIR", type=Path, help="the sweep's out dir")
    parser.add_argument("--baseline-arm", metavar="NAME",
                        help="compute savings against this arm (default: the sweep's own)")
    parser.add_argument("--secret-env", metavar="NAME", action="append", default=[],
                        help="an environment variable whose value is redacted too (as "
                        "--wfbench-secret-env); repeatable")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = read_sweep_dir(args.dir, "DIR")
    store = ResultsStore(out.path, Redactor.from_environment(args.secret_env))
    try:
        report, html = write_report(store, baseline_arm=args.baseline_arm)
    except OSError as error:
        raise CliError(f"DIR {args.dir}: the report cannot be written: {error}",
                       FAILED) from error
    except PolicyError as error:
        raise CliError(f"DIR {args.dir}: {SWEEP}: {error}", USAGE) from None
    for name in report.files:
        print(f"wfbench report: {out.path / name}")
    print(html.line)
    return FAILED if html.failed else OK
