"""What ``wfbench merge`` makes of its inputs: the merged sweep's id, rows and
record, or a refusal. Pure: the inputs' records and rows in, a plan out; the
command (:mod:`.merge`) reads and writes the files.

Rules (README, "After the sweep"):

- The merged sweep's id: ``--sweep-id`` when given; else the inputs' id when
  they all have the same one (the shards of one sweep); else
  ``merged-<16 hex>``, a digest of the inputs' sorted ids, so merging the same
  sweeps again gives the same id. A row measured in another sweep keeps that
  sweep's id in ``merged_from``.
- A cell in more than one input is refused when its rows' identities differ
  (the error names the cell, the inputs and the differing parts). Rows of the
  same identity are one cell measured twice: identical rows are taken once;
  otherwise the row kept is chosen as resume keeps rows, never by outcome: a
  row that ran and counts wins over one that did not count, which wins over a
  skip; among equals the earliest recorded, then the first given. The others go
  to superseded.jsonl.
- Inputs that are shards (their sweep.json has ``shard``) must agree, per sweep
  id, on the shard count and the assignment of tasks to shards (they ran the
  same task files and options), hold rows of their own tasks only, and be
  complete: a missing shard is refused unless ``--allow-missing-shards``, and
  then the merged sweep's state is ``incomplete``, naming the missing tasks.
- The merged state is the worst of the inputs' (complete, stopped at the budget,
  cancelled, aborted, running); the record keeps every input's sessions, then
  one session of the merge itself, and ``merged_from`` lists the inputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_wfbench.aggregate import row_order
from pytest_wfbench.identity import differences
from pytest_wfbench.outdir import state_reason
from pytest_wfbench.store import (
    ABORTED,
    BUDGET,
    CANCELLED,
    COMPLETE,
    RUNNING,
    SWEEP_RECORD_VERSION,
    sweep_state,
)

Row = dict[str, Any]
INCOMPLETE = "incomplete"
SEVERITY = (COMPLETE, BUDGET, CANCELLED, ABORTED, RUNNING, INCOMPLETE)
SHOWN_CONFLICTS = 10
DIGEST_CHARS = 12


class MergeError(Exception):
    """The inputs cannot be merged into one sweep (the message says why and where)."""


@dataclass(frozen=True)
class MergeInput:
    label: str
    """The out dir as the user gave it (named in messages and in merged_from)."""
    record: dict[str, Any]
    rows: list[Row]
    """Each cell's last row of the input's sweep."""

    @property
    def sweep_id(self) -> str | None:
        value = self.record.get("sweep_id")
        return value if isinstance(value, str) else None

    @property
    def shard(self) -> dict[str, Any] | None:
        shard = self.record.get("shard")
        return shard if isinstance(shard, dict) and shard.get("label") else None


@dataclass(frozen=True)
class Overlap:
    """A cell found in more than one input, and which row was kept."""

    cell_id: str
    kept: str
    dropped: list[str]
    identical: bool

    @property
    def note(self) -> str:
        if self.identical:
            return f"identical rows in {', '.join([self.kept, *self.dropped])}: taken once"
        return (f"kept the row of {self.kept} (as resume would: a counted row first, then the "
                f"earliest recorded); the row of {', '.join(self.dropped)} went to "
                "superseded.jsonl")


@dataclass
class MergePlan:
    sweep_id: str
    rows: list[tuple[int, Row]]
    """(input index, row as written), in (task, arm, run) order."""
    dropped: list[Row]
    overlaps: list[Overlap]
    state: str
    reason: str | None
    record: dict[str, Any] = field(default_factory=dict)


def merged_sweep_id(inputs: Sequence[MergeInput], given: str | None = None) -> str:
    if given is not None:
        return given
    ids = sorted({i.sweep_id or "" for i in inputs})
    if len(ids) == 1 and ids[0]:
        return ids[0]
    return "merged-" + hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = "n/a" if value is None else str(value)
    return text[:DIGEST_CHARS] if len(text) >= 40 else text


def _identity_conflict(cell_id: str, first: tuple[MergeInput, Row],
                       other: tuple[MergeInput, Row]) -> str | None:
    (a, row_a), (b, row_b) = first, other
    parts = differences(row_a.get("identity"), row_b.get("identity") or {})
    if not parts:
        return None
    old = row_a.get("identity") if isinstance(row_a.get("identity"), dict) else {}
    new = row_b.get("identity") if isinstance(row_b.get("identity"), dict) else {}
    assert isinstance(old, dict) and isinstance(new, dict)
    detail = ", ".join(f"{part} ({_short(old.get(part))} vs {_short(new.get(part))})"
                       for part in parts)
    return f"cell {cell_id}: {a.label} and {b.label} measured it with different identities: "\
           f"{detail}"


def _rank(candidate: tuple[int, Row]) -> tuple[int, str, int]:
    index, row = candidate
    standing = 0 if row.get("status") == "ran" and row.get("counted") else (
        1 if row.get("status") == "ran" else 2)
    recorded = row.get("recorded_at")
    return standing, recorded if isinstance(recorded, str) else "~", index


def _check_shards(inputs: Sequence[MergeInput], allow_missing: bool) -> list[str]:
    """Shard inputs are the shards of one sweep each: checked; returns what is
    missing (for the state), or raises."""
    by_sweep: dict[str, list[MergeInput]] = {}
    for item in inputs:
        if item.shard is not None:
            by_sweep.setdefault(item.sweep_id or "", []).append(item)
    missing_notes = []
    for sweep_id, shards in by_sweep.items():
        first, first_shard = shards[0], shards[0].shard or {}
        count, assignment = first_shard.get("count"), first_shard.get("assignment") or {}
        for other in shards[1:]:
            shard = other.shard or {}
            if shard.get("count") != count or (shard.get("assignment") or {}) != assignment:
                raise MergeError(
                    f"{first.label} and {other.label} are shards of sweep {sweep_id} that split "
                    f"it differently (shards {first_shard.get('label')} and "
                    f"{shard.get('label')}: other shard counts, task files or options): they "
                    "are not parts of one sweep")
        for item in shards:
            index = (item.shard or {}).get("index")
            strays = sorted({str(r.get("task")) for r in item.rows
                             if assignment.get(str(r.get("task"))) != index})
            if strays:
                raise MergeError(f"{item.label} is shard {(item.shard or {}).get('label')} of "
                                 f"sweep {sweep_id} but has rows of tasks another shard runs: "
                                 f"{', '.join(strays)}")
        present = {(item.shard or {}).get("index") for item in shards}
        absent = [i for i in range(1, int(count or 0) + 1) if i not in present]
        if not absent:
            continue
        tasks = sorted(task for task, i in assignment.items() if i in absent)
        note = (f"shard{'s' if len(absent) > 1 else ''} "
                f"{', '.join(f'{i}/{count}' for i in absent)} of sweep {sweep_id} "
                f"missing; {'their' if len(absent) > 1 else 'its'} tasks have no rows: "
                f"{', '.join(tasks)}")
        if not allow_missing:
            raise MergeError(f"{note}. Merge every shard (run the missing ones again with the "
                             "same --wfbench-sweep-id), or pass --allow-missing-shards for a "
                             "partial sweep")
        missing_notes.append(note)
    return missing_notes


def _merge_settings(inputs: Sequence[MergeInput], baseline_arm: str | None) -> dict[str, Any]:
    values: dict[str, list[Any]] = {}
    for item in inputs:
        for key, value in (item.record.get("settings") or {}).items():
            values.setdefault(key, [])
            if value not in values[key]:
                values[key].append(value)
    merged: dict[str, Any] = {}
    for key, found in values.items():
        if len(found) == 1:
            merged[key] = found[0]
        elif key == "arms":
            arms = [arm for value in found if value for arm in value]
            merged[key] = list(dict.fromkeys(arms)) or None
        elif key == "baseline_arm" and baseline_arm is None:
            raise MergeError(f"the inputs compare against different baseline arms "
                             f"({', '.join(map(str, found))}): choose one with --baseline-arm")
        else:
            merged[key] = found
    if baseline_arm is not None:
        merged["baseline_arm"] = baseline_arm
    return merged


def _state(inputs: Sequence[MergeInput], missing: list[str]) -> tuple[str, str | None]:
    worst, notes = COMPLETE, []
    for item in inputs:
        state = sweep_state(item.record)
        if state == COMPLETE:
            continue
        if SEVERITY.index(state if state in SEVERITY else RUNNING) > SEVERITY.index(worst):
            worst = state if state in SEVERITY else RUNNING
        notes.append(f"{item.label}: {state_reason(item.record) or state}")
    if missing:
        worst = INCOMPLETE
        notes = [f"partial evidence: {note}" for note in missing] + notes
    return worst, "; ".join(notes) or None


def _distinct(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(v for v in values if v is not None))


def plan_merge(inputs: Sequence[MergeInput], *, now: str, sweep_id: str | None = None,
               baseline_arm: str | None = None, allow_missing_shards: bool = False) -> MergePlan:
    """Merge ``inputs`` (in the order given) into one sweep, or raise MergeError."""
    if not inputs:
        raise MergeError("nothing to merge: give at least one out dir")
    missing = _check_shards(inputs, allow_missing_shards)
    merged_id = merged_sweep_id(inputs, sweep_id)
    candidates: dict[str, list[tuple[int, Row]]] = {}
    for index, item in enumerate(inputs):
        for row in item.rows:
            candidates.setdefault(str(row.get("cell_id")), []).append((index, row))
    conflicts = []
    for cell_id, found in candidates.items():
        first = found[0]
        for other in found[1:]:
            conflict = _identity_conflict(cell_id, (inputs[first[0]], first[1]),
                                          (inputs[other[0]], other[1]))
            if conflict:
                conflicts.append(conflict)
    if conflicts:
        shown = conflicts[:SHOWN_CONFLICTS]
        more = len(conflicts) - len(shown)
        raise MergeError("refused: " + "; ".join(shown)
                         + (f"; and {more} more cells" if more else ""))
    kept: list[tuple[int, Row]] = []
    dropped: list[Row] = []
    overlaps: list[Overlap] = []
    for cell_id, found in candidates.items():
        winner = min(found, key=_rank)
        kept.append(winner)
        others = [c for c in found if c is not winner]
        if not others:
            continue
        identical = all(row == winner[1] for _, row in others)
        if not identical:
            dropped += [row for _, row in others]
        overlaps.append(Overlap(cell_id, inputs[winner[0]].label,
                                [inputs[i].label for i, _ in others], identical))
    rows = []
    for index, row in sorted(kept, key=lambda c: row_order(c[1])):
        if row.get("sweep_id") != merged_id:
            row = {**row, "merged_from": row.get("merged_from") or row.get("sweep_id"),
                   "sweep_id": merged_id}
        rows.append((index, row))
    state, reason = _state(inputs, missing)
    return MergePlan(sweep_id=merged_id, rows=rows, dropped=dropped, overlaps=overlaps,
                     state=state, reason=reason,
                     record=_record(inputs, merged_id, state, reason, overlaps, now,
                                    _merge_settings(inputs, baseline_arm)))


def _record(inputs: Sequence[MergeInput], merged_id: str, state: str, reason: str | None,
            overlaps: list[Overlap], now: str, settings: dict[str, Any]) -> dict[str, Any]:
    task_files: list[dict[str, Any]] = []
    for item in inputs:
        for entry in item.record.get("task_files") or []:
            if entry not in task_files:
                task_files.append(entry)
    sessions = [{**session, "source": item.label}
                for item in inputs for session in item.record.get("sessions") or []]
    sessions.append({"kind": "merge", "started_at": now, "finished_at": now, "state": state,
                     "reason": reason, "inputs": [item.label for item in inputs],
                     "overlaps": {o.cell_id: o.note for o in overlaps}})
    suites = _distinct([item.record.get("suite") for item in inputs])
    versions = _distinct([item.record.get("harness_version") for item in inputs])
    return {
        "schema_version": SWEEP_RECORD_VERSION, "sweep_id": merged_id,
        "suite": "+".join(map(str, suites)) or None,
        "harness_version": ", ".join(map(str, versions)) or None,
        "task_files": task_files, "settings": settings, "shard": None, "sessions": sessions,
        "merged_from": [{"dir": item.label, "sweep_id": item.sweep_id,
                         "shard": (item.shard or {}).get("label"),
                         "state": sweep_state(item.record), "rows": len(item.rows)}
                        for item in inputs],
    }
