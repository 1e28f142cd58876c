"""The out dir: rows appended to ``results.jsonl`` under a file lock by the
process that ran the cell, at once, and artifacts beside them (SPEC §6)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_wfbench.redact import Redactor

RESULTS = "results.jsonl"
REPORT = "report.md"
ARTIFACTS = "artifacts"
ENVIRONMENT = "environment.json"


class OutDirError(Exception):
    """The out dir cannot take this sweep (a usage error)."""


def guard_out_dir(out_dir: Path | None, *, resume: bool) -> None:
    """An out dir holds one sweep: rows already there are continued only with
    --wfbench-resume, never silently appended to."""
    if out_dir is None:
        if resume:
            raise OutDirError("--wfbench-resume needs --wfbench-out DIR: the out dir of the "
                              "sweep to continue")
        return
    results = out_dir / RESULTS
    holds_rows = results.is_file() and results.stat().st_size > 0
    if resume and not holds_rows:
        raise OutDirError(f"--wfbench-resume: {out_dir} holds no rows of a sweep to continue "
                          f"(no {RESULTS}); drop --wfbench-resume to start a sweep there")
    if holds_rows and not resume:
        raise OutDirError(f"--wfbench-out {out_dir} already holds the rows of a sweep: continue "
                          "it with --wfbench-resume, or give another directory")


class ResultsStore:
    """Appends redacted rows and artifacts; safe across xdist workers."""

    def __init__(self, out_dir: Path, redactor: Redactor) -> None:
        self.out_dir = out_dir
        self.redactor = redactor
        self.results = out_dir / RESULTS
        self._lock = FileLock(str(out_dir / f".{RESULTS}.lock"))

    def prepare(self) -> None:
        (self.out_dir / ARTIFACTS).mkdir(parents=True, exist_ok=True)

    def append(self, row: dict[str, Any]) -> None:
        self.append_many([row])

    def append_many(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        data = "".join(json.dumps(self.redactor.data(row), sort_keys=True, ensure_ascii=False)
                       + "\n" for row in rows).encode("utf-8")
        with self._lock:
            fd = os.open(self.results, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                # A process killed mid-write left a torn line: end it, so the
                # next row does not join it and get lost with it.
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)

    def write_artifact(self, name: str, content: bytes | str) -> str:
        """Write a redacted artifact; returns its name relative to the out dir.
        Artifacts keep the arm's bytes otherwise (a patch must still apply)."""
        text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        path = self.out_dir / ARTIFACTS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.redactor.text(text), encoding="utf-8")
        return f"{ARTIFACTS}/{name}"

    def write_text(self, name: str, text: str) -> Path:
        """A report or record for people to read: redacted and neutralized."""
        path = self.out_dir / name
        path.write_text(self.redactor.clean(text), encoding="utf-8")
        return path


def read_rows(path: Path, sweep_id: str | None = None) -> list[dict[str, Any]]:
    """Rows of a results file, optionally of one sweep. A torn last line (a
    process killed mid-write) is skipped, not fatal."""
    if not path.exists():
        return []
    rows = []
    # Lines end at "\n" only: str.splitlines() also splits at U+2028 and other
    # separators an arm's text could carry, and would lose the row.
    for line in path.read_bytes().split(b"\n"):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(row, dict) and (sweep_id is None or row.get("sweep_id") == sweep_id):
            rows.append(row)
    return rows


CELL_ID_IN_LINE = re.compile(rb'"cell_id": "([^"\\]+)"')


def recorded_cell_ids(path: Path, sweep_id: str) -> set[str]:
    """Cells that have a row of this sweep, counting lines that do not parse (a
    process killed mid-write): such a cell is never given a second row."""
    recorded = {str(row["cell_id"]) for row in read_rows(path, sweep_id)}
    if path.exists():
        for line in path.read_bytes().split(b"\n"):
            if sweep_id.encode() in line:
                recorded.update(match.decode("utf-8", "replace")
                                for match in CELL_ID_IN_LINE.findall(line))
    return recorded


def read_environment(store: ResultsStore) -> dict[str, Any] | None:
    path = store.out_dir / ENVIRONMENT
    return json.loads(path.read_text()) if path.exists() else None
