"""The sweep's stop mark: once a signal, the outage breaker or the cost budget
stops a sweep, no cell starts anywhere (every process checks it before a cell
begins), and the cells that did not run say why in their skip rows."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# A stop's kind is the state the sweep record gives the session it stopped.
from pytest_wfbench.store import ABORTED as ABORTED
from pytest_wfbench.store import BUDGET as BUDGET
from pytest_wfbench.store import CANCELLED as CANCELLED

STOP = "stop.json"


@dataclass(frozen=True)
class Stop:
    kind: str
    """``cancelled`` (a signal), ``aborted`` (the outage breaker) or ``budget``."""
    reason: str
    at: str | None = None
    """When the sweep was stopped (UTC, milliseconds)."""

    @property
    def skip_reason(self) -> str:
        return f"not run: {self.reason}"


def request_stop(work_dir: Path, kind: str, reason: str) -> Stop:
    """Mark the sweep stopped; the first mark wins (returned)."""
    path = work_dir / STOP
    at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    data = json.dumps({"kind": kind, "reason": reason, "at": at}).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return stop_of(work_dir) or Stop(kind, reason, at)
    except OSError:
        return Stop(kind, reason, at)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return Stop(kind, reason, at)


def stop_of(work_dir: Path) -> Stop | None:
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        data = json.loads((work_dir / STOP).read_text(encoding="utf-8"))
        return Stop(str(data["kind"]), str(data["reason"]), data.get("at"))
    return None
