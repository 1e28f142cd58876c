"""The oracle's result reporter: a pytest plugin that writes every test result,
the run's mode and its end, one authenticated JSON line each, into a pipe the
harness drains (no file the oracle could write to).

The harness passes an oracle only on what this reports: each expected test
reported as passed, by a real run (not a collection) that reached its end.
The channel is made hard to forge from the code under test, which runs in the
same process: ``sitecustomize`` loads this file at start-up under a random
module name, with a key it read from a descriptor and closed before any other
code ran (a pipe, emptied by that read); every record carries an HMAC with
that key and a sequence number,
and the harness drops any line that does not verify. The key and the
descriptor live only in the closures :func:`open_channel` makes.

Test ids are written relative to the workspace, or to the oracle folder as
``$WFBENCH_ORACLE_DIR/...``, so they do not depend on where either is mounted.
No import of pytest here: the module is loaded before pytest is.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import json.encoder
import os
import types
from collections.abc import Callable
from typing import Any

_ROOT = os.environ.get("WFBENCH_JUDGE_WORKSPACE", "/workspace")
_ORACLE = os.environ.get("WFBENCH_ORACLE_DIR")


def record_mac(key: bytes, run: str, seq: int, payload: str) -> str:
    return hmac.new(key, f"{run}:{seq}:{payload}".encode(), hashlib.sha256).hexdigest()


# The functions the channel uses, taken now, before any code under test runs:
# replacing ``os.write``, ``json.dumps`` or ``hmac.new`` later (from code the
# tests import) changes nothing here.
_WRITE = os.write
_ENCODE_STRING = json.encoder.encode_basestring_ascii
try:
    from _hashlib import hmac_digest as _HMAC_DIGEST

    def _mac(key: bytes, message: bytes) -> str:
        return str(_HMAC_DIGEST(key, message, "sha256").hex())
except ImportError:  # pragma: no cover - CPython without OpenSSL
    _HMAC = hmac.digest

    def _mac(key: bytes, message: bytes) -> str:
        return _HMAC(key, message, "sha256").hex()


def _serialize(value: Any) -> str:
    """JSON of a record (strings, numbers, booleans, None, lists, dicts), sorted
    keys, with no function the code under test could have replaced."""
    if value is None or value is True or value is False:
        return {None: "null", True: "true", False: "false"}[value]
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is str:
        return str(_ENCODE_STRING(value))
    if type(value) is list:
        return "[" + ", ".join(_serialize(item) for item in value) + "]"
    if type(value) is dict:
        return "{" + ", ".join(f"{_serialize(str(key))}: {_serialize(value[key])}"
                               for key in sorted(value)) + "}"
    return str(_ENCODE_STRING(str(value)))


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


def _writer(key: bytes, fd: int) -> Callable[[dict[str, Any]], None]:
    run = os.urandom(8).hex()
    seq = [0]

    def write(record: dict[str, Any]) -> None:
        payload = _serialize(record)
        mac = _mac(key, f"{run}:{seq[0]}:{payload}".encode())
        line = _serialize({"run": run, "seq": seq[0], "record": payload, "mac": mac}) + "\n"
        seq[0] += 1
        _WRITE(fd, line.encode())

    return write


def open_channel(module: types.ModuleType, key: bytes | None, fd: int | None) -> None:
    """Give ``module`` (this file, loaded under a random name) its pytest hooks.
    Without a key (a process the oracle's pytest started, e.g. an xdist
    worker) they report nothing."""
    write = _writer(key, fd) if key and fd is not None else None
    state: dict[str, Any] = {}

    def emit(record: dict[str, Any]) -> None:
        if write is not None and state.get("reporting"):
            write(record)

    def report_id(report: Any) -> str:
        # A report's location is relative to the rootdir, under xdist as well.
        location = getattr(report, "location", None)
        file = os.path.join(state["rootdir"], location[0]) if location else ""
        return outcome_id(file, report.nodeid)

    def pytest_configure(config: Any) -> None:
        # Under xdist the controller sees every worker's reports; workers stay quiet.
        state["reporting"] = not hasattr(config, "workerinput")
        state["rootdir"] = str(config.rootpath)
        emit({"event": "start", "collectonly": bool(config.option.collectonly)})

    def pytest_collection_finish(session: Any) -> None:
        emit({"event": "collected",
              "ids": [outcome_id(str(item.path), item.nodeid) for item in session.items]})

    def pytest_collectreport(report: Any) -> None:
        if report.failed:
            emit({"event": "collect-error", "id": report.nodeid})

    def pytest_runtest_logreport(report: Any) -> None:
        emit({"id": report_id(report), "when": report.when, "outcome": report.outcome,
              "xfail": hasattr(report, "wasxfail")})

    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        emit({"event": "finish", "exitstatus": int(exitstatus)})

    for hook in (pytest_configure, pytest_collection_finish, pytest_collectreport,
                 pytest_runtest_logreport, pytest_sessionfinish):
        setattr(module, hook.__name__, hook)
