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
