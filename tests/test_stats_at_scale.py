"""The faster statistics of large sweeps give the numbers of the direct
definitions, to the bit: the batched bootstrap of savings, the exact McNemar
test by the binomial recurrence, pass@k as one division."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from pytest_wfbench.aggregate import TaskArm, overall_saving, overall_savings, pooled_saving
from pytest_wfbench.heap import collector_paused
from pytest_wfbench.stats import (
    cluster_bootstrap,
    exact_mcnemar,
    pass_at_k,
    pass_hat_k,
    pass_k_series,
    ratio_of_sums_intervals,
    resampled_indices,
    resampled_totals,
)
from pytest_wfbench.stats.sums import DrawnSums


def columns(rng: random.Random, size: int) -> tuple[list[float], list[float]]:
    base = [rng.choice([0.0, rng.uniform(0, 1e5)]) for _ in range(size)]
    arm = [rng.uniform(0, 1e5) * rng.choice([1.0, 1e-9]) for _ in range(size)]
    return base, arm


@pytest.mark.parametrize("seed", [1, 2, 20261130])
def test_ratio_of_sums_intervals_are_cluster_bootstraps_of_pooled_savings(seed: int) -> None:
    rng = random.Random(seed)
    shared_base = columns(rng, 40)[0]
    cases = [columns(rng, size) for size in (0, 1, 2, 3, 17, 40)]
    cases.append((shared_base, columns(rng, 40)[1]))
    cases.append((shared_base, columns(rng, 40)[1]))  # a baseline column met twice
    cases.append(([0.0] * 5, [1.0] * 5))  # every resample undefined: no interval
    for resamples in (1, 7, 200):
        got = ratio_of_sums_intervals(cases, seed=seed, resamples=resamples, confidence=0.9)
        want = [cluster_bootstrap(list(zip(b, a, strict=True)), pooled_saving, seed=seed,
                                  resamples=resamples, confidence=0.9) for b, a in cases]
        assert got == want
    assert got[0] is None and got[1] is None and got[-1] is None
    assert got[4] is not None


def half_integers(rng: random.Random, size: int, top: int) -> list[float]:
    return [rng.randrange(top) / 2 for _ in range(size)]


@pytest.mark.parametrize("seed", [3, 20261130])
def test_drawn_sums_are_the_exact_sums_rounded_once(seed: int) -> None:
    """Every column's drawn sum is math.fsum's (and the exact sum, rounded once),
    packed or not; the packed ones take one addition per draw."""
    rng = random.Random(seed)
    size = 37
    columns = [half_integers(rng, size, 10), half_integers(rng, size, 2 * 10**6),
               [rng.uniform(0, 1e3) for _ in range(size)],  # costs, durations: packed too
               [rng.uniform(0, 1e5) * rng.choice([1.0, 1e-9]) for _ in range(size)],
               [0.0] * size,
               [*half_integers(rng, size - 1, 99), -0.5],  # negative: loose
               [*half_integers(rng, size - 1, 99), math.inf],  # not finite: loose
               [*half_integers(rng, size - 1, 99), -0.0],  # a negative zero: loose
               [*half_integers(rng, size - 1, 99), 2.0**-900],  # too wide to pack: loose
               [float(v) for v in range(size)], [0.1] * size]
    drawn_sums = DrawnSums(columns)
    assert [position for position, *_ in drawn_sums.fields] == [0, 1, 2, 3, 4, 9, 10]
    assert drawn_sums.loose == [5, 6, 7, 8]
    for drawn in resampled_indices(size, seed=seed, resamples=50):
        got = drawn_sums.sums(drawn)
        for column, value in zip(columns, got, strict=True):
            values = [column[i] for i in drawn]
            assert value == math.fsum(values)
            if all(math.isfinite(v) for v in values):
                assert value == float(sum(map(Fraction, values), Fraction(0)))
        assert [math.copysign(1, v) for v in got[:5]] == [1.0] * 5
    assert DrawnSums([[1.5]]).sums([0]) == [1.5]
    assert DrawnSums([[0.1] * 10]).sums(list(range(10))) == [1.0]  # sum() would say 0.99...


@pytest.mark.parametrize("seed", [4, 20261130])
def test_ratio_of_sums_intervals_of_half_integer_medians_are_the_bootstraps(seed: int) -> None:
    """Token medians (half-integers) take the packed sums; the intervals are the
    direct bootstrap's to the bit."""
    rng = random.Random(seed)
    shared = half_integers(rng, 60, 10**6)
    cases = [(shared, half_integers(rng, 60, 10**6)), (shared, half_integers(rng, 60, 10**3)),
             (half_integers(rng, 2, 9), half_integers(rng, 2, 9)),
             (shared, [rng.uniform(0, 1e5) for _ in range(60)])]
    got = ratio_of_sums_intervals(cases, seed=seed, resamples=300)
    want = [cluster_bootstrap(list(zip(b, a, strict=True)), pooled_saving, seed=seed,
                              resamples=300) for b, a in cases]
    assert got == want
    assert all(interval is not None for interval in got)


