"""The statistics, against published values and values computed independently
here (enumeration with math.comb and fractions, the defining equations)."""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction
from statistics import NormalDist

import pytest

from pytest_wfbench.stats import (
    Interval,
    PairedTable,
    cluster_bootstrap,
    exact_mcnemar,
    observations_needed,
    paired_difference_interval,
    pairs_needed,
    pass_at_k,
    pass_hat_k,
    percentile,
    sample_size,
    stratified_bootstrap,
    wilson_interval,
    z_value,
)

# Newcombe (1998), "Two-sided confidence intervals for the single proportion",
# Statist. Med. 17:857-872, Table II, method 3 (score, no continuity correction);
# and 13/16 from Fagerland, Lydersen and Laake (2017), Statistical Analysis of
# Contingency Tables, chapter 2.
PUBLISHED_WILSON = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (13, 16, 0.5699, 0.9341),
]


@pytest.mark.parametrize(("successes", "trials", "low", "high"), PUBLISHED_WILSON)
def test_wilson_interval_matches_published_values(successes: int, trials: int, low: float,
                                                  high: float) -> None:
    interval = wilson_interval(successes, trials)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


@pytest.mark.parametrize(("successes", "trials"), [(1, 3), (5, 9), (17, 40), (2, 2)])
def test_wilson_bounds_solve_the_score_equation(successes: int, trials: int) -> None:
    """Wilson's bounds are the rates p at which |p_hat - p| / sqrt(p (1 - p) / n) = z."""
    z = NormalDist().inv_cdf(0.975)
    p_hat = successes / trials
    interval = wilson_interval(successes, trials)
    for bound in (interval.low, interval.high):
        if 0.0 < bound < 1.0:
            score = abs(p_hat - bound) / math.sqrt(bound * (1 - bound) / trials)
            assert score == pytest.approx(z, rel=1e-9)
    assert interval.contains(p_hat)


def test_wilson_needs_a_trial_and_narrows_with_confidence() -> None:
    with pytest.raises(ValueError):
        wilson_interval(0, 0)
    with pytest.raises(ValueError):
        wilson_interval(4, 3)
    wide, narrow = wilson_interval(3, 10, 0.99), wilson_interval(3, 10, 0.80)
    assert wide.low < narrow.low and narrow.high < wide.high
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)


def minimum_likelihood_p(b: int, c: int) -> Fraction:
    """Two-sided binomial p-value by enumeration: the total probability of every
    split of the discordant pairs no more likely than the observed one."""
    n = b + c
    pmf = [Fraction(math.comb(n, i), 2 ** n) for i in range(n + 1)]
    return sum((p for p in pmf if p <= pmf[b]), Fraction(0))


def test_exact_mcnemar_matches_published_values() -> None:
    # Fagerland, Lydersen and Laake (2014), Statist. Med. 33:2850-2875, and their
    # 2017 book: Cavo et al. (b = 6, c = 16), P = 0.052479; Bentur et al.
    # (b = 1, c = 7), P = 0.0703; the exact binomial test of 13 of 16, P = 0.02127.
    assert round(exact_mcnemar(6, 16), 6) == 0.052479
    assert round(exact_mcnemar(1, 7), 4) == 0.0703
    assert round(exact_mcnemar(13, 3), 5) == 0.02127


def test_exact_mcnemar_equals_enumeration() -> None:
    for b, c in itertools.product(range(13), repeat=2):
        expected = 1.0 if b + c == 0 else float(minimum_likelihood_p(b, c))
        assert exact_mcnemar(b, c) == pytest.approx(expected, rel=1e-12), (b, c)
    assert exact_mcnemar(5, 5) == 1.0
    assert exact_mcnemar(0, 10) == pytest.approx(2 / 1024)


def test_paired_difference_interval_matches_published_value() -> None:
    # Cavo et al. (2012) in Fagerland, Lydersen and Laake (2017), chapter 8: the
    # Newcombe square-and-add interval, estimate -0.0621 (95% CI -0.1186 to -0.0046).
    table = PairedTable(both=59, first_only=6, second_only=16, neither=80)
    interval = paired_difference_interval(table)
    assert round(table.difference, 4) == -0.0621
    assert (round(interval.low, 4), round(interval.high, 4)) == (-0.1186, -0.0046)


