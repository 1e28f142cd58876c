"""The column of cell ids: every row has its own, so none is shared as a code
(:mod:`pytest_wfbench.table.texts`); a frame's ids are one text and where each
ends instead (:func:`pack`), and a table holds them so, a string made only for
the ids read (at 100,000 rows an object an id took 7.6 MiB, the text and its
ends 2.7 MiB, and the read made 100,000 fewer objects)."""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, islice
from typing import Any, NamedTuple, overload

END_TYPE = "I"
"""Where each id ends in its frame's text: unsigned, four bytes."""
END_SIZE = array(END_TYPE).itemsize
MOST = (1 << (8 * END_SIZE)) - 1

Packed = list[Any]
"""A frame's ids packed: ``[text, ends]``, the ends the bytes of an array."""


def pack(ids: Sequence[Any]) -> Packed | tuple[Any, ...]:
    """A frame's column of cell ids: packed when every id is text (and their
    text fits the ends' size), else the ids as they are (a tuple)."""
    if not all(type(value) is str for value in ids):
        return tuple(ids)
    ends = array(END_TYPE)
    total = sum(map(len, ids))
    if total > MOST:
        return tuple(ids)
    ends.extend(accumulate(map(len, ids)))
    return ["".join(ids), ends.tobytes()]


def packed_ok(column: Any, count: int) -> bool:
    """Whether a frame's packed ids are: a text and ``count`` ends, each at or
    after the one before, the last the text's end."""
    if not (type(column) is list and len(column) == 2 and type(column[0]) is str
            and type(column[1]) is bytes and len(column[1]) == count * END_SIZE):
        return False
    ends = array(END_TYPE, column[1])
    return (all(map(operator.le, ends, islice(ends, 1, None)))
            and (ends[-1] if count else 0) == len(column[0]))


class _Packed(NamedTuple):
    text: str
    ends: array[int]


Chunk = _Packed | tuple[Any, ...]


class Cells(Sequence[Any]):
    """The cell ids of a table's rows, a frame's at a time: a packed frame's as
    its text and ends, another's (ids that are not all text) as they are."""

    __slots__ = ("chunks", "size", "starts")

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        """Each frame's ids: (text, ends) packed, else a tuple of the ids."""
        self.starts: array[int] = array("q")
        """The first row of each chunk."""
        self.size = 0

    def extend(self, column: Packed | tuple[Any, ...], count: int) -> None:
        """Add a frame's ``count`` ids (checked: :func:`packed_ok`, or a tuple)."""
        if not count:
            return
        if type(column) is list:
            self.chunks.append(_Packed(column[0], array(END_TYPE, column[1])))
        else:
            self.chunks.append(tuple(column))
        self.starts.append(self.size)
        self.size += count

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self.at(range(*index.indices(self.size))))
        if index < 0:
            index += self.size
        return self.at((index,))[0]

    def at(self, positions: Sequence[int]) -> tuple[Any, ...]:
        """The ids at these positions (gather's, for this column): a run of
        positions in one frame is read without looking for its frame again."""
        out: list[Any] = []
        add = out.append
        chunks, starts, size = self.chunks, self.starts, self.size
        low = high = 0
        text, ends = "", array(END_TYPE)
        values: tuple[Any, ...] = ()
        for index in positions:
            if not low <= index < high:
                if not 0 <= index < size:
                    raise IndexError(index)
                found = bisect_right(starts, index) - 1
                chunk, low = chunks[found], starts[found]
                high = starts[found + 1] if found + 1 < len(starts) else size
                if type(chunk) is _Packed:
                    text, ends, values = chunk.text, chunk.ends, ()
                else:
                    values = chunk
            offset = index - low
            if values:
                add(values[offset])
            else:
                add(text[ends[offset - 1] if offset else 0:ends[offset]])
        return tuple(out)

