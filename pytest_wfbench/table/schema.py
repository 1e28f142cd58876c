"""What a table holds of a row, and which rows it keeps whole. Pure.

A report reads about 40 fields of most rows, all of them scalars, and every field
only of the rows it lists one by one. So the table holds the scalars of every
row in columns: cell ids as a list, other strings as codes into their values
(:mod:`pytest_wfbench.table.texts`), flags as one byte, numbers as
float64 (integers are exact in a float64 up to 2**53), stage times one column per
stage. The rows the report lists (excluded runs, skipped cells, suspicious wins,
harness errors, kept workspaces, the tool-cost lanes), the audit's and the
review's rows (their ``audit`` and ``review`` are nested data), and any row
whose fields do not fit a column (a number that is not one, a flag that is not
a boolean) are also kept as their projection (:mod:`pytest_wfbench.projection`):
whole for the listed ones. The report's own table (read with the results file's
line log) holds a listed agent row slim instead (:data:`SLIM`: the fields the
report reads of it, about 4 KB in memory instead of 12), and reads the whole row
of the few its page details again from its line (``Table.whole``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from pytest_wfbench.fields import USAGE_FIELDS
from pytest_wfbench.projection import IDENTITY_PARTS, INTERNED, PROJECTED, listed

Row = dict[str, Any]

OBJECTS = ("cell_id", "sweep_id", "task", "class", "arm", "status", "lane", "error_kind",
           "oracle_judged_by", "model", "effort", "arm_kind", "overlay_digest",
           "skills_fingerprint")
"""Fields held as they are: cell_id in a list, the others as codes (Texts)."""
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


NUMBER_TYPES = frozenset((int, float, type(None)))
FLAG_TYPES = frozenset((bool, type(None)))
TEXT_TYPES = frozenset((str, type(None)))
STAGE_NAME_TYPES = frozenset((str,))
STAGE_TIME_TYPES = frozenset((int, float))


EXACT = 2**53
"""Integers a float64 holds exactly."""


def _fits(row: Row) -> bool:
    """Whether every held field of the row fits its column (types compared as
    sets: a row's fields are read once, by C loops): text or null, a boolean or
    null, a number or null (an integer a float64 holds exactly). A NaN reads as
    null from a column, and a count that is not finite as 0."""
    get = row.get
    numbers = list(map(get, NUMBERS))
    if not (FLAG_TYPES.issuperset(map(type, map(get, FLAGS)))
            and TEXT_TYPES.issuperset(map(type, map(get, OBJECTS)))
            and NUMBER_TYPES.issuperset(map(type, numbers))
            and all(-EXACT <= value <= EXACT for value in numbers if type(value) is int)):
        return False
    stage_ms = get("stage_ms")
    if stage_ms is not None and (
            type(stage_ms) is not dict or not stage_ms  # {}: the columns would say None
            or not STAGE_NAME_TYPES.issuperset(map(type, stage_ms))
            or not STAGE_TIME_TYPES.issuperset(map(type, stage_ms.values()))):
        return False
    identity = get("identity")
    if identity is None:
        return True
    if not isinstance(identity, Mapping):
        return False
    parts = [identity[part] for part in IDENTITY if part in identity]
    return bool(parts) and all(type(value) is str for value in parts)


def kept(row: Row) -> bool:
    """Whether the table keeps the row's projection besides its columns: a row
    the report lists, an audit or review row, or one whose fields do not fit."""
    return (listed(row) or row.get("audit") is not None or row.get("review") is not None
            or row.get("review_scored") is not None or not _fits(row))


SLIM = frozenset((*PROJECTED, "error_class", "error_detail", "skip_reason", "kept_workspace",
                  "suspicious")) - {"stage_ms", "artifacts", "audit", "review"}
"""What the report reads of an agent row it lists (its tables of excluded runs,
skipped cells, suspicious wins, harness errors and kept workspaces, the terminal's
lines, the page's outcomes, the promotion gate), but for the page's detail of a
few cells, which reads their rows again (Table.whole): of ``identity`` the
parts the report reads (as of a row it does not list); not the stage times
(their columns are read), the artifacts (the audit's rows are not slim), nor
the audit or the review (a slim row has neither). A report's table holds a
listed agent row as these fields: a row is about 80 fields, 12 KB in memory.
tests/test_table.py checks that a report of slim rows is the report of whole
ones."""


def slimmable(row: Row) -> bool:
    """Whether a kept row may be held slim (schema.SLIM) by the report's table:
    an agent row (which the report lists, or whose fields fit no column); not
    a lane's, the audit's or the review's (their readers take them whole)."""
    return (row.get("lane", "agent") == "agent" and row.get("audit") is None
            and row.get("review") is None and row.get("review_scored") is None)


def slim(row: Row) -> Row:
    """The row's SLIM fields, those it has, as it has them, in its order; of a
    mapping ``identity`` the parts held (IDENTITY); strings that repeat from row
    to row shared."""
    out = {key: sys.intern(value) if key in INTERNED and type(value) is str else value
           for key, value in row.items() if key in SLIM}
    identity = out.get("identity")
    if isinstance(identity, Mapping):
        out["identity"] = {part: sys.intern(value) if type(value) is str else value
                           for part, value in identity.items() if part in IDENTITY}
    return out
