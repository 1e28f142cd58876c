"""pass@k and pass^k from n runs of a task of which c resolved, without bias.

pass@k, the chance that at least one of k runs resolves, is estimated by
1 - C(n-c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large Language Models
Trained on Code", eq. 1); pass^k, the chance that all k resolve, by
C(c, k) / C(n, k) (Yao et al. 2024, tau-bench). Both are the share of the k-run
subsets of the n runs that have the property, so they need n >= k.
"""

from __future__ import annotations

import functools
import math


def _check(runs: int, resolved: int, k: int) -> None:
    if not 0 <= resolved <= runs:
        raise ValueError(f"resolved runs must be between 0 and {runs}, not {resolved}")
    if not 1 <= k <= runs:
        raise ValueError(f"pass@k needs 1 <= k <= runs ({runs}), not k = {k}")


# Exact to the last bit: the ratio of two integers, divided once (Python's
# division of integers rounds correctly, as converting a Fraction does). Cached:
# a large sweep asks for the same few (runs, resolved, k) over and over.

@functools.lru_cache(maxsize=65536)
def pass_at_k(runs: int, resolved: int, k: int) -> float:
    """Unbiased estimate of the chance that at least one of k runs resolves."""
    _check(runs, resolved, k)
    subsets = math.comb(runs, k)
    return (subsets - math.comb(runs - resolved, k)) / subsets


@functools.lru_cache(maxsize=65536)
def pass_hat_k(runs: int, resolved: int, k: int) -> float:
    """Unbiased estimate of the chance that all k runs resolve (pass^k)."""
    _check(runs, resolved, k)
    return math.comb(resolved, k) / math.comb(runs, k)


def pass_k_series(runs: int, resolved: int) -> tuple[list[float], list[float]]:
    """pass@k and pass^k for every k from 1 to runs: the same floats as
    :func:`pass_at_k` and :func:`pass_hat_k`, each binomial coefficient got from
    the previous k's exactly (C(n, k) = C(n, k-1) * (n-k+1) / k, an exact integer
    division) instead of from scratch."""
    if not 0 <= resolved <= runs:
        raise ValueError(f"resolved runs must be between 0 and {runs}, not {resolved}")
    at: list[float] = []
    hat: list[float] = []
    # C(runs, k), C(runs - resolved, k), C(resolved, k), from k = 0; a coefficient
    # C(m, k) becomes 0 at k = m + 1 and stays 0.
    subsets = failing = passing = 1
    for k in range(1, runs + 1):
        subsets = subsets * (runs - k + 1) // k
        failing = failing * (runs - resolved - k + 1) // k
        passing = passing * (resolved - k + 1) // k
        at.append((subsets - failing) / subsets)
        hat.append(passing / subsets)
    return at, hat
