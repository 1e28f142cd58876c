"""``wfbench schema tasks|rows``: the JSON Schemas that ship in the package."""

from __future__ import annotations

import argparse
from importlib import resources
from typing import Any

from pytest_wfbench.cli.errors import OK

SCHEMAS = {"tasks": "task-file.schema.json", "rows": "row.schema.json"}


def schema_text(name: str) -> str:
    """The schema's text, as shipped (``tasks``: task files; ``rows``: results.jsonl)."""
    return resources.files("pytest_wfbench").joinpath(SCHEMAS[name]).read_text(encoding="utf-8")


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "schema", help="print the JSON Schema of task files or of rows",
        description="Print a JSON Schema (draft 2020-12) that ships with pytest-wfbench: "
        "'tasks' for task files (for editors), 'rows' for the rows of results.jsonl "
        "(docs/rows.md documents every field).",
        epilog="exit status: 0 printed; 2 usage error")
    parser.add_argument("name", choices=sorted(SCHEMAS), help="which schema")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    text = schema_text(args.name)
    print(text, end="" if text.endswith("\n") else "\n")
    return OK
