"""What a table holds of a row, and which rows it keeps whole. Pure.

A report reads about 40 fields of most rows, all of them scalars, and every field
only of the rows it lists one by one. So the table holds the scalars of every
row in columns: strings as shared references, flags as one byte, numbers as
float64 (integers are exact in a float64 up to 2**53), stage times one column per
stage. The rows the report lists (excluded runs, skipped cells, suspicious wins,
harness errors, kept workspaces, the tool-cost lanes), the audit's and the
review's rows (their ``audit`` and ``review`` are nested data), and any row
whose fields do not fit a column (a number that is not one, a flag that is not
a boolean) are also kept as their projection (:mod:`pytest_wfbench.projection`):
whole for the listed ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_wfbench.fields import USAGE_FIELDS
from pytest_wfbench.projection import IDENTITY_PARTS, listed

Row = dict[str, Any]

OBJECTS = ("cell_id", "sweep_id", "task", "class", "arm", "status", "lane", "error_kind",
           "oracle_judged_by", "model", "effort", "arm_kind", "overlay_digest",
           "skills_fingerprint")
"""Fields held as they are (strings, shared from row to row but for cell_id)."""
FLAGS = ("resolved", "counted", "reused", "review_scored", "authored_tests_passed",
         "oracle_passed")
"""Booleans (or null), held as one byte each: NO_FLAG, 0 or 1."""
NUMBERS = ("run", *USAGE_FIELDS, "estimated_tokens", "cost_usd", "session_duration_s",
           "duration_s", "harness_overhead_s", "num_turns", "diff_files", "diff_insertions",
           "diff_deletions")
"""Numbers (or null), held as float64: NaN for null."""
INTEGERS = frozenset(("run", *USAGE_FIELDS, "estimated_tokens", "num_turns", "diff_files",
                      "diff_insertions", "diff_deletions"))
"""The numbers a row holds as integers: a row made again from the table has them
as ints (a float64 holds every JSON integer a row has exactly)."""
IDENTITY = IDENTITY_PARTS
"""The parts of ``identity`` held (the task's and the oracle's digests)."""
NO_FLAG = -1
NAN = math.nan


def flag_code(value: Any) -> int | None:
    """A flag's byte, or None when the value is not a boolean or null."""
    if value is None:
        return NO_FLAG
    if value is True:
        return 1
    if value is False:
        return 0
    return None


def is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and (
        type(value) is int or math.isfinite(value))


def _fits(row: Row) -> bool:
    """Whether every held field of the row fits its column."""
    get = row.get
    for name in FLAGS:
        value = get(name)
        if value is not None and value is not True and value is not False:
            return False
    for name in NUMBERS:
        value = get(name)
        if value is not None and not is_number(value):
            return False
    stage_ms = get("stage_ms")
    if stage_ms is not None:
        if not isinstance(stage_ms, dict):
            return False
        for name, ms in stage_ms.items():
            if type(name) is not str or not is_number(ms):
                return False
    identity = get("identity")
    return identity is None or (isinstance(identity, Mapping) and all(
        value is None or type(value) is str for part, value in identity.items()
        if part in IDENTITY))


def kept(row: Row) -> bool:
    """Whether the table keeps the row's projection besides its columns: a row
    the report lists, an audit or review row, or one whose fields do not fit."""
    return (listed(row) or row.get("audit") is not None or row.get("review") is not None
            or row.get("review_scored") is not None or not _fits(row))
