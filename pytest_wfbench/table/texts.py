"""A column of values that repeat from row to row (a task, an arm, a status):
each value held once, each row its value's code. Pure.

A list would hold a reference a row (8 bytes); a report of 100,000 rows has
thirteen such columns and two of identity, a few hundred values in all. Codes
are one byte a row while the column has at most 256 values, two up to 65,536,
and four beyond. Reading a row's value is one more step than a list's; the
readers that ask every row compare codes instead (:meth:`Texts.code`) or take
many rows at once (:meth:`Texts.at`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any, overload

from pytest_wfbench.table.frame import CODE_TYPES, code_column

WIDTHS = (("B", 1 << 8), ("H", 1 << 16), ("I", 1 << 32), ("Q", 1 << 64))
"""Code types, each with how many values its codes can tell apart."""


def _width(values: int) -> str:
    return next(typecode for typecode, most in WIDTHS if values <= most)


class Texts(Sequence[Any]):
    """A column of text (or null) values, as codes into its values. A value that
    is not text (a row whose fields fit no column: the table keeps it whole) is
    given a code of its own, never shared."""

    __slots__ = ("_code", "codes", "values")

    def __init__(self, column: Iterable[Any] = ()) -> None:
        self.codes: array[int] = array(WIDTHS[0][0])
        """Each row's value's code: its place in ``values``."""
        self.values: list[Any] = []
        """Each value once, in the order rows first had it."""
        self._code: dict[Any, int] = {}
        """Text (or null) value -> its code."""
        self.extend(column)

    def __len__(self) -> int:
        return len(self.codes)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(map(self.values.__getitem__, self.codes[index]))
        return self.values[self.codes[index]]

    def code(self, value: object) -> int | None:
        """The code of a text (or null) value, or None when no row has it: the
        rows whose code is this one are the rows whose value ``== value``."""
        if value is not None and type(value) is not str:
            return None
        return self._code.get(value)

    def at(self, positions: Sequence[int]) -> tuple[Any, ...]:
        """The values at these positions (gather's, for this column)."""
        if len(positions) > 1:
            return itemgetter(*itemgetter(*positions)(self.codes))(  # type: ignore[no-any-return]
                self.values)
        return tuple(self[i] for i in positions)

    def extend(self, column: Iterable[Any]) -> None:
        """Add rows, these values in order."""
        column = column if isinstance(column, (list, tuple)) else list(column)
        self.extend_coded(*code_column(column), len(column))

    def extend_coded(self, values: Sequence[Any], codes: bytes, count: int) -> None:
        """Add ``count`` rows, coded (a frame's column: frame.code_column),
        their codes read into this column's (one pass in C)."""
        into = list(map(self._code_of, values))  # the frame's value -> this column's code
        width = _width(len(self.values))
        if width != self.codes.typecode:
            self.codes = array(width, self.codes)
        if count == 0:
            return
        if len(codes) == count and width == "B":  # bytes to bytes: a translation
            self.codes.frombytes(codes.translate(bytes(into) + bytes(256 - len(into))))
            return
        import numpy as np  # a report's: the workers that write rows never load numpy

        found = np.frombuffer(codes, np.dtype(CODE_TYPES[len(codes) // count]))
        self.codes.frombytes(np.asarray(into, np.dtype(width))[found].tobytes())

    def _code_of(self, value: Any) -> int:
        if value is None or type(value) is str:
            found = self._code.get(value)
            if found is not None:
                return found
            self._code[value] = len(self.values)
        self.values.append(value)
        return len(self.values) - 1

