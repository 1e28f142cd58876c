"""Expected-test accounting: an oracle passes on observed test results, not on
an exit status alone (SPEC §3, step 7).

The oracle's tests are known before any arm is judged: declared in the task
file (``oracle.expect``), or established once per sweep by running the
oracle on the gold patch (the tests it reports as passed), or, without a gold
patch, by collecting it on the base. The judge's own plugin reports every
result through a file outside the workspace; :func:`judge_outcomes` passes
the oracle only when each expected test was reported as passed by a run
that really ran and reached its end. Pure functions; no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

EXIT_CODE = "exit-code"


@dataclass(frozen=True)
class Expectation:
    """How a task's oracle is judged."""

    judged_by: str
    """``tests`` (each expected test must be reported as passed) or ``exit-code``."""
    tests: frozenset[str] = frozenset()
    source: str = "declared"
    """``declared`` (the task file), ``gold`` (the tests the gold patch passes) or
    ``base collection`` (collected on the base, for a task without a gold patch)."""

    def to_json(self) -> dict[str, Any]:
        return {"judged_by": self.judged_by, "tests": sorted(self.tests), "source": self.source}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Expectation:
        return cls(str(data["judged_by"]), frozenset(data["tests"]), str(data["source"]))


@dataclass
class Outcomes:
    """What the judge's plugin reported, run by run."""

    starts: int = 0
    finishes: int = 0
    collect_only: bool = False
    exitstatuses: list[int] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)
    collect_errors: list[str] = field(default_factory=list)
    phases: dict[str, list[tuple[str, str, bool]]] = field(
        default_factory=lambda: defaultdict(list))
    """Test id -> (phase, outcome, was an xfail) for every report."""
    rejected: int = 0
    """Lines that were not the reporter's (no valid HMAC): dropped."""

    def passed(self) -> set[str]:
        """Tests that went through setup, call and teardown, whose call passed
        (not as an unexpected xfail pass) and of which no phase failed."""
        passed = set()
        for test, reports in self.phases.items():
            calls = [(outcome, xfail) for when, outcome, xfail in reports if when == "call"]
            whens = {when for when, _, _ in reports}
            if calls and all(outcome == "passed" and not xfail for outcome, xfail in calls) \
                    and {"setup", "teardown"} <= whens \
                    and not any(outcome == "failed" for _, outcome, _ in reports):
                passed.add(test)
        return passed


def parse_outcomes(text: str, key: bytes) -> Outcomes:
    """The reporter's records that carry a valid HMAC with ``key``, run by run;
    any other line is dropped (and counted). A run whose sequence has a gap
    lost records: its end is not believed."""
    outcomes = Outcomes()
    runs: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            envelope = json.loads(line)
            run, seq, payload = str(envelope["run"]), int(envelope["seq"]), envelope["record"]
            valid = isinstance(payload, str) and hmac.compare_digest(
                str(envelope["mac"]), record_mac(key, run, seq, payload))
            record = json.loads(payload) if valid else None
        except (ValueError, KeyError, TypeError):
            record = None
        if isinstance(record, dict):
            runs[run].append((seq, record))
        else:
            outcomes.rejected += 1
    for records in runs.values():
        records.sort(key=lambda item: item[0])
        complete = [seq for seq, _ in records] == list(range(len(records)))
        for _, record in records:
            _add(outcomes, record, complete)
    return outcomes


def _add(outcomes: Outcomes, record: dict[str, Any], complete: bool) -> None:
    event = record.get("event")
    if event == "start":
        outcomes.starts += 1
        outcomes.collect_only |= bool(record.get("collectonly"))
    elif event == "finish" and complete:
        outcomes.finishes += 1
        status = record.get("exitstatus")
        outcomes.exitstatuses.append(status if isinstance(status, int) else -1)
    elif event == "collected" and isinstance(record.get("ids"), list):
        outcomes.collected += [str(test) for test in record["ids"]]
    elif event == "collect-error":
        outcomes.collect_errors.append(str(record.get("id")))
    elif isinstance(record.get("id"), str):
        outcomes.phases[record["id"]].append(
            (str(record.get("when")), str(record.get("outcome")), bool(record.get("xfail"))))


def record_mac(key: bytes, run: str, seq: int, payload: str) -> str:
    """As the reporter (judge/site/wfbench_outcomes.py) signs a record."""
    return hmac.new(key, f"{run}:{seq}:{payload}".encode(), hashlib.sha256).hexdigest()


def judge_outcomes(outcomes: Outcomes, expectation: Expectation,
                   exit_ok: bool) -> tuple[bool, str]:
    """(passed, why) for one oracle run. ``why`` holds counts only: the oracle's
    output and test names can reveal hidden content."""
    if not exit_ok:
        return False, "the hidden oracle failed (its output is not kept)"
    if expectation.judged_by == EXIT_CODE:
        return True, "judged by exit code alone (oracle.expect: exit-code)"
    if outcomes.starts == 0:
        return False, ("the oracle reported no test run (its pytest did not load the "
                       "harness's reporting plugin, or did not run)")
    if outcomes.collect_only:
        return False, "the oracle only collected its tests (--collect-only) and ran none"
    if outcomes.finishes < outcomes.starts:
        return False, "the oracle's test run ended before it finished (an early process exit)"
    if any(status != 0 for status in outcomes.exitstatuses):
        return False, "the oracle's test run reported a failing exit status"
    missing = expectation.tests - outcomes.passed()
    if missing:
        return False, (f"{len(missing)} of the oracle's {len(expectation.tests)} expected tests "
                       "were not reported as passed (failed, skipped, deselected or not run)")
    return True, f"all {len(expectation.tests)} expected tests passed"


def expectation_from_run(outcomes: Outcomes, exit_ok: bool, source: str) -> Expectation:
    """The tests a calibration run established; raises ValueError when it
    establishes none (the reason says what to fix in the task)."""
    if outcomes.starts == 0:
        raise ValueError("the oracle reported no pytest run: if it is not a pytest command, "
                         "declare 'oracle.expect: exit-code' in the task")
    if source == "gold":
        if not exit_ok or outcomes.finishes < outcomes.starts:
            raise ValueError("the oracle does not pass on the task's gold patch")
        tests = outcomes.passed()
    else:
        if outcomes.collect_errors:
            raise ValueError("the oracle's tests do not collect on the base (no gold patch to "
                             "apply): add a gold patch or declare 'oracle.expect: [test ids]'")
        tests = set(outcomes.collected)
    if not tests:
        raise ValueError(f"the oracle ran no test ({source}): declare 'oracle.expect'")
    return Expectation("tests", frozenset(tests), source)
