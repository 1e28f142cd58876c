"""Rows as columns: what a report is computed from.

A :class:`Table` grows a frame at a time (:mod:`pytest_wfbench.table.frame`):
its columns are appended, numbers as bytes. ``positions`` are the rows the
report is about (the last row of each cell, in the order cells first appeared),
by index into the columns; a row not among them (an earlier row of a cell that
ran again, a cached line the results file no longer has) stays in the columns,
unread. :meth:`Table.row` makes a row's projection again
(:func:`pytest_wfbench.projection.project`), for the readers that take rows:
equal to it (a number the row had as an int where a float is held, a cost of
``0``, comes back as ``0.0``).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate
from operator import itemgetter
from typing import Any, cast

from pytest_wfbench.fields import USAGE_FIELDS
from pytest_wfbench.projection import PROJECTED
from pytest_wfbench.table.cells import Cells, pack
from pytest_wfbench.table.frame import (
    FLAG_TYPE,
    NUMBER_TYPE,
    UNSHARED,
    Frame,
    check,
    code_column,
    encode,
    key_blob,
    number_of,
)
from pytest_wfbench.table.schema import (
    FLAGS,
    IDENTITY,
    INTEGERS,
    NAN,
    NO_FLAG,
    NUMBERS,
    OBJECTS,
    slim,
    slimmable,
)
from pytest_wfbench.table.texts import Texts

Row = dict[str, Any]
FLAG_VALUES = {NO_FLAG: None, 0: False, 1: True}
POSITION_TYPE = "q"


def _count(value: float) -> int:
    return int(value) if value - value == 0 else 0  # NaN (null) and infinities: 0


def _total(a: float, b: float, c: float, d: float) -> float:
    """Four counts' total as a float: past the largest float, infinite (four
    counts of 1e308 are not a number a float holds)."""
    total = _count(a) + _count(b) + _count(c) + _count(d)
    try:
        return float(total)
    except OverflowError:
        return math.inf if total > 0 else -math.inf


def row_tokens(row: Mapping[str, Any]) -> float:
    """A row's total of the usage fields, from the row itself, as the table
    totals it (:meth:`Table.tokens`): never an error, whatever the row holds."""
    return _total(*(number_of(row.get(name)) for name in USAGE_FIELDS))


def _untimed(count: int) -> bytes:
    """A stage column's bytes for rows that did not time it (NaN each)."""
    return array(NUMBER_TYPE, [NAN]).tobytes() * count


def gather(column: Sequence[Any], positions: Sequence[int]) -> tuple[Any, ...]:
    """The column's values at these positions (none for none)."""
    if isinstance(column, (Texts, Cells)):
        return column.at(positions)
    if len(positions) > 1:
        return itemgetter(*positions)(column)  # type: ignore[no-any-return]
    return tuple(column[i] for i in positions)


class WholeRowLost(ValueError):
    """A slim row's whole row is no longer where it was read (its line changed)."""


