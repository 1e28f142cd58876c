"""Which cells a sweep runs and which rows it keeps or reuses. Pure: rows and
identities in, decisions out.

- Resume (``--wfbench-resume``): a cell whose admissible row (it ran and counts:
  resolved, a valid negative, or a counted evidence failure) has the cell's
  identity keeps it; every other cell runs (again), with the reason. Counted
  failures are kept, never re-rolled: a resume must not give an arm a second
  chance at its losses.
- Reuse (``--wfbench-reuse DIR``): a comparator arm's cell takes an earlier
  sweep's admissible row of the same identity, younger than the maximum age,
  instead of paying for it again; one cell per reused arm runs anyway (the
  canary), so the arm's health is measured in this sweep.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pytest_wfbench.identity import differences

Row = dict[str, Any]
KEPT = "kept"
REUSED = "reused"


@dataclass(frozen=True)
class Planned:
    """A cell that runs nothing: its row is ``row`` (kept in place, or copied)."""

    mode: str
    row: Row

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "row": self.row}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Planned:
        return cls(str(data["mode"]), dict(data["row"]))


@dataclass
class Plan:
    planned: dict[str, Planned] = field(default_factory=dict)
    """cell_id -> the row it keeps or reuses."""
    reasons: dict[str, str] = field(default_factory=dict)
    """cell_id -> why it runs although a row of it was there."""
    canaries: dict[str, str] = field(default_factory=dict)
    """arm -> the cell paid for anyway, so the reused arm's health is measured."""

    def to_json(self) -> dict[str, Any]:
        return {"planned": {k: v.to_json() for k, v in sorted(self.planned.items())},
                "reasons": dict(sorted(self.reasons.items())),
                "canaries": dict(sorted(self.canaries.items()))}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls({k: Planned.from_json(v) for k, v in data.get("planned", {}).items()},
                   dict(data.get("reasons", {})), dict(data.get("canaries", {})))

    def count(self, mode: str) -> int:
        return sum(1 for planned in self.planned.values() if planned.mode == mode)


def admissible(row: Row) -> bool:
    """A measurement to keep: it ran and counts (SPEC §5)."""
    return row.get("status") == "ran" and bool(row.get("counted"))


def latest_rows(rows: Iterable[Row]) -> dict[str, Row]:
    """The last row of each cell (a cell run again supersedes its earlier row)."""
    latest: dict[str, Row] = {}
    for row in rows:
        latest[str(row["cell_id"])] = row
    return latest


def _why_not(row: Row | None, identity: Mapping[str, Any]) -> str | None:
    """Why ``row`` cannot stand for a cell of ``identity``, or None when it can."""
    if row is None:
        return "no row"
    if row.get("status") != "ran":
        return f"skipped before ({row.get('skip_reason') or 'no reason'})"
    if not row.get("counted"):
        return f"not admissible ({row.get('error_kind')})"
    changed = differences(row.get("identity"), dict(identity))
    if changed:
        return f"identity changed: {', '.join(changed)}"
    return None


def plan_resume(rows: Iterable[Row], identities: Mapping[str, Mapping[str, Any]]) -> Plan:
    """Resume: ``identities`` are the sweep's cells (cell_id -> identity, in order)."""
    plan = Plan()
    latest = latest_rows(rows)
    for cell_id, identity in identities.items():
        row = latest.get(cell_id)
        reason = _why_not(row, identity)
        if reason is None and row is not None:
            plan.planned[cell_id] = Planned(KEPT, row)
        elif row is not None:
            plan.reasons[cell_id] = reason or ""
    return plan


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def plan_reuse(plan: Plan, earlier: Iterable[Row], identities: Mapping[str, Mapping[str, Any]],
               arms: Mapping[str, str], reusable: set[str], *, now: datetime,
               max_age: timedelta, always_run: Mapping[str, str] | None = None) -> Plan:
    """Reuse, on top of a resume plan: ``arms`` maps each cell to its arm, in
    cell order; cells of ``reusable`` arms not already planned take an earlier
    admissible row of their identity younger than ``max_age``, except each
    arm's first such cell, its canary. ``always_run`` (arm -> why it is never
    reused) gives the cells of those arms their reason."""
    latest = latest_rows(earlier)
    for cell_id, identity in identities.items():
        arm = arms[cell_id]
        if cell_id in plan.planned:
            continue
        if always_run and arm in always_run:
            plan.reasons.setdefault(cell_id, f"not reused: {always_run[arm]}")
            continue
        if arm not in reusable:
            continue
        row = latest.get(cell_id)
        reason = _why_not(row, identity)
        recorded = _parse_time(row.get("recorded_at")) if row is not None else None
        if reason is None and (recorded is None or now - recorded > max_age):
            reason = f"older than {max_age.days} days" if recorded else "no recorded time"
        if reason is not None:
            plan.reasons.setdefault(cell_id, f"not reused: {reason}")
            continue
        assert row is not None
        if arm not in plan.canaries:
            plan.canaries[arm] = cell_id
            plan.reasons[cell_id] = "canary: paid for again, so the arm's health is measured"
            continue
        plan.planned[cell_id] = Planned(REUSED, row)
    return plan

