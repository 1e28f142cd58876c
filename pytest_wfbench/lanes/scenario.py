"""What every driver's scenarios share: the oracle's shape, the remote
transports, the evidence of the agent task, and the rules that judge a
publication fault. The drivers (:mod:`.git`, :mod:`.hg`) gather the facts; the
rules here only read them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_wfbench.lanes.fault import FaultFixture
from pytest_wfbench.lanes.steps import StepRecorder
from pytest_wfbench.tasks import ScenarioSpec, SubjectSpec

LOCAL_FILE = "local_file"
LOOPBACK_FAULT = "loopback_fault_fixture"
# The remote transport each scenario uses, also for the rows of cells that did not run.
TRANSPORTS = {"task_loop": LOCAL_FILE, "agent_task_baseline": LOCAL_FILE,
              "interrupted_publication": LOOPBACK_FAULT, "publication_replay": LOOPBACK_FAULT}
CI_UNMEASURED = ("hosted CI observation cannot be measured on a local_file remote: nothing "
                 "runs CI for it")
OS_CACHE_UNKNOWN = ("the harness neither drops nor measures the OS page cache: the remote "
                    "and the clone were written moments before, so their files are likely "
                    "cached, but nothing here knows")
NETWORK_BYTES_NULL = ("a local_file remote is read and written through the file system: "
                      "there is no network traffic to count")
# publication_replay's two runs of the same push, in this order.
REPLAY_VARIANTS = (("no_keepalive", False), ("keepalive", True))

Oracle = dict[str, Any]
Scenario = Callable[[SubjectSpec, ScenarioSpec, StepRecorder, Path, dict[str, Any]], Oracle]


def oracle(checks: list[tuple[bool, str]]) -> Oracle:
    return {"passed": all(ok for ok, _ in checks),
            "checks": [{"passed": ok, "detail": detail} for ok, detail in checks]}


def payload_check(found: str | None, where: str, path: str, payload: str) -> tuple[bool, str]:
    """``found``: the file's content on the remote's branch or bookmark, None if absent."""
    if found is None:
        return False, f"{path} is not on {where} in the remote"
    if found != payload:
        return False, f"{path} on {where} holds other content"
    return True, f"{path} is on {where}"


def disk_usage(path: Path) -> int:
    """Bytes of the regular files under a workspace (links not followed)."""
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink() and p.is_file())


def acquisition(warm_model: str) -> dict[str, Any]:
    """The agent task's two ways to get a workspace, and what each starts from."""
    return {
        "acquisition": {
            "cold": {"model": "fresh_clone", "cache_state": "no_shared_store"},
            "warm": {"model": warm_model, "cache_state": "shared_store"},
        },
        "os_cache_state": "unknown", "os_cache_state_reason": OS_CACHE_UNKNOWN,
        "network_bytes": None, "network_bytes_reason": NETWORK_BYTES_NULL,
    }


@dataclass(frozen=True)
class Publication:
    """The facts of one push to the fault fixture, gathered by a driver."""

    returncode: int
    fixture: FaultFixture
    head_before: str
    head_after: str
    needs_push: bool
    """The client still marks the work as not on the remote (git: no tracking
    ref at the new head; Mercurial: the changeset is still draft)."""
    working_tree_dirty: bool

    @property
    def outcome(self) -> str:
        """What the client may conclude: it got no answer to a request that arrived."""
        if self.returncode == 0:
            return "success"
        return "unknown" if self.fixture.mutation_requests_received else "failed"

    @property
    def publication_outcome(self) -> str:
        """What happened on the wire: ``unknown`` when a complete push arrived."""
        return "unknown" if self.fixture.mutation_requests_received else "not_sent"

    @property
    def mutation_requests_sent(self) -> int:
        """Every mutation request the client started, complete or not."""
        return sum(1 for r in self.fixture.requests if r["mutation"])

    def evidence(self) -> dict[str, Any]:
        fixture = self.fixture
        return {
            "outcome": self.outcome, "publication_outcome": self.publication_outcome,
            "requests_observed": len(fixture.requests),
            "mutation_requests": fixture.mutations_delivered,
            "mutation_requests_sent": self.mutation_requests_sent,
            "request_bytes": fixture.request_bytes,
            "network_request_bytes_observed": fixture.network_request_bytes,
            "head_preserved": self.head_after == self.head_before,
            "work_marked_unpushed": self.needs_push,
            "working_tree_dirty_after": self.working_tree_dirty,
            "keepalive": fixture.keepalive,
        }


def interrupted_checks(publication: Publication,
                       reconciled: tuple[bool, str]) -> list[tuple[bool, str]]:
    """The pass rule: outcome unknown, exactly one mutation, no blind replay,
    local head kept, work still marked as needing a push, a reconcile that succeeds."""
    outcome, mutations = publication.outcome, publication.fixture.mutations_delivered
    kept = publication.head_after == publication.head_before
    return [
        (outcome == "unknown", f"the client's outcome is {outcome!r} (it must be 'unknown': "
                               "the request arrived and no answer came back)"),
        (mutations == 1, f"{mutations} mutation request(s) reached the remote (exactly one: "
                         "no blind replay)"),
        (kept, "local head unchanged" if kept else "local head moved"),
        (publication.needs_push, "local work still marked as needing a push"
         if publication.needs_push else "local work marked as pushed"),
        reconciled,
    ]


def replay_evidence(publications: dict[str, Publication]) -> dict[str, Any]:
    """publication_replay's row: per variant, how many mutation requests the
    subject sent, and how many of them were blind replays (a measurement)."""
    return {
        "blind_replay_requests": {name: max(p.mutation_requests_sent - 1, 0)
                                  for name, p in publications.items()},
        "mutation_requests_sent": {name: p.mutation_requests_sent
                                   for name, p in publications.items()},
        "variants": {name: p.evidence() for name, p in publications.items()},
    }


def replay_checks(publications: dict[str, Publication]) -> list[tuple[bool, str]]:
    """A replay is reported, not failed; the measurement only needs the fault to
    have happened (a complete push arrived) and the client not to claim success."""
    checks = []
    for name, publication in publications.items():
        arrived = publication.fixture.mutation_requests_received > 0
        checks.append((arrived, f"{name}: a complete push arrived" if arrived
                       else f"{name}: no complete push arrived (the fault was not exercised)"))
        claimed = publication.returncode == 0
        checks.append((not claimed, f"{name}: the client claimed success without an answer"
                       if claimed else f"{name}: the client did not claim success"))
    return checks