def test_paired_difference_interval_by_its_definition() -> None:
    """Newcombe's method 10 from the two Wilson intervals, written out here with
    phi's corrected numerator, for tables where phi is 0, positive and negative."""
    for a, b, c, d in [(10, 3, 1, 6), (2, 5, 5, 2), (30, 1, 2, 30), (0, 4, 4, 0), (1, 1, 7, 12)]:
        n = a + b + c + d
        l1, u1 = (wilson_interval(a + b, n).low, wilson_interval(a + b, n).high)
        l2, u2 = (wilson_interval(a + c, n).low, wilson_interval(a + c, n).high)
        p1, p2 = (a + b) / n, (a + c) / n
        cross = a * d - b * c
        margins = math.sqrt((a + b) * (c + d) * (a + c) * (b + d))
        numerator = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
        phi = numerator / margins if margins else 0.0
        low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2
                                  - 2 * phi * (p1 - l1) * (u2 - p2))
        high = p1 - p2 + math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2
                                   - 2 * phi * (p2 - l2) * (u1 - p1))
        interval = paired_difference_interval(PairedTable(a, b, c, d))
        assert (interval.low, interval.high) == pytest.approx((low, high), rel=1e-12)


def test_paired_difference_interval_is_antisymmetric_and_bounded() -> None:
    for a, b, c, d in [(0, 0, 0, 5), (0, 9, 0, 0), (3, 0, 4, 1), (2, 3, 1, 4)]:
        forward = paired_difference_interval(PairedTable(a, b, c, d))
        backward = paired_difference_interval(PairedTable(a, c, b, d))
        assert (forward.low, forward.high) == pytest.approx((-backward.high, -backward.low))
        assert -1.0 <= forward.low <= PairedTable(a, b, c, d).difference <= forward.high <= 1.0
    with pytest.raises(ValueError):
        paired_difference_interval(PairedTable(0, 0, 0, 0))


@pytest.mark.parametrize("runs", range(1, 9))
def test_pass_at_k_and_pass_hat_k_equal_enumeration_of_k_run_subsets(runs: int) -> None:
    for resolved in range(runs + 1):
        outcomes = [True] * resolved + [False] * (runs - resolved)
        for k in range(1, runs + 1):
            subsets = list(itertools.combinations(outcomes, k))
            assert pass_at_k(runs, resolved, k) == pytest.approx(
                sum(any(s) for s in subsets) / len(subsets), abs=1e-12)
            assert pass_hat_k(runs, resolved, k) == pytest.approx(
                sum(all(s) for s in subsets) / len(subsets), abs=1e-12)


def test_pass_at_k_equals_chen_et_al_numerically_stable_form() -> None:
    # Chen et al. (2021), figure 3: 1 - prod(1 - k / arange(n - c + 1, n + 1)).
    for n, c, k in [(200, 13, 1), (200, 13, 10), (200, 13, 100), (20, 0, 5), (20, 19, 2)]:
        stable = 1.0 if n - c < k else 1.0 - math.prod(1.0 - k / i
                                                        for i in range(n - c + 1, n + 1))
        assert pass_at_k(n, c, k) == pytest.approx(stable, rel=1e-9)
    assert pass_at_k(10, 3, 1) == pass_hat_k(10, 3, 1) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


