"""Live progress: which cells are running, in which stage, for how long.

Every process of a sweep writes its running cell's stage into the work dir
(``status/<worker>.json``, replaced whole at each change); the controller reads
them every few seconds, writes the out dir's ``status.json`` for dashboards, and
shows the running cells in the terminal: a line every few seconds on a
terminal, one line per change otherwise (a CI log is not flooded).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUS = "status"
STATUS_JSON = "status.json"
POLL_S = 2.0
TTY_REFRESH_S = 6.0


def _replace(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.new")
    temporary.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


@dataclass
class StageReporter:
    """One process's side: what its running cell is doing now."""

    work_dir: Path
    worker: str
    cell_id: str | None = None
    cell_started: float = 0.0

    def _path(self) -> Path:
        return self.work_dir / STATUS / f"{self.worker}.json"

    def stage(self, cell_id: str, stage: str) -> None:
        with contextlib.suppress(OSError):
            if cell_id != self.cell_id:
                self.cell_id, self.cell_started = cell_id, time.time()
            self._path().parent.mkdir(parents=True, exist_ok=True)
            _replace(self._path(), {"cell": cell_id, "stage": stage, "worker": self.worker,
                                    "cell_started": self.cell_started,
                                    "stage_started": time.time()})

    def done(self, cell_id: str) -> None:
        with contextlib.suppress(OSError):
            if self.cell_id == cell_id:
                self.cell_id = None
                self._path().unlink(missing_ok=True)


def running(work_dir: Path) -> list[dict[str, Any]]:
    """Every process's running cell, by worker."""
    found = []
    with contextlib.suppress(OSError):
        for path in sorted((work_dir / STATUS).glob("*.json")):
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("cell"):
                    found.append(data)
    return found


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def describe(cells: list[dict[str, Any]], now: float) -> str:
    parts = [f"{c['cell']} [{c['worker']}] {c['stage']} {duration(now - c['stage_started'])}"
             f" (cell {duration(now - c['cell_started'])})" for c in cells]
    return "wfbench running: " + "; ".join(parts)


@dataclass
class Tally:
    """What the controller learned from finished cells' reports."""

    total: int = 0
    finished: int = 0
    spend: dict[str, dict[str, float]] = field(default_factory=dict)
    """arm -> tokens, cost_usd (cost where measured)."""

    def add(self, arm: str, tokens: float, cost: float | None) -> None:
        self.finished += 1
        entry = self.spend.setdefault(arm, {"tokens": 0.0, "cost_usd": 0.0})
        entry["tokens"] += tokens
        if cost is not None:
            entry["cost_usd"] += cost


class ProgressMonitor:
    """The controller's side: a thread that polls the processes' stages."""

    def __init__(self, work_dir: Path, out_dir: Path, tally: Tally,
                 write_line: Callable[[str], None], *, tty: bool) -> None:
        self.work_dir = work_dir
        self.out_dir = out_dir
        self.tally = tally
        self.write_line = write_line
        self.tty = tty
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wfbench-progress", daemon=True)
        self._shown: tuple[tuple[str, str], ...] = ()
        self._shown_at = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.poll(show=False)

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()

    def poll(self, show: bool = True) -> None:
        now = time.time()
        cells = running(self.work_dir)
        with contextlib.suppress(OSError, ValueError):
            _replace(self.out_dir / STATUS_JSON, {
                "updated_at": now, "running": cells, "finished": self.tally.finished,
                "total": self.tally.total, "spend": self.tally.spend})
        key = tuple((c["cell"], c["stage"]) for c in cells)
        changed = key != self._shown
        due = self.tty and cells and now - self._shown_at >= TTY_REFRESH_S
        if show and cells and (changed or due):
            with contextlib.suppress(Exception):  # never let the display stop a sweep
                self.write_line(describe(cells, now))
            self._shown_at = now
        self._shown = key
