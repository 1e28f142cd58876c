"""Sums of many columns over the same draws of their clusters, as a bootstrap
takes them: each column's drawn values added in draw order, the same floats to
the bit, in a fraction of the additions.

A column of half-integers (what the median of integer counts is: tokens,
turns) whose every partial sum stays below 2**53 is summed exactly by floats
in any order, so its sum is an integer sum. Such columns are packed side by
side into one integer per cluster, each in a field wide enough that its sum
never carries into the next: one addition of those integers per draw sums them
all. Other columns (costs, durations) are summed as floats, in draw order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

SCALE = 2
"""Packed values are integers once doubled (the median of two integers is one)."""
EXACT_BELOW = 2**53
"""Doubled sums below this are exact in a float, whatever the order of addition."""


def _packable(column: Sequence[float], draws: int) -> int | None:
    """The largest doubled value of a column whose drawn sums are exact, or None."""
    largest = 0
    for value in column:
        if type(value) is not float or not math.isfinite(value) or value < 0:
            return None
        doubled = value * SCALE
        if not doubled.is_integer():
            return None
        largest = max(largest, int(doubled))
    return largest if largest * draws < EXACT_BELOW else None


class DrawnSums:
    """The columns (one value per cluster each, all of one length) to be summed
    over draws of cluster indices."""

    def __init__(self, columns: Sequence[Sequence[float]]) -> None:
        size = len(columns[0]) if columns else 0
        self.columns = [tuple(column) for column in columns]
        self.loose: list[int] = []
        """Columns summed as floats."""
        self.fields: list[tuple[int, int, int]] = []
        """(column, shift, mask) of each packed column."""
        shift = 0
        for position, column in enumerate(self.columns):
            largest = _packable(column, size)
            if largest is None:
                self.loose.append(position)
                continue
            width = max(1, (largest * size).bit_length())
            self.fields.append((position, shift, (1 << width) - 1))
            shift += width
        self.packed = tuple(
            sum(int(self.columns[position][cluster] * SCALE) << field_shift
                for position, field_shift, _ in self.fields)
            for cluster in range(size)) if self.fields else ()

    def sums(self, drawn: Sequence[int]) -> list[float]:
        """Each column's sum over the drawn clusters, in column order."""
        take: Callable[[Sequence[Any]], tuple[Any, ...]] = (
            itemgetter(*drawn) if len(drawn) > 1 else _first_only(drawn[0]))
        sums = [0.0] * len(self.columns)
        for position in self.loose:
            sums[position] = sum(take(self.columns[position]))
        if self.fields:
            total: int = sum(take(self.packed))
            for position, shift, mask in self.fields:
                sums[position] = ((total >> shift) & mask) / SCALE
        return sums


def _first_only(index: int) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """What itemgetter of many indices gives (a tuple), for one index."""
    return lambda column: (column[index],)
