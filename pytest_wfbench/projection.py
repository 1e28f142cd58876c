"""Rows projected to what the report reads of them. Pure.

A row is about 80 fields (2-3 KB of JSON); the aggregation, report.md and the
terminal summary read about 30 of them from most rows, and the whole row only
of the rows they list one by one: excluded runs, skipped cells, suspicious
wins, harness errors, kept workspaces and the tool-cost lanes' rows. A row's
projection is the row itself for a listed row, and otherwise a small dict of
the fields below (those the row has, ``None`` left out: every reader of a
projected field takes a missing one as ``None``; of ``identity`` the parts the
report reads, and ``artifacts`` only for the audit's rows).

The report holds the projected fields as columns (:mod:`pytest_wfbench.table`,
which keeps the projections of the listed, audit and review rows as they are)
and makes a row's projection again only for the readers of rows; a field read
from every row by a new section of the report must be added here and there
(tests/test_table.py checks that the table gives back each projection).
"""

from __future__ import annotations

import sys
from typing import Any

from pytest_wfbench.fields import USAGE_FIELDS

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
INTERNED = frozenset(SHARED_KEYS)
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
    out: Row = {}
    for key in PROJECTED:
        value = row.get(key)
        if value is None:
            continue
        if key in INTERNED and isinstance(value, str):
            value = sys.intern(value)
        elif key == "identity" and isinstance(value, dict):
            value = {part: sys.intern(digest) if isinstance(digest, str) else digest
                     for part, digest in value.items() if part in IDENTITY_PARTS}
        elif key == "artifacts" and not row.get("audit"):
            continue  # only the audit lists a row's artifacts (a surviving mutant's)
        elif key == "stage_ms" and isinstance(value, dict):
            value = {sys.intern(name) if isinstance(name, str) else name: ms
                     for name, ms in value.items()}
        out[key] = value
    return out
