"""The out dir: rows appended to ``results.jsonl`` under a file lock by the
process that ran the cell, at once, and artifacts beside them (SPEC §6)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Container, Iterable, Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_wfbench.linelog import CellDigests, log_lines, logged_lines, rewrite_log, state_of
from pytest_wfbench.redact import Redactor
from pytest_wfbench.rowcache import CachedRows, line_ids, line_key

RESULTS = "results.jsonl"
SUPERSEDED = "superseded.jsonl"
"""Rows a cell's later row replaced (a resumed sweep ran it again): kept, not lost."""
SWEEP = "sweep.json"
"""The sweep's own record: its id, its options, its sessions and their outcome."""
SWEEP_RECORD_VERSION = 1
# A session's state in the sweep record.
COMPLETE = "complete"
CANCELLED = "cancelled"
ABORTED = "aborted"
RUNNING = "running"
BUDGET = "budget"
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
        self._cached = CachedRows(out_dir)

    def prepare(self) -> None:
        (self.out_dir / ARTIFACTS).mkdir(parents=True, exist_ok=True)

    def append(self, row: dict[str, Any]) -> None:
        self.append_many([row])

    def append_many(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        redacted = [self.redactor.data(row) for row in rows]
        lines = [json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")
                 for row in redacted]
        data = b"".join(line + b"\n" for line in lines)
        with self._lock:
            fd = os.open(self.results, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                before = state_of(os.fstat(fd))
                size = before[0]
                # A process killed mid-write left a torn line: end it, so the
                # next row does not join it and get lost with it.
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
                after = state_of(os.fstat(fd))
            finally:
                os.close(fd)
            # What lets a sweep's end and its report skip reading the file: linelog.py.
            log_lines(self.out_dir, lines, [(row.get("cell_id"), row.get("sweep_id"))
                                            for row in redacted], before, after)
            self._cached.add(lines)  # the report's cache: see rowcache.py

    def flush_cache(self) -> None:
        """This process writes no more rows (its session ends): the rows still
        waiting for their batch go to the report's cache now (a process that
        wrote none, or none since its last batch, does not take the lock)."""
        if not self._cached.waiting:
            return
        with self._lock:
            self._cached.flush()

    def compact(self) -> int:
        """Keep only the last row of each cell in results.jsonl; earlier rows (a
        cell run again), torn lines and rows without a cell id go to
        superseded.jsonl, and blank lines go. Returns the results file's size
        after: rows past it are new. When the file's line log says that every
        line is another cell's row, the file is not read."""
        with self._lock:
            if not self.results.exists():
                return 0
            logged = logged_lines(self.out_dir, self.results)
            if logged is not None and logged.one_row_a_cell():
                return self.results.stat().st_size
            size = self.results.stat().st_size
            lines = [line for line in result_lines(self.results) if line.strip()]
            last: dict[str, int] = {}
            # The cells of the lines the report's cache knows are read from it:
            # parsing 100,000 rows would cost a sweep's end seconds.
            ids = line_ids(self.out_dir, lines)
            for index, (cell, _) in enumerate(ids):
                if cell is not None:
                    last[str(cell)] = index
            keep = sorted(last.values())
            kept = [lines[index] for index in keep]
            kept_at = set(keep)
            superseded = [line for index, line in enumerate(lines) if index not in kept_at]
            if superseded:
                with (self.out_dir / SUPERSEDED).open("ab") as out:
                    out.write(b"".join(line + b"\n" for line in superseded))
                    out.flush()
                    os.fsync(out.fileno())
            if superseded or sum(len(line) + 1 for line in kept) != size:  # or blank lines
                temporary = self.results.with_name(f".{RESULTS}.compact")
                with temporary.open("wb") as out:
                    out.write(b"".join(line + b"\n" for line in kept))
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, self.results)
            # The file as it is now, whatever its log said (a crash, an old out dir).
            rewrite_log(self.out_dir, map(line_key, kept), map(len, kept),
                        [ids[index] for index in keep], state_of(self.results.stat()))
            return self.results.stat().st_size

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

    def write_pieces(self, name: str, pieces: Iterable[str]) -> Path:
        """:meth:`write_text` of the pieces' text, written as the pieces come
        (redacted as the whole text would be: Redactor.clean_stream) to a new
        file that replaces ``name`` once it is whole: an error on the way (it
        is raised) leaves the old file, and no part of the new one."""
        path = self.out_dir / name
        temporary = path.with_name(f".{name}.{os.getpid()}.new")
        with contextlib.suppress(OSError):
            temporary.unlink()  # a leftover of a killed process
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
            with open(fd, "w", encoding="utf-8") as out:
                for part in self.redactor.clean_stream(pieces):
                    out.write(part)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise
        return path


def result_lines(path: Path, offset: int = 0) -> Iterator[bytes]:
    """A results file's lines from ``offset``, read in chunks. Lines end at
    "\n" only: str.splitlines() also splits at U+2028 and other separators an
    arm's text could carry, and would lose the row."""
    if not path.exists():
        return
    with path.open("rb") as stream:
        stream.seek(offset)
        pending = b""
        while chunk := stream.read(1 << 20):
            lines = chunk.split(b"\n")
            lines[0] = pending + lines[0]  # not pending + chunk: a copy of every chunk
            pending = lines.pop()
            yield from lines
        if pending:
            yield pending


def iter_rows(path: Path, sweep_id: str | None = None,
              offset: int = 0) -> Iterator[dict[str, Any]]:
    """Rows of a results file (optionally of one sweep, from a byte offset), one
    at a time. A torn line (a process killed mid-write) is skipped, not fatal."""
    for line in result_lines(path, offset):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(row, dict) and (sweep_id is None or row.get("sweep_id") == sweep_id):
            yield row


def read_rows(path: Path, sweep_id: str | None = None) -> list[dict[str, Any]]:
    """Rows of a results file, optionally of one sweep (see :func:`iter_rows`)."""
    return list(iter_rows(path, sweep_id))


def cells_with_rows(out_dir: Path, sweep_id: str, offset: int = 0) -> Container[str]:
    """The cells with a row of this sweep from ``offset`` on: from the results
    file's line log when it describes the file (the file is not read), else
    :func:`recorded_cell_ids`."""
    results = out_dir / RESULTS
    logged = logged_lines(out_dir, results)
    if logged is None:
        return recorded_cell_ids(results, sweep_id, offset)
    return logged.recorded(sweep_id, offset)


def cells_without_rows(out_dir: Path, sweep_id: str, cell_ids: Iterable[str],
                       offset: int = 0) -> list[str]:
    """Of these cells, in their order, those without a row of this sweep from
    ``offset`` on (:func:`cells_with_rows`, asked of all of them at once)."""
    recorded = cells_with_rows(out_dir, sweep_id, offset)
    if isinstance(recorded, CellDigests):
        return recorded.missing(cell_ids)
    return [cell for cell in cell_ids if cell not in recorded]


CELL_ID_IN_LINE = re.compile(rb'"cell_id": "([^"\\]+)"')


def recorded_cell_ids(path: Path, sweep_id: str, offset: int = 0) -> set[str]:
    """Cells that have a row of this sweep (from ``offset``: this session's),
    counting lines that do not parse (a process killed mid-write): such a cell
    is never given a second row."""
    recorded: set[str] = set()
    for line in result_lines(path, offset):
        if sweep_id.encode() in line:
            recorded.update(match.decode("utf-8", "replace")
                            for match in CELL_ID_IN_LINE.findall(line))
    return recorded


def read_sweep_record(out_dir: Path) -> dict[str, Any] | None:
    path = out_dir / SWEEP
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_sweep_record(store: ResultsStore, record: dict[str, Any]) -> None:
    """sweep.json, replaced whole (never half-written)."""
    path = store.out_dir / SWEEP
    temporary = path.with_name(f".{SWEEP}.new")
    temporary.write_text(store.redactor.clean(json.dumps(record, indent=2, sort_keys=True)),
                         encoding="utf-8")
    os.replace(temporary, path)


def read_environment(store: ResultsStore) -> dict[str, Any] | None:
    path = store.out_dir / ENVIRONMENT
    return json.loads(path.read_text()) if path.exists() else None


def sweep_state(record: dict[str, Any]) -> str:
    """The state of a sweep's last session (sweep.json), complete when none ran."""
    sessions = record.get("sessions") or []
    return str(sessions[-1].get("state", RUNNING)) if sessions else COMPLETE
