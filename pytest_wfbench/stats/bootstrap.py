"""The seeded percentile bootstrap: whole clusters (tasks, with their runs)
resampled with replacement, so that runs of one task, which share its difficulty,
are never treated as independent evidence (Davison and Hinkley 1997, section 3.8).
A given seed always gives the same interval, so a report re-renders byte for byte."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, repeat
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from pytest_wfbench.stats.interval import Interval
from pytest_wfbench.stats.medians import DrawnMedians
from pytest_wfbench.stats.sums import DrawnSums, Draws

T = TypeVar("T")

DEFAULT_SEED = 20261130
DEFAULT_RESAMPLES = 2000


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between order
    statistics (Hyndman and Fan's definition 7, numpy's default)."""
    if not ordered:
        raise ValueError("the percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, not {q}")
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def stratified_bootstrap(
    strata: Sequence[Sequence[T]],
    statistic: Callable[[list[list[T]]], float | None],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> Interval | None:
    """Percentile interval of ``statistic`` over resamples that draw, from each
    stratum independently, as many members as it has, with replacement.

    A resample whose statistic is undefined (None, or not finite) is left out;
    when more than half are, there is no interval (None)."""
    if not strata or any(not stratum for stratum in strata):
        raise ValueError("every stratum of a bootstrap needs at least one member")
    if resamples < 1:
        raise ValueError(f"a bootstrap needs at least one resample, not {resamples}")
    rng = random.Random(seed)
    indices = [range(len(stratum)) for stratum in strata]
    values: list[float] = []
    for _ in range(resamples):
        drawn = [[stratum[i] for i in rng.choices(index, k=len(index))]
                 for stratum, index in zip(strata, indices, strict=True)]
        value = statistic(drawn)
        if value is not None and math.isfinite(value):
            values.append(value)
    return percentile_interval(values, resamples, confidence)


def percentile_interval(values: list[float], resamples: int,
                        confidence: float) -> Interval | None:
    """The interval of a bootstrap's defined values (sorted here), None when more
    than half of its resamples were undefined."""
    if 2 * len(values) < resamples:
        return None
    values.sort()
    alpha = 1.0 - confidence
    return Interval(percentile(values, alpha / 2.0), percentile(values, 1.0 - alpha / 2.0),
                    confidence)


def sorted_percentile_interval(ordered: npt.NDArray[np.float64], resamples: int,
                               confidence: float) -> Interval | None:
    """:func:`percentile_interval` of values already sorted (numpy's): the same
    interval, the same arithmetic on its order statistics, as floats."""
    if 2 * len(ordered) < resamples:
        return None
    alpha = 1.0 - confidence

    def quantile(q: float) -> float:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"a quantile is between 0 and 1, not {q}")
        position = q * (len(ordered) - 1)
        below = math.floor(position)
        low, high = float(ordered[below]), float(ordered[min(below + 1, len(ordered) - 1)])
        return low + (high - low) * (position - below)

    return Interval(quantile(alpha / 2.0), quantile(1.0 - alpha / 2.0), confidence)


def cluster_bootstrap(
    clusters: Sequence[T],
    statistic: Callable[[list[T]], float | None],
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    min_clusters: int = 2,
) -> Interval | None:
    """Percentile interval of ``statistic`` over resamples of whole clusters.

    Fewer than ``min_clusters`` clusters give no interval (None): one task
    resampled is always itself, and a zero-width interval would claim certainty."""
    if len(clusters) < max(1, min_clusters):
        return None
    return stratified_bootstrap([clusters], lambda drawn: statistic(drawn[0]), seed=seed,
                                resamples=resamples, confidence=confidence)


