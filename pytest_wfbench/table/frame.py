"""A batch of rows as columns: what the row cache stores, a frame at a time. Pure.

A frame is a tuple of plain data (``marshal`` writes and reads it):
``(count, keys, objects, identity, flags, numbers, stage_names, stages, kept)``:
``count`` rows; their keys (the digests of their lines, KEY_SIZE bytes each, in
one blob, or none); per field of :data:`~pytest_wfbench.table.schema.OBJECTS`
and per part of the identity, its column: the cell ids packed, one text and
where each ends (:func:`pytest_wfbench.table.cells.pack`; ids that are not all
text, a tuple), every other one coded (:func:`code_column`:
each value once, and each row's code, one, two or four bytes, into them, as
the table holds it); the bytes of one ``array`` per flag (signed bytes) and per number
(float64) and stage time (float64, NaN where a row did not time the stage); and
the projections the table keeps, by index in the frame. Reading a frame's
numbers is a copy of bytes: no object per value.
"""

from __future__ import annotations

import contextlib
import sys
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_wfbench.projection import project
from pytest_wfbench.table.cells import pack, packed_ok
from pytest_wfbench.table.schema import (
    FLAGS,
    IDENTITY,
    NAN,
    NO_FLAG,
    NUMBER_TYPES,
    NUMBERS,
    OBJECTS,
    TEXT_TYPES,
    kept,
)

Row = dict[str, Any]
Frame = tuple[Any, ...]
UNSHARED = "cell_id"
"""The one field of OBJECTS each row has its own of."""
SHARED = frozenset(OBJECTS) - {UNSHARED}
"""Strings shared from row to row: a frame holds them coded (:func:`code_column`)."""
FLAG_TYPE, NUMBER_TYPE = "b", "d"
FLAG_BYTES = frozenset(array(FLAG_TYPE, [NO_FLAG, 0, 1]).tobytes())
READ = (*OBJECTS, *FLAGS, *NUMBERS, "stage_ms", "identity")
"""The fields a frame reads of a row."""
KEY_SIZE = 32
"""A line's key: its sha256 digest."""


def number_of(value: Any) -> float:
    """A number field's value as the table holds it: NaN for null, a boolean
    or what is no number."""
    if value is None or value is True or value is False:
        return NAN
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return NAN


def _flag(value: Any) -> int:
    """A flag's byte: null, else its truth (as the readers of rows took it)."""
    return NO_FLAG if value is None else 1 if value else 0


CODE_TYPES = {1: "B", 2: "H", 4: "I"}
"""A coded column's codes, by their size."""
Coded = tuple[tuple[Any, ...], bytes]
"""A column of values that repeat: each value once, and each row's code into them."""


def code_column(column: Sequence[Any]) -> Coded:
    """The column coded: its values each once (strings interned), in the order
    rows first have them, and each row's code, as narrow as they fit. A value
    that is no text (nor null) is its own, never shared."""
    if TEXT_TYPES.issuperset(map(type, column)):  # the usual column: C loops
        values = tuple(sys.intern(value) if value is not None else value
                       for value in dict.fromkeys(column))
        place = dict(zip(values, range(len(values)), strict=True))
        codes = list(map(place.__getitem__, column))
    else:
        shared: dict[Any, int] = {}
        found: list[Any] = []
        codes = []
        for value in column:
            if value is None or type(value) is str:
                if value not in shared:
                    shared[value] = len(found)
                    found.append(value if value is None else sys.intern(value))
                codes.append(shared[value])
            else:
                codes.append(len(found))
                found.append(value)
        values = tuple(found)
    size = next(size for size, typecode in CODE_TYPES.items()
                if len(values) <= 1 << (8 * size))
    return values, array(CODE_TYPES[size], codes).tobytes()


def _numbers(column: list[Any]) -> bytes:
    if NUMBER_TYPES.issuperset(map(type, column)):  # the usual column: a C loop
        with contextlib.suppress(OverflowError):  # an integer beyond a float64
            return array(NUMBER_TYPE,
                         [NAN if value is None else value for value in column]).tobytes()
    return array(NUMBER_TYPE, map(number_of, column)).tobytes()


def _flags(column: list[Any]) -> bytes:
    return array(FLAG_TYPE, [NO_FLAG if value is None else 1 if value else 0
                             for value in column]).tobytes()


Record = tuple[tuple[Any, ...], Row | None]
"""What a frame needs of a row: its READ fields, and its projection when the
table keeps it (schema.kept)."""


def record_of(row: Row) -> Record:
    """The row's record, read at once (a row is large: its fields are read
    while it is at hand, and the row need not be kept)."""
    return tuple(map(row.get, READ)), (project(row) if kept(row) else None)


