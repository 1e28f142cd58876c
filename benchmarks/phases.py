"""A pytest plugin the benchmark loads into every measured run
(``-p benchmarks.phases``): it timestamps the session's phases so the wall time
can be split into start-up, configure (where pytest-wfbench loads the task
files and runs its sandbox preflight), collection, the run loop and session
finish (where it writes the rows of unrun cells and the report).

It writes the timestamps (``time.time()``, seconds since the epoch) as JSON to
the file named by ``$WFBENCH_BENCH_PHASES``, from the controller only. It
does nothing when that variable is unset.
"""

from __future__ import annotations

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

_marks: dict[str, float] = {}


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


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    _mark("sessionfinish")
    try:
        yield
    finally:
        _mark("sessionfinish_end")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _mark("unconfigure")
    target = os.environ.get(ENV_OUT)
    if not target or hasattr(config, "workerinput"):
        return
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
