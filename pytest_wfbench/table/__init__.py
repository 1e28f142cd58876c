"""Rows as columns (:class:`Table`), what the report is computed from, and the
frames the row cache stores them in. Pure.

A report of 100,000 rows holds each row's scalars in columns (about 0.4 KB a
row: numbers as float64, strings that repeat as codes into their values, see
:mod:`pytest_wfbench.table.texts`) instead of the rows, and the rows it
lists one by one as the fields it reads of them (the page's few detailed cells
read again whole); see :mod:`pytest_wfbench.table.schema`.
"""

from __future__ import annotations

from pytest_wfbench.table.frame import Frame, FrameError, check, encode
from pytest_wfbench.table.schema import FLAGS, NO_FLAG, NUMBERS, OBJECTS, kept
from pytest_wfbench.table.table import Table, gather

__all__ = ["FLAGS", "NO_FLAG", "NUMBERS", "OBJECTS", "Frame", "FrameError", "Table", "check",
           "encode", "gather", "kept"]
