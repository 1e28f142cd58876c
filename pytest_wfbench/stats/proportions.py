"""Resolve rates: the Wilson interval for one rate, and for two rates measured on
the same pairs (task, run) the exact McNemar test and Newcombe's interval for
their difference."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from pytest_wfbench.stats.interval import Interval, z_value


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Interval:
    """Wilson's score interval for a binomial proportion (Wilson 1927; method 3 of
    Newcombe 1998, Statist. Med. 17:857-872). It keeps close to its nominal
    coverage for small samples and rates near 0 or 1, where the textbook Wald
    interval collapses (0/n gives [0, 0])."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"a proportion needs 0 <= successes <= trials and trials >= 1, "
                         f"not {successes}/{trials}")
    z = z_value(confidence)
    z2 = z * z
    denominator = trials + z2
    centre = (successes + z2 / 2.0) / denominator
    half = z * math.sqrt(successes * (trials - successes) / trials + z2 / 4.0) / denominator
    return Interval(max(0.0, centre - half), min(1.0, centre + half), confidence)


@dataclass(frozen=True)
class PairedTable:
    """Outcomes of two arms on the same pairs: ``both`` resolved, ``first_only``,
    ``second_only``, ``neither`` (a, b, c, d of a paired 2x2 table)."""

    both: int
    first_only: int
    second_only: int
    neither: int

    def __post_init__(self) -> None:
        if min(self.both, self.first_only, self.second_only, self.neither) < 0:
            raise ValueError(f"counts of pairs cannot be negative: {self}")

    @property
    def pairs(self) -> int:
        return self.both + self.first_only + self.second_only + self.neither

    @property
    def discordant(self) -> int:
        return self.first_only + self.second_only

    @property
    def first_rate(self) -> float:
        return (self.both + self.first_only) / self.pairs

    @property
    def second_rate(self) -> float:
        return (self.both + self.second_only) / self.pairs

    @property
    def difference(self) -> float:
        """The first arm's rate minus the second's: (b - c) / n."""
        return (self.first_only - self.second_only) / self.pairs


def exact_mcnemar(first_only: int, second_only: int) -> float:
    """Two-sided p-value of the exact (conditional) McNemar test: under no
    difference, each of the n = b + c discordant pairs goes either way with
    probability 1/2, so it is the two-sided binomial test of b in Bin(n, 1/2):
    p = min(1, 2 * P(X <= min(b, c))). Computed exactly, in fractions."""
    if first_only < 0 or second_only < 0:
        raise ValueError(f"discordant counts cannot be negative: {first_only}, {second_only}")
    n = first_only + second_only
    if n == 0:
        return 1.0
    # C(n, i + 1) = C(n, i) * (n - i) / (i + 1), exactly: one small step per term
    # where math.comb would start over (thousands of discordant pairs, each term
    # a thousand digits long).
    term = tail = 1
    for i in range(min(first_only, second_only)):
        term = term * (n - i) // (i + 1)
        tail += term
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def paired_difference_interval(table: PairedTable, confidence: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval for the difference of two paired proportions
    (method 10 of Newcombe 1998, Statist. Med. 17:2635-2650; the "square-and-add"
    interval that Fagerland, Lydersen and Laake 2014, Statist. Med. 33:2850-2875,
    recommend for small samples). The Wilson intervals of both rates are combined,
    with the correlation of the pairs estimated by phi, its numerator ad - bc
    shrunk by n/2 towards zero when positive, as Newcombe gives it."""
    n = table.pairs
    if n < 1:
        raise ValueError("a paired difference needs at least one pair")
    a, b, c, d = table.both, table.first_only, table.second_only, table.neither
    p1, p2 = table.first_rate, table.second_rate
    first = wilson_interval(a + b, n, confidence)
    second = wilson_interval(a + c, n, confidence)
    phi = _phi(a, b, c, d)
    below_first, above_first = p1 - first.low, first.high - p1
    below_second, above_second = p2 - second.low, second.high - p2
    low = table.difference - math.sqrt(max(0.0, below_first ** 2 + above_second ** 2
                                            - 2.0 * phi * below_first * above_second))
    high = table.difference + math.sqrt(max(0.0, below_second ** 2 + above_first ** 2
                                             - 2.0 * phi * below_second * above_first))
    return Interval(max(-1.0, low), min(1.0, high), confidence)


def _phi(a: int, b: int, c: int, d: int) -> float:
    n = a + b + c + d
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    cross = a * d - b * c
    if cross > n / 2:
        return (cross - n / 2) / math.sqrt(margins)
    if cross >= 0:
        return 0.0
    return cross / math.sqrt(margins)
