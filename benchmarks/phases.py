"""A pytest plugin the benchmark loads into every measured run
(``-p benchmarks.phases``): it timestamps the session's phases so the wall time
can be split into start-up, configure (where pytest-wfbench loads the task
files and runs its sandbox preflight), collection, the run loop and session
finish (where it writes the rows of unrun cells and the report).

It writes the timestamps (``time.time()``, seconds since the epoch) as JSON to
the file named by ``$WFBENCH_BENCH_PHASES``, from the controller only. It
does nothing when that variable is unset.

A session end that stalls is caught in the act: from sessionfinish on, every
process (the controller until it unconfigures, each xdist worker until it
exits) has ``faulthandler`` dump all its threads' stacks every STALL_DUMP_S
seconds into ``<phases file>.stall-<who>.txt`` after a one-line header. A
controller's file with more than its header is a stall (:func:`stalls`),
and the workers' last dumps say where they were.
"""

from __future__ import annotations

import faulthandler
import json
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

ENV_OUT = "WFBENCH_BENCH_PHASES"
ENV_T0 = "WFBENCH_BENCH_T0"
"""When the benchmark started the process (set by :mod:`benchmarks.runner`)."""

STALL_DUMP_S = 2.0
DUMP_MARK = "Timeout ("
"""How faulthandler starts each dump it writes on a timer."""

_marks: dict[str, float] = {}
_stall: list[tuple[Path, Any]] = []


def _mark(name: str) -> None:
    _marks.setdefault(name, time.time())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _mark("configure")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _mark("sessionstart")


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    _mark("collection")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _mark("collection_finish")


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    _mark("runtestloop")
    try:
        return (yield)
    finally:
        _mark("runtestloop_end")


def _who(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput.get("workerid", "worker")) if workerinput else "controller"


def _watch_for_stall(config: pytest.Config) -> None:
    target = os.environ.get(ENV_OUT)
    if not target or _stall:
        return
    path = Path(f"{target}.stall-{_who(config)}.txt")
    stream = path.open("w", encoding="utf-8")
    stream.write(f"{_who(config)} (pid {os.getpid()}): sessionfinish at {time.time():.3f}, "
                 f"stacks every {STALL_DUMP_S:g} s until it unconfigures or exits\n")
    stream.flush()
    faulthandler.dump_traceback_later(STALL_DUMP_S, repeat=True, file=stream)
    _stall.append((path, stream))


def _stall_over() -> None:
    if not _stall:
        return
    faulthandler.cancel_dump_traceback_later()
    _stall.pop()[1].close()


def stalls(marks_file: Path) -> dict[str, str]:
    """Who was where when the controller's session end stalled: the controller's
    first stack dump and each worker's last (a worker that finished early
    waits, dumping, for the others: its dumps alone are no stall); empty when
    the controller's session end took less than STALL_DUMP_S."""
    def read(who: str) -> tuple[str, str]:
        path = marks_file.with_name(f"{marks_file.name}.stall-{who}.txt")
        try:
            header, _, dumps = path.read_text(encoding="utf-8", errors="replace").partition("\n")
        except OSError:
            return "", ""
        return header, dumps

    header, dumps = read("controller")
    if not dumps.strip():
        return {}
    found = {"controller": f"{header}\n{dumps[:4000]}"}
    for path in sorted(marks_file.parent.glob(f"{marks_file.name}.stall-gw*.txt")):
        who = path.name.rpartition(".stall-")[2].removesuffix(".txt")
        header, dumps = read(who)
        last = dumps[dumps.rfind(DUMP_MARK):] if DUMP_MARK in dumps else ""
        found[who] = f"{header}\n{last[:4000]}" if last else f"{header}\n(no dump)"
    return found


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    _mark("sessionfinish")
    _watch_for_stall(session.config)
    try:
        yield
    finally:
        _mark("sessionfinish_end")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _mark("unconfigure")
    target = os.environ.get(ENV_OUT)
    if not target or hasattr(config, "workerinput"):
        return  # a worker's dumps go on until it exits: its stall may come later
    _stall_over()
    marks: dict[str, Any] = dict(_marks)
    t0 = os.environ.get(ENV_T0)
    if t0:
        marks["start"] = float(t0)
    Path(target).write_text(json.dumps(marks), encoding="utf-8")


def durations(marks: dict[str, float], end: float | None = None) -> dict[str, float | None]:
    """Phase lengths in seconds from the timestamps (None when a phase did not
    happen); ``end`` is when the benchmark saw the process exit."""

    def span(a: str, b: str) -> float | None:
        return marks[b] - marks[a] if a in marks and b in marks else None

    exit_s = end - marks["unconfigure"] if end is not None and "unconfigure" in marks else None
    return {
        "startup_s": span("start", "configure"),
        "configure_s": span("configure", "sessionstart"),
        "collection_s": span("collection", "collection_finish"),
        "run_s": span("runtestloop", "runtestloop_end"),
        "sessionfinish_s": span("sessionfinish", "sessionfinish_end"),
        "exit_s": exit_s,
    }