def resampled_indices(size: int, *, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES) -> Iterator[list[int]]:
    """The indices :func:`cluster_bootstrap` draws for ``size`` clusters, one
    list per resample: the same random stream, so that a statistic computed
    from them is the same number, draw for draw."""
    if resamples < 1:
        raise ValueError(f"a bootstrap needs at least one resample, not {resamples}")
    draw, floor = random.Random(seed).random, math.floor
    for _ in range(resamples):
        # rng.choices(range(size), k=size), as random.py writes it, inlined:
        # the same draws from the same stream, without a call per resample.
        yield [floor(draw() * size) for _ in repeat(None, size)]


BATCH_DRAWS = 1 << 18
"""Draws taken in one batch of resamples: its matrices (the draws, each
resample's counts) are a few of these wide, 2 MiB each (at 1 << 20, the
bootstrap of 1,000 tasks took 26 MB at once; the draws are the same)."""


def seed_words(seed: int) -> list[int]:
    """The seed as :class:`random.Random` keys its generator: the 32-bit words
    of its absolute value, lowest first (numpy's legacy MT19937 keyed with
    them gives the same stream)."""
    words, rest = [], abs(seed)
    while True:
        words.append(rest & 0xFFFFFFFF)
        rest >>= 32
        if not rest:
            return words


