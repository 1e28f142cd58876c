"""A pytest plugin the harness loads into its oracle (``-p wfbench_outcomes``):
every test result, the run's mode and its end, one JSON line each, into the
file $WFBENCH_JUDGE_OUTCOMES names, which lies outside the workspace.

The harness passes an oracle only on what this reports: each expected test
reported as passed, a real run (not a collection) that reached its end. An
early ``os._exit(0)``, ``--collect-only``, a deselection or an empty run
leaves a record that does not pass. Test ids are written relative to the
workspace, or to the oracle folder as ``$WFBENCH_ORACLE_DIR/...``, so they do
not depend on where either is mounted.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

_PATH = os.environ.get("WFBENCH_JUDGE_OUTCOMES")
_ROOT = os.environ.get("WFBENCH_JUDGE_WORKSPACE", "/workspace")
_ORACLE = os.environ.get("WFBENCH_ORACLE_DIR")
_STATE: dict[str, Any] = {}


def _write(record: dict[str, Any]) -> None:
    if _PATH and _STATE.get("reporting"):
        with open(_PATH, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")


def outcome_id(path: str, nodeid: str) -> str:
    """A test's id from its file's absolute path and its node id, independent of
    the rootdir and of where the workspace and the oracle folder are mounted."""
    _, separator, rest = nodeid.partition("::")
    absolute = os.path.normpath(path)
    if _ORACLE and (absolute == _ORACLE or absolute.startswith(_ORACLE + os.sep)):
        name = "$WFBENCH_ORACLE_DIR/" + os.path.relpath(absolute, _ORACLE)
    elif absolute.startswith(_ROOT + os.sep):
        name = os.path.relpath(absolute, _ROOT)
    else:
        name = absolute
    return name + separator + rest


def _report_id(report: Any) -> str:
    # A report's location is relative to the rootdir, under xdist as well.
    path = os.path.join(_STATE["rootdir"], report.location[0]) if report.location else ""
    return outcome_id(path, report.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Under xdist the controller sees every worker's reports; workers stay quiet.
    _STATE["reporting"] = not hasattr(config, "workerinput")
    _STATE["rootdir"] = str(config.rootpath)
    _write({"event": "start", "collectonly": bool(config.option.collectonly)})


def pytest_collection_finish(session: pytest.Session) -> None:
    _write({"event": "collected",
            "ids": [outcome_id(str(item.path), item.nodeid) for item in session.items]})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        _write({"event": "collect-error", "id": report.nodeid})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _write({"id": _report_id(report), "when": report.when,
            "outcome": report.outcome, "xfail": hasattr(report, "wasxfail")})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _write({"event": "finish", "exitstatus": int(exitstatus)})
