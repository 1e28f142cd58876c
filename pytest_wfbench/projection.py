"""Rows projected to what the report reads of them. Pure.

A row is about 80 fields (2-3 KB of JSON); the aggregation, report.md and the
terminal summary read about 30 of them from most rows, and the whole row only
of the rows they list one by one: excluded runs, skipped cells, suspicious
wins, harness errors, kept workspaces and the tool-cost lanes' rows. So the
report is built from each row's projection, which is the row itself for a
listed row, and otherwise a small dict of the fields below (those the row has,
``None`` left out: every reader of a projected field takes a missing one as
``None``; of ``identity`` the parts the report reads, and ``artifacts`` only for
the audit's rows). Strings that repeat from row to row (task, arm, status, ...)
are shared, not held once per row.

The same rows give the same report whether it is built from rows or from their
projections (tests/test_projection.py checks it); a field read from every row
by a new section of the report must be added here.
"""

from __future__ import annotations

import sys
from typing import Any

from pytest_wfbench.aggregate import USAGE_FIELDS

Row = dict[str, Any]

SHARED = ("sweep_id", "task", "class", "arm", "status", "lane", "error_kind",
          "oracle_judged_by", "model", "effort")
"""String fields whose values repeat from row to row: held once."""
NUMBERS = ("run", "resolved", "counted", "reused", "review_scored", *USAGE_FIELDS,
           "estimated_tokens", "cost_usd", "session_duration_s", "duration_s",
           "harness_overhead_s", "num_turns", "diff_files", "diff_insertions", "diff_deletions")
"""Figures and flags, kept as they are."""
EXTRA_SHARED = ("arm_kind", "overlay_digest", "skills_fingerprint")
SHARED_KEYS = (*SHARED, *EXTRA_SHARED)
FLAGS = ("authored_tests_passed", "oracle_passed")
PROJECTED = ("cell_id", *SHARED, *EXTRA_SHARED, *NUMBERS, *FLAGS, "review", "stage_ms",
             "audit", "artifacts", "identity")
"""Every field the report reads from a row it does not list (the audit's and the
promotion gate's included)."""
IDENTITY_PARTS = ("task", "oracle")
"""What the promotion evidence reads of a row's identity (the task's and the
oracle's digests, per task)."""


def listed(row: Row) -> bool:
    """Whether the report, or the terminal, shows this row on a line of its own
    (then it is kept whole)."""
    return (row.get("status") != "ran" or not row.get("counted")
            or bool(row.get("suspicious")) or row.get("error_kind") == "harness-error"
            or row.get("lane", "agent") != "agent" or bool(row.get("kept_workspace")))


def project(row: Row) -> Row:
    """The row's projection: the row itself when it is listed, else the fields
    of PROJECTED it has (not None)."""
    if listed(row):
        return row
    # Every row of a cold report passes here: the fields are taken by C iterators,
    # then the few that need it are shared or cut down.
    out: Row = {key: value for key, value in zip(PROJECTED, map(row.get, PROJECTED), strict=True)
                if value is not None}
    for key in SHARED_KEYS:
        value = out.get(key)
        if isinstance(value, str):
            out[key] = sys.intern(value)
    identity = out.get("identity")
    if isinstance(identity, dict):
        out["identity"] = {part: sys.intern(digest) if isinstance(digest, str) else digest
                           for part, digest in identity.items() if part in IDENTITY_PARTS}
    if "artifacts" in out and not row.get("audit"):
        del out["artifacts"]  # only the audit lists a row's artifacts (a surviving mutant's)
    stage_ms = out.get("stage_ms")
    if isinstance(stage_ms, dict):
        out["stage_ms"] = _shared_names(stage_ms)
    return out


def _shared_names(stage_ms: dict[Any, Any]) -> dict[Any, Any]:
    """stage_ms with its stage names shared (interned)."""
    try:
        return dict(zip(map(sys.intern, stage_ms), stage_ms.values(), strict=True))
    except TypeError:  # a name that is not a str
        return {sys.intern(name) if isinstance(name, str) else name: ms
                for name, ms in stage_ms.items()}