def encode(rows: Sequence[Row], keys: Sequence[bytes] = ()) -> Frame:
    """The frame of these rows (and their lines' keys, if any)."""
    return encode_records([record_of(row) for row in rows], keys)


def encode_records(records: Sequence[Record], keys: Sequence[bytes] = ()) -> Frame:
    """The frame of rows' records (and their lines' keys, if any)."""
    columns = dict(zip(READ, map(list, zip(*(values for values, _ in records), strict=True)),
                       strict=True)) if records else {name: [] for name in READ}
    objects = tuple(code_column(columns[name]) if name in SHARED else pack(columns[name])
                    for name in OBJECTS)
    identities = [value if isinstance(value, Mapping) else None
                  for value in columns["identity"]]
    identity = tuple(code_column([None if value is None else value.get(part)
                                  for value in identities]) for part in IDENTITY)
    flags = tuple(_flags(columns[name]) for name in FLAGS)
    numbers = tuple(_numbers(columns[name]) for name in NUMBERS)
    timed = [stage_ms if type(stage_ms) is dict else {} for stage_ms in columns["stage_ms"]]
    names: dict[Any, None] = {}
    for stage_ms in timed:
        if stage_ms.keys() != names.keys():
            names.update(dict.fromkeys(stage_ms))
    stage_names = tuple(sys.intern(name) for name in names if type(name) is str)
    stages = tuple(_numbers([stage_ms.get(name) for stage_ms in timed]) for name in stage_names)
    projections = {index: projection for index, (_, projection) in enumerate(records)
                   if projection is not None}
    return (len(records), key_blob(keys), objects, identity, flags, numbers, stage_names,
            stages, projections)


def key_blob(keys: Sequence[bytes]) -> bytes:
    """Lines' keys as a frame holds them: one blob (ValueError for a key that
    is no line's digest)."""
    if any(len(key) != KEY_SIZE for key in keys):
        raise ValueError(f"a line's key is {KEY_SIZE} bytes")
    return b"".join(keys)


class FrameError(ValueError):
    """A frame that is not one (a cache written by something else, or damaged
    in a way its checksum missed)."""


def check(frame: Any) -> Frame:
    """The frame, if it has a frame's shape; else FrameError."""
    if not isinstance(frame, tuple) or len(frame) != 9:
        raise FrameError("not a frame")
    count, keys, objects, identity, flags, numbers, stage_names, stages, projections = frame
    flag_size, number_size = array(FLAG_TYPE).itemsize, array(NUMBER_TYPE).itemsize
    if not (type(count) is int and count >= 0 and type(keys) is bytes
            and len(keys) in (0, count * KEY_SIZE)
            and isinstance(objects, tuple) and len(objects) == len(OBJECTS)
            and all(_coded(column, count) if name in SHARED
                    else packed_ok(column, count)
                    or (isinstance(column, tuple) and len(column) == count)
                    for name, column in zip(OBJECTS, objects, strict=True))
            and isinstance(identity, tuple) and len(identity) == len(IDENTITY)
            and all(_coded(column, count) for column in identity)
            and _blobs(flags, len(FLAGS), count * flag_size)
            and all(FLAG_BYTES.issuperset(blob) for blob in flags)
            and _blobs(numbers, len(NUMBERS), count * number_size)
            and isinstance(stage_names, tuple) and all(type(n) is str for n in stage_names)
            and len(set(stage_names)) == len(stage_names)
            and _blobs(stages, len(stage_names), count * number_size)
            and isinstance(projections, dict)
            and all(type(i) is int and 0 <= i < count and isinstance(row, dict)
                    for i, row in projections.items())):
        raise FrameError("a frame of the wrong shape")
    return frame


def _coded(column: Any, count: int) -> bool:
    """Whether a coded column of ``count`` rows is one: each code one of its values'."""
    if not (isinstance(column, tuple) and len(column) == 2 and isinstance(column[0], tuple)
            and type(column[1]) is bytes):
        return False
    values, codes = column
    size = len(codes) // count if count else 1
    if size not in CODE_TYPES or len(codes) != size * count or len(values) > 1 << (8 * size):
        return False
    texts = [value for value in values if value is None or type(value) is str]
    if len(set(texts)) != len(texts):  # a text twice: two codes for one value
        return False
    if size == 1:  # every byte a code: none left once the codes there are taken out
        return not codes.translate(None, bytes(range(min(len(values), 256))))
    return max(array(CODE_TYPES[size], codes), default=-1) < len(values)


def _blobs(blobs: Any, width: int, size: int) -> bool:
    return (isinstance(blobs, tuple) and len(blobs) == width
            and all(type(blob) is bytes and len(blob) == size for blob in blobs))