def test_percentile_is_hyndman_fan_definition_7() -> None:
    values = sorted([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    quartiles = statistics.quantiles(values, n=4, method="inclusive")
    assert [percentile(values, q) for q in (0.25, 0.5, 0.75)] == pytest.approx(quartiles)
    assert percentile(values, 0.0) == 1.0 and percentile(values, 1.0) == 9.0
    assert percentile([7.0], 0.3) == 7.0


def test_bootstrap_is_reproducible_for_a_seed() -> None:
    clusters = [1.3, 4.1, 2.7, 8.9, 5.2, 7.6, 0.4, 3.3]
    mean = statistics.fmean
    first = cluster_bootstrap(clusters, mean, seed=7)
    assert first == cluster_bootstrap(clusters, mean, seed=7)
    assert first != cluster_bootstrap(clusters, mean, seed=8)
    assert first is not None and first.contains(mean(clusters))


def test_bootstrap_resamples_whole_clusters() -> None:
    """A task's runs travel together: every resampled cluster is one of the
    originals, intact."""
    clusters = [("a", (1.0, 2.0)), ("b", (3.0,)), ("c", (4.0, 5.0, 6.0))]
    seen: set[tuple[str, tuple[float, ...]]] = set()

    def statistic(drawn: list[tuple[str, tuple[float, ...]]]) -> float:
        assert len(drawn) == len(clusters)
        for cluster in drawn:
            assert cluster in clusters
            seen.add(cluster)
        return float(sum(len(runs) for _, runs in drawn))

    interval = cluster_bootstrap(clusters, statistic, resamples=200)
    assert seen == set(clusters)
    assert interval is not None and 3.0 <= interval.low <= interval.high <= 9.0


def test_bootstrap_percentiles_follow_the_exact_bootstrap_distribution() -> None:
    """Three clusters: the 27 equally likely resamples give the mean 0 and the mean
    5 each with probability 1/27 (3.7 %), beyond the 2.5 % tails."""
    interval = cluster_bootstrap([0.0, 1.0, 5.0], statistics.fmean, resamples=4000)
    assert interval == Interval(0.0, 5.0)
    # The bootstrap's shares of the means below 1 agree with the enumeration.
    exact = Fraction(sum(1 for r in itertools.product([0, 1, 5], repeat=3) if sum(r) < 3), 27)
    draws: list[float] = []

    def recorded_mean(drawn: list[float]) -> float:
        draws.append(statistics.fmean(drawn))
        return draws[-1]

    cluster_bootstrap([0.0, 1.0, 5.0], recorded_mean, resamples=4000)
    assert sum(1 for m in draws if m < 1) / len(draws) == pytest.approx(float(exact), abs=0.03)


def test_bootstrap_without_enough_clusters_or_defined_values() -> None:
    assert cluster_bootstrap([3.0], statistics.fmean) is None
    assert cluster_bootstrap([], statistics.fmean) is None
    assert cluster_bootstrap([1.0, 2.0], lambda drawn: None) is None
    with pytest.raises(ValueError):
        stratified_bootstrap([[1.0], []], lambda drawn: 0.0)


def test_stratified_bootstrap_resamples_each_stratum_on_its_own() -> None:
    def statistic(drawn: list[list[float]]) -> float:
        assert len(drawn[0]) == 3 and len(drawn[1]) == 2
        assert set(drawn[0]) <= {1.0, 2.0, 3.0} and set(drawn[1]) <= {10.0, 20.0}
        return statistics.median(drawn[1]) - statistics.median(drawn[0])

    interval = stratified_bootstrap([[1.0, 2.0, 3.0], [10.0, 20.0]], statistic, seed=3)
    assert interval is not None and 7.0 <= interval.low <= interval.high <= 19.0


def unpaired_power(first: float, second: float, n: int, alpha: float = 0.05) -> float:
    """The normal-approximation power of the two-sided two-proportion z test."""
    mean = (first + second) / 2
    z = NormalDist().inv_cdf(1 - alpha / 2)
    spread = math.sqrt(first * (1 - first) + second * (1 - second))
    return NormalDist().cdf((abs(first - second) * math.sqrt(n)
                             - z * math.sqrt(2 * mean * (1 - mean))) / spread)


def paired_power(discordant: float, difference: float, n: int, alpha: float = 0.05) -> float:
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return NormalDist().cdf((abs(difference) * math.sqrt(n) - z * math.sqrt(discordant))
                            / math.sqrt(discordant - difference ** 2))


@pytest.mark.parametrize(("first", "second"), [(0.5, 0.6), (0.2, 0.3), (0.9, 0.7), (0.05, 0.5)])
def test_observations_needed_is_the_smallest_n_with_the_power(first: float,
                                                              second: float) -> None:
    n = observations_needed(first, second)
    assert unpaired_power(first, second, n) >= 0.8 > unpaired_power(first, second, n - 1)


def test_observations_needed_known_value() -> None:
    # 50 % against 60 %, two-sided 5 %, power 80 %, no continuity correction:
    # 387.3 per group (the tables' 388).
    assert observations_needed(0.5, 0.6) == 388
    with pytest.raises(ValueError):
        observations_needed(0.4, 0.4)


@pytest.mark.parametrize(("discordant", "difference"), [(0.3, 0.1), (0.2, -0.15), (0.5, 0.05)])
def test_pairs_needed_is_the_smallest_n_with_the_power(discordant: float,
                                                       difference: float) -> None:
    n = pairs_needed(discordant, difference)
    assert paired_power(discordant, difference, n) >= 0.8 > paired_power(
        discordant, difference, n - 1)
    with pytest.raises(ValueError):
        pairs_needed(0.05, 0.1)


def test_sample_size_plans_towards_one_half() -> None:
    low, high = sample_size(0.2, 0.1), sample_size(0.8, 0.1)
    assert (low.other_rate, high.other_rate) == pytest.approx((0.3, 0.7))
    assert low.observations == high.observations == observations_needed(0.2, 0.3)
    assert low.runs_per_task(10) == math.ceil(low.observations / 10)
    assert low.tasks_at(3) == math.ceil(low.observations / 3)
    assert sample_size(0.5, 0.1).observations == 388
