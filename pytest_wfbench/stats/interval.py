"""A confidence interval, and the normal quantile the intervals are built from."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class Interval:
    """A closed interval [low, high] at a confidence level."""

    low: float
    high: float
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError(f"an interval's low end {self.low} is above its high {self.high}")

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def above(self, value: float) -> bool:
        """Whether the whole interval lies strictly above ``value``."""
        return self.low > value

    def to_json(self) -> list[float]:
        return [self.low, self.high]


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile: 1.959964 for 95 %."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"a confidence level is between 0 and 1, not {confidence}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
