"""A batch of rows as columns: what the row cache stores, a frame at a time. Pure.

A frame is a tuple of plain data (``marshal`` writes and reads it):
``(count, keys, objects, identity, flags, numbers, stage_names, stages, kept)``:
``count`` rows; their keys (the digests of their lines, or empty); one tuple per
field of :data:`~pytest_wfbench.table.schema.OBJECTS` and per part of the
identity; the bytes of one ``array`` per flag (signed bytes) and per number
(float64) and stage time (float64, NaN where a row did not time the stage); and
the projections the table keeps, by index in the frame. Reading a frame's
numbers is a copy of bytes: no object per value.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_wfbench.projection import project
from pytest_wfbench.table.schema import FLAGS, IDENTITY, NAN, NO_FLAG, NUMBERS, OBJECTS, kept

Row = dict[str, Any]
Frame = tuple[Any, ...]
SHARED = frozenset(OBJECTS) - {"cell_id"}
"""Strings shared from row to row: interned (marshal writes each once a frame)."""
FLAG_TYPE, NUMBER_TYPE = "b", "d"


def _shared(value: Any) -> Any:
    return sys.intern(value) if type(value) is str else value


def _number(value: Any) -> float:
    if value is None or value is True or value is False:
        return NAN
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return NAN


def _flag(value: Any) -> int:
    return NO_FLAG if value is None else 1 if value is True else 0 if value is False else NO_FLAG


def encode(rows: Sequence[Row], keys: Sequence[bytes] = ()) -> Frame:
    """The frame of these rows (and their lines' keys, if any)."""
    objects = tuple(tuple(map(_shared, (row.get(name) for row in rows))) if name in SHARED
                    else tuple(row.get(name) for row in rows) for name in OBJECTS)
    identities = [row.get("identity") for row in rows]
    identity = tuple(tuple(_shared(value.get(part)) if isinstance(value, Mapping) else None
                           for value in identities) for part in IDENTITY)
    flags = tuple(array(FLAG_TYPE, [_flag(row.get(name)) for row in rows]).tobytes()
                  for name in FLAGS)
    numbers = tuple(array(NUMBER_TYPE, [_number(row.get(name)) for row in rows]).tobytes()
                    for name in NUMBERS)
    timed = [stage_ms if isinstance(stage_ms := row.get("stage_ms"), dict) else {}
             for row in rows]
    names: dict[Any, None] = {}
    for stage_ms in timed:
        if stage_ms.keys() != names.keys():
            names.update(dict.fromkeys(stage_ms))
    stage_names = tuple(sys.intern(name) for name in names if type(name) is str)
    stages = tuple(array(NUMBER_TYPE, [_number(stage_ms.get(name)) for stage_ms in timed])
                   .tobytes() for name in stage_names)
    projections = {index: project(row) for index, row in enumerate(rows) if kept(row)}
    return (len(rows), tuple(keys), objects, identity, flags, numbers, stage_names, stages,
            projections)


class FrameError(ValueError):
    """A frame that is not one (a cache written by something else, or damaged
    in a way its checksum missed)."""


def check(frame: Any) -> Frame:
    """The frame, if it has a frame's shape; else FrameError."""
    if not isinstance(frame, tuple) or len(frame) != 9:
        raise FrameError("not a frame")
    count, keys, objects, identity, flags, numbers, stage_names, stages, projections = frame
    flag_size, number_size = array(FLAG_TYPE).itemsize, array(NUMBER_TYPE).itemsize
    if not (type(count) is int and count >= 0 and isinstance(keys, tuple)
            and len(keys) in (0, count) and set(map(type, keys)) <= {bytes}
            and _columns(objects, len(OBJECTS), count) and _columns(identity, len(IDENTITY), count)
            and _blobs(flags, len(FLAGS), count * flag_size)
            and _blobs(numbers, len(NUMBERS), count * number_size)
            and isinstance(stage_names, tuple) and all(type(n) is str for n in stage_names)
            and _blobs(stages, len(stage_names), count * number_size)
            and isinstance(projections, dict)
            and all(type(i) is int and 0 <= i < count and isinstance(row, dict)
                    for i, row in projections.items())):
        raise FrameError("a frame of the wrong shape")
    return frame


def _columns(columns: Any, width: int, count: int) -> bool:
    return (isinstance(columns, tuple) and len(columns) == width
            and all(isinstance(column, tuple) and len(column) == count for column in columns))


def _blobs(blobs: Any, width: int, size: int) -> bool:
    return (isinstance(blobs, tuple) and len(blobs) == width
            and all(type(blob) is bytes and len(blob) == size for blob in blobs))
