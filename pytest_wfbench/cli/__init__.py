"""The ``wfbench`` command: what comes after a sweep (``report``, ``compare``,
``merge``) and before one (``validate``, ``schema``). Also ``python -m
pytest_wfbench``. Each subcommand has ``--help``; exit codes are in
:mod:`.errors` (0 ok, 1 the command's check failed, 2 usage error, 3 the work
could not be done)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_wfbench import __version__
from pytest_wfbench.cli import audit, compare, merge, report, schema, validate
from pytest_wfbench.cli.errors import CHECK_FAILED, FAILED, OK, USAGE, CliError

__all__ = ["CHECK_FAILED", "FAILED", "OK", "USAGE", "CliError", "build_parser", "main"]

EXIT_CODES = ("exit status: 0 ok; 1 the command's check failed (validate: an invalid file or an "
              "unsound task; merge: refused); 2 usage error; 3 the work could not be done "
              "(a file could not be written, the sweep could not run)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wfbench", description="After a pytest-wfbench sweep (and before one): re-render "
        "a report, compare two sweeps, merge sweeps or shards, validate and audit task files, "
        "print the JSON Schemas.", epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"wfbench {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in (report, compare, merge, validate, audit, schema):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns its exit status (argparse's usage errors too)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # `wfbench validate --gold FILE -- -n 2`: what follows "--" goes to pytest.
    pytest_args: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, pytest_args = args_list[:cut], args_list[cut + 1:]
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else USAGE
    if pytest_args and args.command not in ("validate", "audit"):
        print(f"wfbench {args.command}: arguments after '--' are only for validate --gold "
              "and audit", file=sys.stderr)
        return USAGE
    args.pytest_args = pytest_args
    try:
        code: int = args.run(args)
    except CliError as error:
        print(f"wfbench {args.command}: {error}", file=sys.stderr)
        return error.code
    except BrokenPipeError:
        return OK  # `wfbench compare A B | head`
    return code
