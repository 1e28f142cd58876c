"""The faster statistics of large sweeps give the numbers of the direct
definitions, to the bit: the batched bootstrap of savings, the exact McNemar
test by the binomial recurrence, pass@k as one division."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from pytest_wfbench.aggregate import TaskArm, overall_saving, overall_savings, pooled_saving
from pytest_wfbench.fields import USAGE_FIELDS
from pytest_wfbench.heap import collector_paused
from pytest_wfbench.stats import (
    cluster_bootstrap,
    exact_mcnemar,
    pass_at_k,
    pass_hat_k,
    pass_k_series,
    ratio_of_sums_intervals,
    resampled_batches,
    resampled_indices,
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
    in limbs or not; the exact ones as a matrix product of a batch's counts."""
    rng = random.Random(seed)
    size = 37
    columns = [half_integers(rng, size, 10), half_integers(rng, size, 2 * 10**6),
               [rng.uniform(0, 1e3) for _ in range(size)],  # costs, durations: exact too
               [rng.uniform(0, 1e5) * rng.choice([1.0, 1e-9]) for _ in range(size)],
               [0.0] * size,
               [*half_integers(rng, size - 1, 99), -0.5],  # negative: loose
               [*half_integers(rng, size - 1, 99), math.inf],  # not finite: loose
               [*half_integers(rng, size - 1, 99), -0.0],  # a negative zero: loose
               [*half_integers(rng, size - 1, 99), 2.0**-900],  # too wide to pack: loose
               [float(v) for v in range(size)], [0.1] * size,
               [rng.choice([1e15, 2.0**-50]) for _ in range(size)]]  # 100 bits wide
    drawn_sums = DrawnSums(columns)
    assert [position for position, *_ in drawn_sums.fields] == [0, 1, 2, 3, 4, 9, 10, 11]
    assert drawn_sums.loose == [5, 6, 7, 8]
    # Wide ones take many limbs: two are put together in floats, more in integers.
    assert {count for _, _, count, _ in drawn_sums.fields} == {1, 2, 3}
    drawn = list(resampled_indices(size, seed=seed, resamples=50))
    got_all = drawn_sums.sums(np.array(drawn, dtype=np.intp)).tolist()
    for indices, got in zip(drawn, got_all, strict=True):
        for column, value in zip(columns, got, strict=True):
            values = [column[i] for i in indices]
            assert value == math.fsum(values)
            if all(math.isfinite(v) for v in values):
                assert value == float(sum(map(Fraction, values), Fraction(0)))
        assert [math.copysign(1, v) for v in got[:5]] == [1.0] * 5
    assert DrawnSums([[1.5]]).sums(np.array([[0]])).tolist() == [[1.5]]
    # sum() would say 0.99...
    assert DrawnSums([[0.1] * 10]).sums(np.array([list(range(10))])).tolist() == [[1.0]]


def test_drawn_sums_near_the_limbs_bounds_are_exact() -> None:
    """Values as wide as a limb allows, summed over as many clusters as the limb
    was sized for (every draw the largest: the sum's worst case), and a column
    whose unit is no float64 (2**-1074): the exact sums, rounded once."""
    for size in (1, 2, 3, 1000, 4097):
        top = float(2**53 - 1)
        columns = [[top] * size, [top, *([2.0**-1074] * (size - 1))], [2.0**-1074] * size,
                   [float(2**60 + 2**8)] * size, [0.1 + i for i in range(size)]]
        drawn_sums = DrawnSums(columns)
        assert drawn_sums.loose == ([1] if size > 1 else [])  # 2**53 by 2**-1074: too wide
        draws = np.array([[0] * size, list(range(size)), [size - 1] * size], dtype=np.intp)
        for indices, got in zip(draws.tolist(), drawn_sums.sums(draws).tolist(), strict=True):
            for column, value in zip(columns, got, strict=True):
                assert value == float(sum((Fraction(column[i]) for i in indices), Fraction(0)))


