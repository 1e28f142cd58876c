"""Statistics for comparing arms: intervals, paired tests, the bootstrap, pass@k
and sample sizes. Pure functions on counts and numbers (numpy where a large sweep
asks for many of them at once).

Every method is named with its reference where it is defined; docs/aggregation.md
says where the report uses each one.
"""

from __future__ import annotations

from pytest_wfbench.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    cluster_bootstrap,
    percentile,
    percentile_interval,
    ratio_of_sums_intervals,
    resampled_batches,
    resampled_indices,
    stratified_batches,
    stratified_bootstrap,
    stratified_median_intervals,
)
from pytest_wfbench.stats.interval import Interval, z_value
from pytest_wfbench.stats.passk import pass_at_k, pass_hat_k, pass_k_series
from pytest_wfbench.stats.power import SampleSize, observations_needed, pairs_needed, sample_size
from pytest_wfbench.stats.proportions import (
    PairedTable,
    exact_mcnemar,
    paired_difference_interval,
    wilson_interval,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Interval",
    "PairedTable",
    "SampleSize",
    "cluster_bootstrap",
    "exact_mcnemar",
    "observations_needed",
    "paired_difference_interval",
    "pairs_needed",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_series",
    "percentile",
    "percentile_interval",
    "ratio_of_sums_intervals",
    "resampled_batches",
    "resampled_indices",
    "sample_size",
    "stratified_batches",
    "stratified_bootstrap",
    "stratified_median_intervals",
    "wilson_interval",
    "z_value",
]
