"""An arm's health over its fresh attempts (SPEC §7): whether its figures measure
the arm at all."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_wfbench.aggregate.figures import Row
from pytest_wfbench.outcomes import ERROR_KINDS, ErrorClass
from pytest_wfbench.table import Table


class Health(enum.Enum):
    UNKNOWN = "UNKNOWN"
    """No fresh attempt."""
    OBSERVED_OK = "OBSERVED_OK"
    """No fresh attempt failed."""
    DEGRADED = "DEGRADED"
    """Some fresh attempts failed (execution or evidence failures)."""
    UNUSABLE = "UNUSABLE"
    """Every fresh attempt failed, evidence failures included."""


def error_class(row: Row) -> ErrorClass | None:
    kind = row.get("error_kind")
    return None if kind is None else ERROR_KINDS[kind].error_class


def is_failure(row: Row) -> bool:
    """An execution or evidence failure: the run measured nothing trustworthy of
    the arm, whether or not it is counted as unresolved."""
    return error_class(row) not in (None, ErrorClass.VALID_NEGATIVE)


def is_fresh(row: Row) -> bool:
    """An attempt made in this sweep: it ran, and its row was not reused."""
    return row.get("status") == "ran" and not row.get("reused")


@dataclass(frozen=True)
class ArmHealth:
    """An arm's health and the counters it is decided from."""

    status: Health
    fresh: int = 0
    admissible: int = 0
    """Fresh attempts counted in medians and denominators."""
    execution_failures: int = 0
    evidence_failures: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    """The error kinds of the failed fresh attempts, with their counts."""

    @property
    def failures(self) -> int:
        return self.execution_failures + self.evidence_failures

    def describe(self) -> str:
        """One line: how many fresh attempts failed, and why."""
        if not self.fresh:
            return "no fresh attempt"
        if not self.failures:
            return f"{self.fresh} fresh attempts, none failed"
        why = ", ".join(f"{kind} x{n}" for kind, n in self.reasons.items())
        return f"{self.failures} of {self.fresh} fresh attempts failed: {why}"


def arm_health(rows: Iterable[Row]) -> ArmHealth:
    """Health over an arm's fresh attempts: UNKNOWN with none, UNUSABLE when every
    one is a failure of any kind (a counted evidence failure such as
    skill-not-invoked included: the arm did not do what it is), DEGRADED when some
    are, OBSERVED_OK otherwise."""
    table = Table.of(rows)
    return arm_health_at(table, table.positions)


def arm_health_at(table: Table, positions: Sequence[int]) -> ArmHealth:
    """:func:`arm_health` of these rows of the table."""
    status, reused, counted = table.obj("status"), table.flag("reused"), table.flag("counted")
    error_kind = table.obj("error_kind")
    fresh = [i for i in positions if status[i] == "ran" and reused[i] != 1]  # is_fresh
    kinds = [error_kind[i] for i in fresh]
    class_of = {kind: ERROR_KINDS[kind].error_class for kind in set(kinds) if kind is not None}
    classes = [None if kind is None else class_of[kind] for kind in kinds]  # error_class
    failed = [kind for kind, error in zip(kinds, classes, strict=True)  # is_failure
              if error not in (None, ErrorClass.VALID_NEGATIVE)]
    if not fresh:
        status_ = Health.UNKNOWN
    elif len(failed) == len(fresh):
        status_ = Health.UNUSABLE
    else:
        status_ = Health.DEGRADED if failed else Health.OBSERVED_OK
    return ArmHealth(
        status=status_, fresh=len(fresh),
        admissible=sum(1 for i in fresh if counted[i] == 1),
        execution_failures=classes.count(ErrorClass.EXECUTION_FAILURE),
        evidence_failures=classes.count(ErrorClass.EVIDENCE_FAILURE),
        reasons=dict(sorted(Counter(str(kind) for kind in failed).items())),
    )


def health(rows: Iterable[Row]) -> Health:
    return arm_health(rows).status
