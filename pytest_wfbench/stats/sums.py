"""Sums of many columns over the same draws of their clusters, as a bootstrap
takes them: each column's drawn values summed exactly and rounded once (what
:func:`math.fsum` gives, whatever the order of the draws), for a batch of
resamples at once (numpy).

A finite, non-negative float is an integer times a power of two. A column's
values are written as integers in units of its smallest such power, so that its
drawn sum is an integer sum, exact. Each integer is cut into limbs of a few bits
each, few enough that a resample's sum of one limb over every draw stays below
2**53: a float64 holds it exactly, in whatever order it is added. A batch's sums
of every limb are then one matrix product, the counts of each cluster drawn in
each resample times the limbs: exact. A column's limbs, shifted back together,
divided by its unit, are the correctly rounded sum. A column that cannot be
written so (a negative or non-finite value, or one too wide) is summed by
:func:`math.fsum`: the same number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MAX_FIELD_BITS = 512
"""Wider columns (values 2**-500 and 2**500 apart) are summed by fsum."""
FLOAT_SCALE = 2**1000
"""A unit a float64 holds (so a one-limb sum is divided in float64)."""

Draws = npt.NDArray[np.intp]
"""A batch of resamples' drawn cluster indices: one row per resample."""


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
        self.size = len(columns[0]) if columns else 0
        self.columns = [tuple(column) for column in columns]
        self.bits = 53 - self.size.bit_length()
        """Of a limb: a sum of ``size`` of them stays below 2**53."""
        self.loose: list[int] = []
        """Columns summed by fsum."""
        self.fields: list[tuple[int, int, int, int]] = []
        """(column, first limb, limbs, scale) of each column summed exactly."""
        limbs: list[list[float]] = []
        mask = (1 << self.bits) - 1
        for position, column in enumerate(self.columns):
            exact = _exact(column)
            width = max(exact[0], default=0).bit_length() if exact else 0
            if exact is None or width > MAX_FIELD_BITS:
                self.loose.append(position)
                continue
            count = max(1, -(-width // self.bits))
            self.fields.append((position, len(limbs), count, exact[1]))
            limbs += [[float((value >> (self.bits * limb)) & mask) for value in exact[0]]
                      for limb in range(count)]
        self.limbs = np.array(limbs, dtype=np.float64).T.copy() if limbs else None
        """size x limbs."""

    def sums(self, draws: Draws) -> npt.NDArray[np.float64]:
        """Each resample's sum of each column over its drawn clusters (math.fsum's):
        resamples x columns."""
        resamples = len(draws)
        out = np.zeros((resamples, len(self.columns)))
        if self.limbs is not None:
            offsets = (np.arange(resamples, dtype=np.intp) * self.size)[:, None]
            counts = np.bincount((draws + offsets).ravel(), minlength=resamples * self.size)
            limb_sums = counts.reshape(resamples, self.size).astype(np.float64) @ self.limbs
            for position, first, count, scale in self.fields:
                if count == 1 and scale <= FLOAT_SCALE:  # exact, and divided by a power of 2
                    out[:, position] = limb_sums[:, first] / float(scale)
                    continue
                if count == 2 and scale <= FLOAT_SCALE:
                    # high * 2**bits is exact, their sum rounded once (IEEE), and
                    # the quotient exact: a sum that is not 0 is at least 1/scale,
                    # so never subnormal.
                    high = limb_sums[:, first + 1] * float(1 << self.bits)
                    out[:, position] = (high + limb_sums[:, first]) / float(scale)
                    continue
                parts = limb_sums[:, first:first + count].astype(np.int64).tolist()
                out[:, position] = [
                    sum(limb << (self.bits * k) for k, limb in enumerate(row)) / scale
                    for row in parts]
        for position in self.loose:
            column = np.array(self.columns[position], dtype=np.float64)
            out[:, position] = [_fsum(drawn) for drawn in column[draws].tolist()]
        return out


def _fsum(values: list[float]) -> float:
    """math.fsum's sum; NaN where it has none (inf and -inf drawn together, or
    a sum past the largest float): a resample with no sum has no statistic."""
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        return math.nan