def test_ratio_of_sums_intervals_with_one_cluster_allowed() -> None:
    cases = [([2.0], [1.0])]
    want = cluster_bootstrap([(2.0, 1.0)], pooled_saving, resamples=5, min_clusters=1)
    assert ratio_of_sums_intervals(cases, resamples=5, min_clusters=1) == [want]
    with pytest.raises(ValueError, match="one value per cluster"):
        ratio_of_sums_intervals([([1.0], [])])


def test_resampled_indices_are_the_bootstraps_draws() -> None:
    drawn: list[list[int]] = []

    def record(clusters: list[int]) -> float:
        drawn.append(list(clusters))
        return 1.0

    cluster_bootstrap(list(range(9)), record, seed=5, resamples=4)
    assert list(resampled_indices(9, seed=5, resamples=4)) == drawn
    for size in (1, 2, 1000):
        rng = random.Random(8)
        want = [rng.choices(range(size), k=size) for _ in range(3)]
        assert list(resampled_indices(size, seed=8, resamples=3)) == want
    with pytest.raises(ValueError):
        list(resampled_indices(3, resamples=0))


def test_resampled_totals_sum_the_values_the_bootstrap_draws() -> None:
    rng = random.Random(9)
    for size in (1, 2, 31):
        values = [rng.getrandbits(700) for _ in range(size)]
        want = [sum(values[i] for i in drawn)
                for drawn in resampled_indices(size, seed=6, resamples=25)]
        assert list(resampled_totals(values, seed=6, resamples=25)) == want
    with pytest.raises(ValueError):
        list(resampled_totals([1], resamples=0))


def figures(task: str, arm: str, rng: random.Random) -> TaskArm:
    medians = {name: rng.choice([None, rng.uniform(1, 1e4)]) for name in (
        "tokens", "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
        "output_tokens", "estimated_tokens", "cost_usd", "session_duration_s", "num_turns")}
    valid = rng.randrange(0, 4)
    return TaskArm(task=task, task_class="bug", arm=arm, attempts=valid, valid=valid,
                   resolved=rng.randrange(0, valid + 1), medians=medians)


def test_overall_savings_of_all_arms_are_each_arms_own() -> None:
    rng = random.Random(9)
    base = [figures(f"t{i}", "baseline", rng) for i in range(30)]
    pairs = {arm: [(figures(b.task, arm, rng), b) for b in base] for arm in ("a", "b", "c")}
    together = overall_savings(pairs, resamples=300)
    for arm, arm_pairs in pairs.items():
        assert together[arm] == overall_saving(arm, arm_pairs, resamples=300)


@pytest.mark.parametrize(("first", "second"), [(0, 0), (0, 5), (5, 0), (3, 3), (1, 40),
                                               (17, 29), (300, 280), (2000, 2100)])
def test_exact_mcnemar_is_the_binomial_tail(first: int, second: int) -> None:
    n = first + second
    tail = sum(math.comb(n, i) for i in range(min(first, second) + 1))
    expected = 1.0 if n == 0 else float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))
    assert exact_mcnemar(first, second) == expected


def test_pass_k_series_are_pass_at_k_and_pass_hat_k_for_every_k() -> None:
    for runs in [*range(41), 250]:
        for resolved in range(runs + 1):
            at, hat = pass_k_series(runs, resolved)
            assert at == [pass_at_k(runs, resolved, k) for k in range(1, runs + 1)]
            assert hat == [pass_hat_k(runs, resolved, k) for k in range(1, runs + 1)]
    with pytest.raises(ValueError):
        pass_k_series(3, 4)


def test_pass_at_k_and_pass_hat_k_are_the_exact_ratios() -> None:
    for runs in range(1, 30):
        for resolved in range(runs + 1):
            for k in range(1, runs + 1):
                subsets = Fraction(math.comb(runs, k))
                assert pass_at_k(runs, resolved, k) == float(
                    1 - math.comb(runs - resolved, k) / subsets)
                assert pass_hat_k(runs, resolved, k) == float(
                    math.comb(resolved, k) / subsets)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_hat_k(3, 1, 4)


def test_the_collector_is_paused_inside_and_as_before_after() -> None:
    import gc

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