@pytest.mark.parametrize("seed", [4, 20261130])
def test_ratio_of_sums_intervals_of_half_integer_medians_are_the_bootstraps(seed: int) -> None:
    """Token medians (half-integers) take the exact sums; the intervals are the
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


def test_ratio_of_sums_intervals_of_sums_that_do_not_exist_leave_those_resamples_out() -> None:
    """A column with inf and -inf (a row's 1e999 and -1e999), or whose sum is
    past the largest float: the resamples that drew such a sum have no
    statistic; the others make the interval, and nothing raises."""
    big = 1.7e308
    cases = [([1.0, 2.0, 3.0, 4.0], [math.inf, -math.inf, 1.0, 1.0]),
             ([big, big, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]),
             ([math.inf, -math.inf, -math.inf, math.inf], [1.0, 2.0, 3.0, 4.0])]
    got = ratio_of_sums_intervals(cases, seed=3, resamples=200)
    for interval in got:
        assert interval is None or (math.isfinite(interval.low)
                                    and math.isfinite(interval.high))
    assert got[0] is None  # most resamples draw an infinity: more than half undefined
    assert got[2] is None  # every resample has an infinite or undefined baseline
    # One large value among many: most resamples draw it at most once, and have a sum.
    spread = [([big] + [1.0] * 39, [1.0] * 40)]
    assert ratio_of_sums_intervals(spread, seed=3, resamples=200)[0] is not None


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


def test_resampled_batches_are_the_bootstraps_draws() -> None:
    """numpy's draws, batch by batch, are random.Random's, index for index."""
    from pytest_wfbench.stats import bootstrap

    for seed in (0, 5, -5, 2**32 - 1, 2**32, 20261130, 123456789012345678901234567890):
        for size in (1, 2, 7, 1000):
            want = list(resampled_indices(size, seed=seed, resamples=30))
            got = [row for batch in resampled_batches(size, seed=seed, resamples=30)
                   for row in batch.tolist()]
            assert got == want
    original = bootstrap.BATCH_DRAWS
    try:
        bootstrap.BATCH_DRAWS = 20  # batches of 2 resamples of 7, and one of 1
        batches = list(resampled_batches(7, seed=3, resamples=5))
        assert [len(batch) for batch in batches] == [2, 2, 1]
        assert [row for batch in batches for row in batch.tolist()] == list(
            resampled_indices(7, seed=3, resamples=5))
    finally:
        bootstrap.BATCH_DRAWS = original
    with pytest.raises(ValueError):
        list(resampled_batches(3, resamples=0))


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


@pytest.mark.parametrize("negative_zero", [False, True])
def test_group_medians_are_statistics_median_of_each_groups_known_values(
        negative_zero: bool) -> None:
    """Every group's median is statistics.median's of its values but NaN, to
    the bit (ties of -0.0 and 0.0 in their order: the sorted way; without a
    -0.0, the partitioned one), whatever the groups' sizes: empty, one, odd,
    even, and one group far larger than the rest."""
    import statistics

    import numpy as np

    from pytest_wfbench.stats.medians import Groups

    rng = random.Random(11)
    pool = [0.0, 1.0, 2.5, -3.0, math.nan, math.inf, -math.inf, 1e308, 1e308, 2.0**-1074,
            *([-0.0] * 3 * negative_zero)]
    column = [rng.choice(pool) if rng.random() < 0.5 else rng.uniform(-1e6, 1e6)
              for _ in range(5000)]
    sizes = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 40, 1000] + [rng.randrange(1, 30)
                                                             for _ in range(200)]
    groups = [[rng.randrange(len(column)) for _ in range(size)] for size in sizes]
    groups.append([i for i, value in enumerate(column) if value != value][:5])  # all missing
    found = Groups(groups).medians(np.array(column))
    for group, members in enumerate(groups):
        values = [column[i] for i in members]
        present = [value for value in values if value == value]
        want = statistics.median(present) if present else None
        if want is not None and want != want:  # (inf + -inf) / 2: no median
            want = None
        got = found.median(group)
        assert got == want, (values, got, want)
        if got is not None and want is not None:
            assert math.copysign(1, got) == math.copysign(1, want), (values, got, want)
        assert found.missing[group] == len(values) - len(present)
        if found.missing[group]:
            assert found.median(group, all_known=True) is None
        else:
            assert found.median(group, all_known=True) == got
    for all_known in (False, True):
        assert found.values(all_known=all_known) == [
            found.median(group, all_known=all_known) for group in range(len(groups))]


def test_token_totals_are_the_tables_and_past_the_largest_float_infinite() -> None:
    """Every row's total, at once or row by row, is Table.tokens'; four counts
    of 1e308 total inf (they raised), and a skipped row that has them does not
    stop the report's figures of the others."""
    from pytest_wfbench.aggregate import medians_at, summarize, token_totals
    from pytest_wfbench.table import Table
    from tests.rows import row

    ok = row("t", "a", 1, input_tokens=10, output_tokens=5)
    junk = row("t", "a", 2, status="skipped", input_tokens=1e308, output_tokens=1e308)
    odd = row("t", "a", 3, input_tokens=-0.0, output_tokens=1.5, cache_read_input_tokens=2**52)
    table = Table.of([ok, junk, odd])
    assert token_totals(table).tolist() == table.tokens(range(3)) == [15.0, math.inf,
                                                                      float(2**52 + 1)]
    assert medians_at(table, [0])["tokens"] == 15.0
    assert summarize([ok, junk]).cells[0].medians["tokens"] == 15.0
    whole = Table.of([ok, row("t", "a", 2, input_tokens=-0.0)])
    assert [math.copysign(1, t) for t in token_totals(whole).tolist()] == [1.0, 1.0]


def test_a_rows_own_figures_are_the_tables_whatever_it_holds() -> None:
    """aggregate.total_tokens and metric, from a row itself (a small page's plots
    and cells), give what the report's table holds of it: counts past the
    largest float, infinities, NaN, booleans and text never raise (they did,
    and cost report.html)."""
    from pytest_wfbench.aggregate import median_of, total_tokens
    from pytest_wfbench.aggregate.figures import METRICS, metric
    from pytest_wfbench.table import Table
    from tests.rows import row

    odd: list[Any] = [None, True, False, "12", "many", 1.5, -0.0, math.inf, -math.inf,
                      math.nan, 2**60, 10**400, 1e308, [1], {"a": 1}]
    rng = random.Random(11)
    rows = []
    for run in range(60):
        r = row("t", "a", run + 1)
        for name in (*USAGE_FIELDS, "cost_usd", "duration_s", "num_turns"):
            r[name] = rng.choice(odd)
        rows.append(r)
    table = Table.of(rows)
    assert [total_tokens(r) for r in rows] == table.tokens(table.positions)
    for name in METRICS:
        held = [None if value != value else value for value in (
            table.tokens([i])[0] if name == "tokens" else table.value(name, i) for i in
            table.positions)]
        got = [metric(r, name) for r in rows]
        assert [None if v is None else float(v) for v in held] == got, name
        assert median_of(rows, name) == median_of(rows, name)  # no raise, no NaN
