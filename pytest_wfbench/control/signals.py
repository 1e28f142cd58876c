"""SIGTERM and SIGHUP behave like Ctrl-C, in every process of a sweep, and a
second signal never cuts the clean-up short.

- A process running cells (serial, or an xdist worker) raises
  KeyboardInterrupt on the first signal: the running session's process tree is
  killed (:meth:`Sandbox.run` kills its process group whatever ends it), the
  cell's row says ``cancelled``, pytest stops. Later signals are noted and
  ignored while the rows, the report and the clean-up are written.
- The xdist controller forwards the signal to its workers (they register their
  pids in the work dir; a worker that gets a signal first tells the controller,
  so a signal anywhere cancels the whole sweep) and keeps receiving their
  events: each worker finishes with its cancelled row, xdist stops as for a
  worker's Ctrl-C, and the controller writes the unrun cells' rows and the
  report, then removes the work dir. If workers do not finish within a grace
  period, the controller stops anyway (xdist then ends them).
- Every process marks the sweep stopped (:mod:`.stop`), so no cell starts
  after the signal anywhere.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WORKERS = "workers"
GRACE_S = 120.0


CONTROLLER = "controller.pid"


def register_controller(work_dir: Path) -> None:
    """The controller says where a worker that got a signal tells the sweep."""
    (work_dir / CONTROLLER).write_text(str(os.getpid()))


def register_worker(work_dir: Path) -> None:
    """A worker says where signals reach it."""
    folder = work_dir / WORKERS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(os.getpid())).write_text("")


def controller_pid(work_dir: Path) -> int | None:
    try:
        pid = int((work_dir / CONTROLLER).read_text())
    except (OSError, ValueError):
        return None
    return pid if pid != os.getpid() else None


def worker_pids(work_dir: Path) -> list[int]:
    folder = work_dir / WORKERS
    try:
        return [int(entry.name) for entry in folder.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


class Cancellation:
    """The signal handlers of one process of a sweep. ``forwards``: the xdist
    controller (it hands the signal to its workers instead of stopping);
    ``on_cancel`` is called once, with the signal's name, before anything else."""

    def __init__(self, work_dir: Path, *, forwards: bool,
                 on_cancel: Callable[[str], object]) -> None:
        self.work_dir = work_dir
        self.forwards = forwards
        self.on_cancel = on_cancel
        self.signal_name: str | None = None
        self._force = False
        self._previous: dict[int, Any] = {}
        self._handled: list[signal.Signals] = []

    def install(self) -> None:
        """Take over the cancel signals a parent did not ask us to ignore."""
        for number in CANCEL_SIGNALS:
            current = signal.getsignal(number)
            if current is signal.SIG_IGN:
                continue
            self._previous[number] = current
            signal.signal(number, self._handle)
            self._handled.append(signal.Signals(number))

    def uninstall(self) -> None:
        for number, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(number, previous)
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self._force:
            self._force = False
            raise KeyboardInterrupt
        name = signal.Signals(number).name
        if self.signal_name is not None:
            self._say(f"wfbench: {name} again: still writing the rows and the report of the "
                      "cells that ran (nothing is lost by waiting)")
            return
        self.signal_name = name
        self.on_cancel(name)
        if not self.forwards:
            # A worker's signal cancels the whole sweep: the controller hands it on
            # to the other workers (and this one ignores it then).
            pid = controller_pid(self.work_dir)
            if pid is not None and pid == os.getppid():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            raise KeyboardInterrupt
        self._say(f"wfbench: {name}: stopping; every worker finishes its running cell's row")
        for pid in worker_pids(self.work_dir):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        timer = threading.Timer(GRACE_S, self._stop_anyway)
        timer.daemon = True
        timer.start()

    def _stop_anyway(self) -> None:
        """The workers did not finish in time: stop the controller's loop."""
        if self._handled:
            self._force = True
            _thread.interrupt_main(self._handled[0])

    @staticmethod
    def _say(line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"\n{line}\n")
            sys.stderr.flush()