class Table:
    """Rows as columns, with the projections of the rows kept whole (or, for
    the report, of the listed agent rows, slim: see :meth:`whole`)."""

    def __init__(self, slim: bool = False) -> None:
        self.slim = slim
        """Whether listed agent rows are kept slim (schema.slim)."""
        self.slimmed: set[int] = set()
        """The indexes of the rows kept slim."""
        self.read_whole: Callable[[Sequence[int]], list[Row | None]] | None = None
        """Slim rows' whole rows, read again (None where one is not there any more)."""
        self.size = 0
        self.objects: dict[str, Sequence[Any]] = {
            name: Cells() if name == UNSHARED else Texts() for name in OBJECTS}
        """The cell ids as Cells (each its own), the other fields as Texts."""
        self.identity: dict[str, Texts] = {part: Texts() for part in IDENTITY}
        self.flags: dict[str, array[int]] = {name: array(FLAG_TYPE) for name in FLAGS}
        self.numbers: dict[str, array[float]] = {name: array(NUMBER_TYPE) for name in NUMBERS}
        self.stages: dict[str, array[float]] = {}
        """Stage name -> ms, NaN where the row did not time it."""
        self.kept: dict[int, Row] = {}
        """Index -> the row's projection, for the rows kept whole (schema.kept)."""
        self.positions: array[int] = array(POSITION_TYPE)
        """The rows the report is about, by index (an array: no object a row)."""

    @classmethod
    def of(cls, rows: Iterable[Row]) -> Table:
        """A table of these rows, every one of them, in this order."""
        table = cls()
        table.append(encode(list(rows)))
        table.positions = array(POSITION_TYPE, range(table.size))
        return table

    def append(self, frame: Frame) -> int:
        """Add a frame's rows (checked: FrameError when it is not a frame);
        returns the index of its first row."""
        return self.extend([frame])[0]

    def extend(self, frames: Sequence[Frame]) -> list[int]:
        """Add the rows of these frames, in order (every one checked first:
        FrameError when one is not a frame, and then none is added); returns
        the index of each frame's first row. Each column grows once."""
        checked = [check(frame) for frame in frames]
        if not checked:
            return []
        bases = list(accumulate((frame[0] for frame in checked[:-1]), initial=self.size))
        for k, values in enumerate(self.objects.values()):
            if isinstance(values, Texts):
                for frame in checked:
                    values.extend_coded(frame[2][k][0], frame[2][k][1], frame[0])
            else:
                for frame in checked:
                    cast(Cells, values).extend(frame[2][k], frame[0])
        for k, texts in enumerate(self.identity.values()):
            for frame in checked:
                texts.extend_coded(frame[3][k][0], frame[3][k][1], frame[0])
        for k, name in enumerate(FLAGS):
            self.flags[name].frombytes(b"".join(frame[4][k] for frame in checked))
        for k, name in enumerate(NUMBERS):
            self.numbers[name].frombytes(b"".join(frame[5][k] for frame in checked))
        timed = {name: None for frame in checked for name in frame[6]}
        for name in timed:  # a new stage's column after the others, as it first appears
            column = self.stages.get(name)
            if column is None:
                column = self.stages[name] = array(NUMBER_TYPE, _untimed(self.size))
            column.frombytes(b"".join(
                frame[7][frame[6].index(name)] if name in frame[6] else _untimed(frame[0])
                for frame in checked))
        self.size += sum(frame[0] for frame in checked)
        for column in self.stages.values():
            if len(column) < self.size:
                column.extend(array(NUMBER_TYPE, [NAN]) * (self.size - len(column)))
        kept, slimmed = self.kept, self.slimmed
        for base, frame in zip(bases, checked, strict=True):
            for index, row in frame[8].items():
                if self.slim and slimmable(row):
                    slimmed.add(base + index)
                    row = slim(row)
                kept[base + index] = row
        return bases

    def frame(self, positions: Sequence[int], keys: Sequence[bytes] = ()) -> Frame:
        """The frame of these rows (with their lines' keys): what encode() gives
        of their rows, gathered from the columns."""
        objects = tuple(code_column(gather(column, positions)) if isinstance(column, Texts)
                        else pack(gather(column, positions)) for column in self.objects.values())
        identity = tuple(code_column(gather(column, positions))
                         for column in self.identity.values())
        flags = tuple(array(FLAG_TYPE, [column[i] for i in positions]).tobytes()
                      for column in self.flags.values())
        numbers = tuple(array(NUMBER_TYPE, [column[i] for i in positions]).tobytes()
                        for column in self.numbers.values())
        timed = {name: array(NUMBER_TYPE, [column[i] for i in positions])
                 for name, column in self.stages.items()}
        timed = {name: column for name, column in timed.items()
                 if any(ms == ms for ms in column)}
        slim = [i for i in positions if i in self.slimmed]
        wholes = dict(zip(slim, self.wholes(slim, strict=True), strict=True))
        kept = {offset: wholes[i] if i in wholes else self.kept[i]
                for offset, i in enumerate(positions) if i in self.kept}
        return (len(positions), key_blob(keys), objects, identity, flags, numbers, tuple(timed),
                tuple(column.tobytes() for column in timed.values()), kept)

    # ---------------------------------------------------------------- readers

    def obj(self, name: str) -> Sequence[Any]:
        """A field's column: the cell ids a list, another field Texts (whose
        codes the readers of every row compare: Texts.code)."""
        return self.objects[name]

    def texts(self, name: str) -> Texts:
        """A field's column of shared values (any but cell_id)."""
        column = self.objects[name]
        if not isinstance(column, Texts):
            raise TypeError(f"{name} is no column of shared values")
        return column

    def flag(self, name: str) -> array[int]:
        """Codes: NO_FLAG (null), 0, 1."""
        return self.flags[name]

    def number(self, name: str) -> array[float]:
        """NaN for null."""
        return self.numbers[name]

    def tokens(self, positions: Sequence[int]) -> list[float]:
        """These rows' totals of the usage fields (aggregate.total_tokens): each
        field as an int, null (and a count that is not finite) as 0; a total
        past the largest float is infinite. (aggregate.token_totals has every
        row's at once.)"""
        return list(map(_total, *(gather(self.numbers[name], positions)
                                  for name in USAGE_FIELDS)))

    def value(self, name: str, index: int) -> Any:
        """A held field of one row, as the row has it (null as None)."""
        if name in self.objects:
            return self.objects[name][index]
        if name in self.flags:
            return FLAG_VALUES[self.flags[name][index]]
        number = self.numbers[name][index]
        if number != number:
            return None
        return int(number) if name in INTEGERS and number.is_integer() else number

    def row(self, index: int) -> Row:
        """The row's projection (pytest_wfbench.projection.project): the kept one,
        or made again from the columns."""
        found = self.kept.get(index)
        if found is not None:
            return found
        out: Row = {}
        for name in PROJECTED:
            if name == "identity":
                parts = {part: value for part in IDENTITY
                         if (value := self.identity[part][index]) is not None}
                if parts:
                    out[name] = parts
            elif name == "stage_ms":
                timed = {stage: ms for stage, column in self.stages.items()
                         if (ms := column[index]) == ms}
                if timed:
                    out[name] = timed
            elif name in self.objects or name in self.flags or name in self.numbers:
                value = self.value(name, index)
                if value is not None:
                    out[name] = value
        return out

    def column(self, name: str, positions: Sequence[int], part: str | None = None) -> list[Any]:
        """Of each of these rows, one field of its projection (:meth:`row`; None
        where it is null), or one ``part`` of its identity (None where the row's
        identity is not a mapping): a kept row's from it, the others' from the
        columns."""
        values = (list(self.identity[part].at(positions)) if part is not None
                  else self._values(name, positions))
        kept = self.kept
        if kept and positions:
            import numpy as np  # a report's: the workers that write rows never load numpy

            at = np.asarray(positions, dtype=np.int64)
            for n in np.flatnonzero(np.isin(at, np.fromiter(kept, np.int64, len(kept)))).tolist():
                value = kept[int(at[n])].get(name)
                if part is not None:
                    value = value.get(part) if isinstance(value, Mapping) else None
                values[n] = value
        return values

    def _values(self, name: str, positions: Sequence[int]) -> list[Any]:
        """A held field's values at these positions, as :meth:`value` gives each
        (of ``identity``, the parts held, as :meth:`row` has them)."""
        if name == "identity":
            parts = [gather(self.identity[part], positions) for part in IDENTITY]
            return [{part: value for part, value in zip(IDENTITY, values, strict=True)
                     if value is not None} or None for values in zip(*parts, strict=True)]
        if name in self.objects:
            return list(gather(self.objects[name], positions))
        if name in self.flags:
            return list(map(FLAG_VALUES.__getitem__, gather(self.flags[name], positions)))
        integral = name in INTEGERS
        return [None if number != number else int(number)
                if integral and number.is_integer() else number
                for number in gather(self.numbers[name], positions)]

    def whole(self, index: int, *, strict: bool = False) -> Row:
        """The row's projection whole: :meth:`row`, but a slim row's read again
        (its line, checked against its key); when that line is gone or changed,
        the slim row (or, ``strict``, WholeRowLost)."""
        return self.wholes([index], strict=strict)[0]

    def wholes(self, indexes: Sequence[int], *, strict: bool = False) -> list[Row]:
        """:meth:`whole` of each of these rows (the slim ones read at once)."""
        slim = [i for i in indexes if i in self.slimmed]
        read = self.read_whole(slim) if slim and self.read_whole is not None else [None] * len(
            slim)
        found = dict(zip(slim, read, strict=True))
        out = []
        for i in indexes:
            row = found.get(i)
            if row is None:
                if strict and i in self.slimmed:
                    raise WholeRowLost(i)
                row = self.row(i)
            out.append(row)
        return out

    def rows(self, positions: Sequence[int] | None = None) -> list[Row]:
        """The projections of these rows (of ``positions`` when None)."""
        return [self.row(i) for i in (self.positions if positions is None else positions)]

    def kept_rows(self, positions: Sequence[int] | None = None) -> list[Row]:
        """The kept rows among these (``positions`` when None), in their order."""
        kept = self.kept
        return [kept[i] for i in (self.positions if positions is None else positions)
                if i in kept]

    def agent(self, positions: Sequence[int] | None = None) -> list[int]:
        """The positions of the agent lane's rows: lane "agent", or none (a row
        whose lane is null is another: it is kept whole, and says so)."""
        lane, kept = self.texts("lane"), self.kept
        codes, agent, null = lane.codes, lane.code("agent"), lane.code(None)
        return [i for i in (self.positions if positions is None else positions)
                if codes[i] == agent or (codes[i] == null and (
                    i not in kept or kept[i].get("lane", "agent") == "agent"))]
