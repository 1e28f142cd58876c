"""Sums of many columns over the same draws of their clusters, as a bootstrap
takes them: each column's drawn values summed exactly and rounded once (what
:func:`math.fsum` gives, whatever the order of the draws), all columns in one
addition per draw.

A finite, non-negative float is an integer times a power of two. A column's
values are written as integers in units of its smallest such power, so that its
drawn sum is an integer sum, exact. Those integers are packed side by side into
one integer per cluster, each column in a field wide enough that its sum never
carries into the next: one addition of the packed integers per draw sums every
column, and each field, divided by its unit, is the correctly rounded sum. A
column that cannot be packed (a negative or non-finite value, or one too wide to
pack) is summed by :func:`math.fsum`: the same number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

MAX_FIELD_BITS = 512
"""Wider fields (a column of values 2**-500 and 2**500 apart) are summed by fsum."""


def _exact(column: Sequence[float]) -> tuple[list[int], int] | None:
    """The column as integers in units of 1/scale (a power of two), and scale;
    None when a value is negative (or -0.0) or not finite."""
    ratios = []
    for value in column:
        if (type(value) is not float or not math.isfinite(value)
                or math.copysign(1.0, value) < 0):
            return None
        ratios.append(value.as_integer_ratio())
    scale = max((denominator for _, denominator in ratios), default=1)
    return [numerator * (scale // denominator) for numerator, denominator in ratios], scale


class DrawnSums:
    """The columns (one value per cluster each, all of one length) to be summed
    over draws of cluster indices."""

    def __init__(self, columns: Sequence[Sequence[float]]) -> None:
        size = len(columns[0]) if columns else 0
        self.columns = [tuple(column) for column in columns]
        self.loose: list[int] = []
        """Columns summed by fsum."""
        self.fields: list[tuple[int, int, int, int]] = []
        """(column, shift, mask, scale) of each packed column."""
        integers: list[list[int]] = []
        shift = 0
        for position, column in enumerate(self.columns):
            exact = _exact(column)
            width = (max(exact[0], default=0) * max(size, 1)).bit_length() if exact else 0
            if exact is None or width > MAX_FIELD_BITS:
                self.loose.append(position)
                continue
            width = max(1, width)
            self.fields.append((position, shift, (1 << width) - 1, exact[1]))
            integers.append(exact[0])
            shift += width
        self.packed = tuple(
            sum(values[cluster] << field_shift
                for values, (_, field_shift, _, _) in zip(integers, self.fields, strict=True))
            for cluster in range(size)) if self.fields else ()

    def sums(self, drawn: Sequence[int]) -> list[float]:
        """Each column's sum over the drawn clusters (math.fsum's), in column order."""
        take: Callable[[Sequence[Any]], tuple[Any, ...]] = (
            itemgetter(*drawn) if len(drawn) > 1 else _first_only(drawn[0]))
        sums = [0.0] * len(self.columns)
        for position in self.loose:
            sums[position] = math.fsum(take(self.columns[position]))
        if self.fields:
            self._unpack(sum(take(self.packed)), sums)
        return sums

    def unpacked(self, total: int) -> list[float]:
        """Each column's sum, from the sum of the drawn clusters' packed
        integers (every column packed: no loose one)."""
        sums = [0.0] * len(self.columns)
        self._unpack(total, sums)
        return sums

    def _unpack(self, total: int, sums: list[float]) -> None:
        for position, shift, mask, scale in self.fields:
            sums[position] = ((total >> shift) & mask) / scale  # correctly rounded


def _first_only(index: int) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """What itemgetter of many indices gives (a tuple), for one index."""
    return lambda column: (column[index],)
