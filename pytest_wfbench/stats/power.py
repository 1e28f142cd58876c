"""Roughly how many runs it takes to tell two resolve rates apart: the normal
approximation to the power of a two-sided test at level alpha.

Unpaired (Fleiss, Levin and Paik 2003, Statistical Methods for Rates and
Proportions, eq. 4.14, without continuity correction), per arm:

    n = (z_{1-alpha/2} sqrt(2 p q) + z_{power} sqrt(p1 q1 + p2 q2))^2 / (p1 - p2)^2

with p the mean of p1 and p2 and q = 1 - p. Paired (Connor 1987, Biometrics
43:207-211), pairs for McNemar's test with a share psi of discordant pairs and a
difference delta:

    n = (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2

Runs of the same task are correlated, and pairing usually needs fewer runs than
the unpaired figure: take both as the size of the evidence to plan for, not as a
guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from pytest_wfbench.stats.interval import z_value


def _z_power(power: float) -> float:
    if not 0.0 < power < 1.0:
        raise ValueError(f"power is between 0 and 1, not {power}")
    return NormalDist().inv_cdf(power)


def observations_needed(first_rate: float, second_rate: float, *, alpha: float = 0.05,
                        power: float = 0.8) -> int:
    """Observations per arm to tell rates ``first_rate`` and ``second_rate`` apart
    (unpaired normal approximation, two-sided level ``alpha``)."""
    for rate in (first_rate, second_rate):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"a rate is between 0 and 1, not {rate}")
    delta = first_rate - second_rate
    if delta == 0:
        raise ValueError("equal rates cannot be told apart by any number of runs")
    mean = (first_rate + second_rate) / 2.0
    null_sd = math.sqrt(2.0 * mean * (1.0 - mean))
    alternative_sd = math.sqrt(first_rate * (1.0 - first_rate) + second_rate * (1.0 - second_rate))
    root = z_value(1.0 - alpha) * null_sd + _z_power(power) * alternative_sd
    return math.ceil(root * root / (delta * delta))


def pairs_needed(discordant: float, difference: float, *, alpha: float = 0.05,
                 power: float = 0.8) -> int:
    """Pairs for McNemar's test to detect ``difference`` (p10 - p01) when a share
    ``discordant`` (p10 + p01) of pairs is discordant (Connor 1987)."""
    delta = abs(difference)
    if not 0.0 < delta <= discordant <= 1.0:
        raise ValueError("a paired difference needs 0 < |difference| <= discordant share <= 1, "
                         f"not {difference} and {discordant}")
    root = (z_value(1.0 - alpha) * math.sqrt(discordant)
            + _z_power(power) * math.sqrt(discordant - delta * delta))
    return math.ceil(root * root / (delta * delta))


@dataclass(frozen=True)
class SampleSize:
    """How many (task, run) observations per arm it takes to detect ``difference``
    from ``baseline_rate``, and what that means for a sweep's shape."""

    observations: int
    baseline_rate: float
    other_rate: float
    alpha: float
    power: float

    @property
    def difference(self) -> float:
        return self.other_rate - self.baseline_rate

    def runs_per_task(self, tasks: int) -> int:
        """Runs per task that give enough observations on ``tasks`` tasks."""
        return math.ceil(self.observations / max(1, tasks))

    def tasks_at(self, runs: int) -> int:
        """Tasks that give enough observations at ``runs`` runs per task."""
        return math.ceil(self.observations / max(1, runs))


def sample_size(baseline_rate: float, difference: float, *, alpha: float = 0.05,
                power: float = 0.8) -> SampleSize:
    """Observations per arm to detect a change of ``difference`` (0 < d < 1) in a
    resolve rate of ``baseline_rate``. The other rate is taken towards one half,
    where a rate varies most: the more demanding of the two directions."""
    if not 0.0 < difference < 1.0:
        raise ValueError(f"a difference in resolve rate is between 0 and 1, not {difference}")
    rate = min(1.0, max(0.0, baseline_rate))
    other = rate + difference if rate < 0.5 else rate - difference
    other = min(1.0, max(0.0, other))
    return SampleSize(observations_needed(rate, other, alpha=alpha, power=power),
                      baseline_rate=rate, other_rate=other, alpha=alpha, power=power)
