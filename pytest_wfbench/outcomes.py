"""Error kinds and how each one counts (SPEC §5)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class ErrorClass(enum.Enum):
    VALID_NEGATIVE = "valid negative"
    EVIDENCE_FAILURE = "evidence failure"
    EXECUTION_FAILURE = "execution failure"


@dataclass(frozen=True)
class ErrorKind:
    name: str
    error_class: ErrorClass
    counted: bool
    """Whether a row of this kind counts in medians and resolve denominators."""

    @property
    def is_failure(self) -> bool:
        """A failure makes no admissible measurement: pytest reports it as an error."""
        return self.error_class is not ErrorClass.VALID_NEGATIVE


_KINDS = [
    ErrorKind("verify-failed", ErrorClass.VALID_NEGATIVE, True),
    ErrorKind("oracle-failed", ErrorClass.VALID_NEGATIVE, True),
    # A session reached its timeout and was killed: the agent's failure, so a
    # hanging agent never looks better than one that tries and fails.
    ErrorKind("session-timeout", ErrorClass.VALID_NEGATIVE, True),
    # A session (or what it left) went over a limit on processes, memory, file
    # size, disk or files: the arm's failure, the limit named in the row.
    ErrorKind("limit-exceeded", ErrorClass.VALID_NEGATIVE, True),
    # Resolved, but the patch reaches into its judges and the sweep runs with
    # --wfbench-suspicious fail.
    ErrorKind("suspicious", ErrorClass.VALID_NEGATIVE, True),
    # Tool-cost lane: a subject's step returned an unexpected code.
    ErrorKind("step-failed", ErrorClass.VALID_NEGATIVE, True),
    ErrorKind("skill-not-invoked", ErrorClass.EVIDENCE_FAILURE, True),
    ErrorKind("plan-evidence-invalid", ErrorClass.EVIDENCE_FAILURE, True),
    ErrorKind("implementation-evidence-invalid", ErrorClass.EVIDENCE_FAILURE, True),
    # After the session completed, what the arm left made evidence, judging or
    # clean-up impossible (a missing transcript, a tree the harness cannot walk
    # or show), or the session ended its own CLI while the model service answered
    # every request: counted, so an arm can never choose to be excluded.
    ErrorKind("evidence-tampered", ErrorClass.EVIDENCE_FAILURE, True),
    # A review cell's artifact (missing, not JSON, off the schema, a link) or the
    # workspace it must not touch: the reviewing arm's doing, so counted as
    # unresolved, never a way to be excluded from a judged loss.
    ErrorKind("review-evidence-invalid", ErrorClass.EVIDENCE_FAILURE, True),
    ErrorKind("evidence-unverified", ErrorClass.EVIDENCE_FAILURE, False),
    ErrorKind("oracle-unavailable", ErrorClass.EVIDENCE_FAILURE, False),
    ErrorKind("session-error", ErrorClass.EXECUTION_FAILURE, False),
    ErrorKind("infra-error", ErrorClass.EXECUTION_FAILURE, False),
    ErrorKind("cleanup-failure", ErrorClass.EXECUTION_FAILURE, False),
    ErrorKind("cancelled", ErrorClass.EXECUTION_FAILURE, False),
    # An unexpected exception in the harness itself: a bug, shown in red. Counted
    # as unresolved when the session had completed (see :func:`counted`).
    ErrorKind("harness-error", ErrorClass.EXECUTION_FAILURE, False),
]
ERROR_KINDS: dict[str, ErrorKind] = {kind.name: kind for kind in _KINDS}


def counted(error_kind: str | None, session_completed: bool = False) -> bool:
    """Whether a row with this error kind counts in medians and denominators.
    Not even a harness bug may turn a completed session into an excluded run."""
    if error_kind == "harness-error":
        return session_completed
    return error_kind is None or ERROR_KINDS[error_kind].counted


class CellFailure(Exception):
    """Raised by a stage when a cell cannot yield an admissible measurement.

    The stage fixtures raise it; the row records ``kind`` and ``detail`` and
    pytest reports the cell as an error (SPEC §5).
    """

    def __init__(self, kind: str, detail: str) -> None:
        if kind not in ERROR_KINDS or not ERROR_KINDS[kind].is_failure:
            raise ValueError(f"not a failure error kind: {kind!r}")
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class CellVerdict(Exception):
    """Raised by a stage when the arm failed in a way that is its own (a valid
    negative: a session timeout, a limit): the row counts it as unresolved and
    pytest reports the cell as failed, not as an error."""

    def __init__(self, kind: str, detail: str,
                 limit: dict[str, object] | None = None) -> None:
        if kind not in ERROR_KINDS or ERROR_KINDS[kind].is_failure:
            raise ValueError(f"not a valid-negative error kind: {kind!r}")
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.limit = limit
        """For ``limit-exceeded``: which limit, and its value."""


class CellUnresolved(AssertionError):
    """Raised by the cell test when the arm ran but did not resolve the task."""
