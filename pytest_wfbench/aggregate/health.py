"""An arm's health over its fresh attempts (SPEC §7): whether its figures measure
the arm at all."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_wfbench.aggregate.figures import Row
from pytest_wfbench.aggregate.select import field_is, flag_at, picked, positions_of
from pytest_wfbench.outcomes import ERROR_KINDS, ErrorClass
from pytest_wfbench.table import Table, gather


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
    at = positions_of(positions)
    fresh_rows = field_is(table, "status", positions, "ran") & (flag_at(table, "reused", at) != 1)
    fresh = int(fresh_rows.sum())  # is_fresh
    admissible = int((fresh_rows & (flag_at(table, "counted", at) == 1)).sum())
    kinds = Counter(picked(gather(table.obj("error_kind"), positions), fresh_rows))
    class_of = {kind: None if kind is None else ERROR_KINDS[kind].error_class for kind in kinds}
    failed = {kind: n for kind, n in kinds.items()  # is_failure
              if class_of[kind] not in (None, ErrorClass.VALID_NEGATIVE)}
    failures = sum(failed.values())
    if not fresh:
        status_ = Health.UNKNOWN
    elif failures == fresh:
        status_ = Health.UNUSABLE
    else:
        status_ = Health.DEGRADED if failures else Health.OBSERVED_OK
    reasons: Counter[str] = Counter()
    for kind, n in failed.items():
        reasons[str(kind)] += n
    return ArmHealth(
        status=status_, fresh=fresh, admissible=admissible,
        execution_failures=sum(n for kind, n in kinds.items()
                               if class_of[kind] is ErrorClass.EXECUTION_FAILURE),
        evidence_failures=sum(n for kind, n in kinds.items()
                              if class_of[kind] is ErrorClass.EVIDENCE_FAILURE),
        reasons=dict(sorted(reasons.items())),
    )


def health(rows: Iterable[Row]) -> Health:
    return arm_health(rows).status
