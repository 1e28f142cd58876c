"""Every row a sweep writes validates against the shipped rows schema: the
check the autouse ``row_audit`` fixture (tests/conftest.py) runs after every test
that has a ``pytester`` or ``tmp_path`` folder, on each out dir a sweep wrote
there (a folder with a sweep.json: every sweep's controller writes one before
any cell runs; files a test makes by hand without one are not a sweep's)."""

from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

ROW_FILES = ("results.jsonl", "superseded.jsonl")
MAX_DEPTH = 6
"""Out dirs sit a few folders below a test's folder; workspaces kept by a test
can be thousands deep and are not searched past this."""


def row_schema() -> dict[str, Any]:
    text = resources.files("pytest_wfbench").joinpath("row.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


VALIDATOR = Draft202012Validator(row_schema())


@dataclass
class RowCheck:
    """What one check found: out dirs, rows validated, lines that are not rows
    (torn by a killed process: the store skips them too), and errors."""

    out_dirs: list[Path] = field(default_factory=list)
    rows: int = 0
    torn: int = 0
    errors: list[str] = field(default_factory=list)


def out_dirs_under(root: Path) -> list[Path]:
    """Folders below ``root`` (links not followed) that hold a sweep.json."""
    found, queue = [], deque([(root, 0)])
    while queue:
        folder, depth = queue.popleft()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        names = {entry.name for entry in entries}
        if "sweep.json" in names:
            found.append(Path(folder))
        if depth < MAX_DEPTH:
            queue.extend((Path(entry.path), depth + 1) for entry in entries
                         if entry.is_dir(follow_symlinks=False))
    return sorted(found)


def check_rows(root: Path) -> RowCheck:
    """Validate every row of every out dir under ``root``."""
    check = RowCheck()
    for out_dir in out_dirs_under(root):
        check.out_dirs.append(out_dir)
        for name in ROW_FILES:
            path = out_dir / name
            if not path.is_file():
                continue
            for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    check.torn += 1
                    continue
                check.rows += 1
                where = f"{path}:{number} ({row.get('cell_id') if isinstance(row, dict) else row})"
                check.errors += [f"{where}: {error.json_path}: {error.message}"
                                 for error in VALIDATOR.iter_errors(row)]
    return check


class RowAudit:
    """The folders of one test whose sweeps' rows are validated after it."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots

    def check(self) -> RowCheck:
        total = RowCheck()
        for root in self.roots:
            found = check_rows(root)
            total.out_dirs += found.out_dirs
            total.rows += found.rows
            total.torn += found.torn
            total.errors += found.errors
        return total
