"""Medians of many groups of one column at once (numpy): what
:func:`statistics.median` gives of each group's values, to the bit.

A group is a list of positions into the column; a NaN there is a missing value,
left out. The groups are laid out once (:class:`Groups`) and any number of
columns take their medians through that layout: each group's values gathered
into a row of a matrix padded with NaN, and the rows partitioned around their
middle one or two places (:func:`numpy.partition`; sorted stably instead when a
-0.0 is among the values, so that of -0.0 and 0.0 the one :func:`sorted` would
put in the middle is read). Groups are padded only to the size of others
of about their size (sizes within a factor of two share a matrix), so a sweep
with one task of many runs does not pad every other task to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

Column = npt.NDArray[np.float64]


class Medians(NamedTuple):
    """Of each group: the median of its known values (NaN where it has none),
    and how many of its values are missing (NaN)."""

    medians: Column
    missing: npt.NDArray[np.intp]

    def values(self, *, all_known: bool = False) -> list[float | None]:
        """:meth:`median` of every group."""
        found = self.medians.copy()
        if all_known:
            found[self.missing > 0] = np.nan
        return [None if value != value else value for value in found.tolist()]

    def median(self, group: int, *, all_known: bool = False) -> float | None:
        """The group's median as a number, None where it has no known value or
        (``all_known``) any missing one."""
        value = float(self.medians[group])
        if value != value or (all_known and self.missing[group]):
            return None
        return value


class Groups:
    """Groups of positions into a column (an empty group has no median)."""

    def __init__(self, groups: Sequence[Sequence[int]]) -> None:
        self.count = len(groups)
        self.sizes = np.fromiter(map(len, groups), dtype=np.intp, count=len(groups))
        by_size: dict[int, list[int]] = {}
        for group, members in enumerate(groups):
            if members:
                by_size.setdefault(len(members).bit_length(), []).append(group)
        self.layouts: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]] = []
        for found in by_size.values():
            width = max(len(groups[group]) for group in found)
            index = np.full((len(found), width), -1, dtype=np.intp)  # -1: the padding
            for row, group in enumerate(found):
                index[row, :len(groups[group])] = groups[group]
            self.layouts.append((np.array(found, dtype=np.intp), index))

    def medians(self, column: Column) -> Medians:
        """Each group's median of the column's values at its positions."""
        padded = np.append(column, np.nan)  # position -1: the padding, missing
        medians = np.full(self.count, np.nan)
        missing = np.zeros(self.count, dtype=np.intp)
        for found, index in self.layouts:
            rows = row_medians(padded[index])
            medians[found] = rows.medians
            missing[found] = self.sizes[found] - (index.shape[1] - rows.missing)
        return Medians(medians, missing)


def row_medians(values: Column) -> Medians:
    """Each row's median of its known values (NaN where it has none), and how
    many of its values are missing (NaN): statistics.median's, to the bit."""
    known = values.shape[1] - np.isnan(values).sum(axis=1)
    low, high = _middles(values, known)
    with np.errstate(over="ignore", invalid="ignore"):
        middle = np.where(known % 2 == 1, low, (low + high) / 2)
    middle[known == 0] = np.nan
    return Medians(middle, values.shape[1] - known)


def _middles(values: Column, known: npt.NDArray[np.intp]) -> tuple[Column, Column]:
    """Of each row (its NaN last, ``known`` values before them): the values at
    ``(known - 1) // 2`` and ``known // 2`` in sorted order. Rows of one count
    are partitioned around those two places at once; when a -0.0 is among the
    values, every row is sorted instead, stably, so that of -0.0 and 0.0 tied at
    the middle the one :func:`sorted` would put there is read."""
    rows = np.arange(len(values))
    if np.any(np.signbit(values) & (values == 0)):
        ordered = np.sort(values, axis=1, kind="stable")  # NaN last
        last = values.shape[1] - 1
        return (ordered[rows, np.maximum(known - 1, 0) // 2],
                ordered[rows, np.minimum(known // 2, last)])
    low, high = np.full(len(values), np.nan), np.full(len(values), np.nan)
    for count in np.unique(known).tolist():
        if count == 0:
            continue
        mine = rows[known == count]
        places = sorted({(count - 1) // 2, count // 2})
        parted = np.partition(values[mine], places, axis=1)  # NaN last
        low[mine], high[mine] = parted[:, places[0]], parted[:, places[-1]]
    return low, high


class DrawnMedians:
    """Medians of draws from one column (a bootstrap's resamples of a stratum:
    rows of indices into it), each row's as :func:`row_medians` gives it, to
    the bit. The column is sorted once; a row's median is then the value at
    the middle of its drawn ranks (integers: sorted faster than the values,
    and never NaN). A column with a -0.0 is drawn from as values instead (of
    -0.0 and 0.0 tied at the middle, the one sorted() puts there depends on the
    order they were drawn in)."""

    def __init__(self, column: Column) -> None:
        self.column = column
        self.by_value = bool(np.any(np.signbit(column) & (column == 0)))
        order = np.argsort(column, kind="stable")  # NaN last
        self.ordered = column[order]
        self.known = int(np.count_nonzero(~np.isnan(column)))
        # ranks as 32-bit integers: the narrowest width numpy's vectorized sort
        # serves on every x86 host (16-bit ones only with AVX-512: without it,
        # 20 times slower, and the promotion gate's 800 sorts took 3 s)
        kind = np.int32 if len(column) <= np.iinfo(np.int32).max else np.intp
        self.ranks = np.empty(len(column), dtype=kind)
        self.ranks[order] = np.arange(len(column), dtype=kind)

    def of(self, drawn: npt.NDArray[np.intp], *, all_known: bool = False) -> Column:
        """Each row's median of the known values it drew (NaN where it drew
        none, or, ``all_known``, where it drew a missing one)."""
        rows, size = drawn.shape
        if self.by_value:
            found = row_medians(self.column[drawn])
            middle, missing = found.medians, found.missing
        else:
            ranks = np.take(self.ranks, drawn)
            ranks.sort(axis=1)  # a row's drawn values, in order
            if self.known == size:  # every row's middle at the same places
                below = self.ordered[ranks[:, (size - 1) // 2]]
                if size % 2:
                    return below
                with np.errstate(over="ignore", invalid="ignore"):
                    return (below + self.ordered[ranks[:, size // 2]]) / 2
            known = (ranks < self.known).sum(axis=1)  # the missing ones rank last
            every = np.arange(rows)
            below = self.ordered[ranks[every, np.maximum(known - 1, 0) // 2]]
            above = self.ordered[ranks[every, np.minimum(known // 2, size - 1)]]
            with np.errstate(over="ignore", invalid="ignore"):
                middle = np.where(known % 2 == 1, below, (below + above) / 2)
            middle[known == 0] = np.nan
            missing = size - known
        if all_known:
            middle[missing > 0] = np.nan
        return middle