def resampled_batches(size: int, *, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES) -> Iterator[Draws]:
    """The indices :func:`resampled_indices` draws, a batch of resamples at a
    time (one row each): the same random stream and the same arithmetic,
    ``floor(random() * size)``, in numpy."""
    if resamples < 1:
        raise ValueError(f"a bootstrap needs at least one resample, not {resamples}")
    stream = np.random.RandomState(seed_words(seed))
    batch = max(1, BATCH_DRAWS // max(size, 1))
    for first in range(0, resamples, batch):
        rows = min(batch, resamples - first)
        drawn = np.floor(stream.random_sample(rows * size) * size).astype(np.intp)
        yield drawn.reshape(rows, size)


def stratified_batches(sizes: Sequence[int], *, seed: int = DEFAULT_SEED,
                       resamples: int = DEFAULT_RESAMPLES,
                       drawn: npt.NDArray[np.float64] | None = None) -> Iterator[list[Draws]]:
    """The indices :func:`stratified_bootstrap` draws from strata of these
    sizes, a batch of resamples at a time: one matrix per stratum (a row per
    resample). The same random stream, in the same order (each resample draws
    from each stratum in turn), and the same arithmetic, in numpy. ``drawn``:
    the stream's first numbers of this seed, already taken (at least as many
    as the resamples draw: :func:`random_stream`)."""
    if resamples < 1:
        raise ValueError(f"a bootstrap needs at least one resample, not {resamples}")
    if not sizes or min(sizes) < 1:
        raise ValueError("every stratum of a bootstrap needs at least one member")
    total = sum(sizes)
    if drawn is not None and len(drawn) < resamples * total:
        raise ValueError("fewer numbers drawn than the resamples take")
    stream = np.random.RandomState(seed_words(seed))
    starts = [0, *accumulate(sizes)]
    batch = max(1, BATCH_DRAWS // total)
    for first in range(0, resamples, batch):
        rows = min(batch, resamples - first)
        drawn_now = (stream.random_sample(rows * total) if drawn is None
                     else drawn[first * total:(first + rows) * total]).reshape(rows, total)
        # floor(random() * size): a non-negative product, so truncated it is floored
        yield [(drawn_now[:, start:start + size] * size).astype(np.intp)
               for start, size in zip(starts, sizes, strict=False)]


SHARED_STREAM = 1 << 22
"""Numbers of a seed's stream drawn once for many bootstraps (32 MiB)."""


def random_stream(seed: int, count: int) -> npt.NDArray[np.float64]:
    """The first ``count`` numbers ``random.Random(seed).random()`` gives."""
    return np.random.RandomState(seed_words(seed)).random_sample(count)


def stratified_median_intervals(
    many: Sequence[Sequence[Sequence[float]]],
    statistic: Callable[[list[npt.NDArray[np.float64]]], npt.NDArray[np.float64]],
    *,
    all_known: bool = False,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
) -> list[Interval | None]:
    """For each of ``many`` strata (the values of each stratum; NaN: missing),
    :func:`stratified_bootstrap` of a statistic of the strata's medians, for a
    batch of resamples at once: each resample's median of what it drew from
    each stratum (statistics.median's of the known ones; NaN where none is
    known or, ``all_known``, any is missing), and ``statistic`` of those (one
    array per stratum, a value per resample; NaN where undefined). The same
    draws, the same floats, the same interval. Strata of the same sizes (tasks
    with as many runs) draw the same indices from the same seed: drawn once."""
    intervals: list[Interval | None] = [None] * len(many)
    by_sizes: dict[tuple[int, ...], list[int]] = {}
    for position, strata in enumerate(many):
        by_sizes.setdefault(tuple(map(len, strata)), []).append(position)
    # Every bootstrap starts the stream of the same seed: its numbers are drawn
    # once, for all (each takes as many as its resamples draw, from the start).
    most = max((sum(sizes) for sizes in by_sizes), default=0) * resamples
    drawn = random_stream(seed, most) if 0 < most <= SHARED_STREAM else None
    for sizes, positions in by_sizes.items():
        columns = [[DrawnMedians(np.array(stratum, dtype=np.float64)) for stratum in many[p]]
                   for p in positions]
        values: list[list[npt.NDArray[np.float64]]] = [[] for _ in positions]
        for draws in stratified_batches(sizes, seed=seed, resamples=resamples, drawn=drawn):
            for drawable, found in zip(columns, values, strict=True):
                value = statistic([column.of(drawn, all_known=all_known)
                                   for column, drawn in zip(drawable, draws, strict=True)])
                found.append(value[np.isfinite(value)])
        for position, found in zip(positions, values, strict=True):
            intervals[position] = sorted_percentile_interval(
                np.sort(np.concatenate(found)), resamples, confidence)
    return intervals


def ratio_of_sums_intervals(
    columns: Sequence[tuple[Sequence[float], Sequence[float]]], *, seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES, confidence: float = 0.95, min_clusters: int = 2,
) -> list[Interval | None]:
    """For each ``(b, a)`` pair of columns (one value per cluster), the interval
    :func:`cluster_bootstrap` gives of ``(sum(b) - sum(a)) / sum(b) * 100`` (None
    where sum(b) is 0), for all of them at once: columns of one length share
    their draws, and a column shared by several statistics (the baseline's) is
    summed once per resample. Each sum is exact, rounded once (math.fsum's, as
    :func:`pytest_wfbench.aggregate.pooled_saving` takes them): the same floats
    as the statistic over drawn pairs, to the bit."""
    intervals: list[Interval | None] = [None] * len(columns)
    by_size: dict[int, list[int]] = {}
    for position, (b, a) in enumerate(columns):
        if len(b) != len(a):
            raise ValueError("the columns of a statistic need one value per cluster each")
        if len(b) >= max(1, min_clusters):
            by_size.setdefault(len(b), []).append(position)
    for size, positions in by_size.items():
        distinct: dict[tuple[float, ...], int] = {}
        slots = [(distinct.setdefault(tuple(columns[p][0]), len(distinct)),
                  distinct.setdefault(tuple(columns[p][1]), len(distinct))) for p in positions]
        drawn_sums = DrawnSums(list(distinct))
        values: list[list[float]] = [[] for _ in positions]
        for draws in resampled_batches(size, seed=seed, resamples=resamples):
            sums = drawn_sums.sums(draws)
            for (b_slot, a_slot), found in zip(slots, values, strict=True):
                base = sums[:, b_slot]
                with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                    value = (base - sums[:, a_slot]) / base * 100.0
                found += value[(base != 0) & np.isfinite(value)].tolist()
        for position, found in zip(positions, values, strict=True):
            intervals[position] = percentile_interval(found, resamples, confidence)
    return intervals
