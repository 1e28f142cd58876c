"""What the promotion gate is given: the policy it applies, and the context of
the sweep whose rows it judges (candidate arms are named after their
incumbent: :mod:`pytest_wfbench.tasks.arms`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pytest_wfbench.aggregate import SAVINGS_METRICS, Health
from pytest_wfbench.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

MOST_EXPIRY_DAYS = 36500
"""A century: the expiry is a date (and a date past year 9999 is none)."""
MOST_RESAMPLES = 1_000_000
"""A bootstrap's resamples, at most (2,000 by default)."""

SweepState = Literal["complete", "aborted", "cancelled"]
SWEEP_STATES: tuple[SweepState, ...] = ("complete", "aborted", "cancelled")



@dataclass(frozen=True)
class PromotionPolicy:
    """When a candidate replaces its incumbent. Percentages are in percent."""

    metric: str = "cost_usd"
    """What the candidate must spend less of: one of aggregate.SAVINGS_METRICS."""
    min_runs: int = 3
    """Scored runs each arm needs on every task."""
    min_improvement: float = 5.0
    """Overall improvement of the metric needed, in %."""
    max_task_regression: float = 20.0
    """No task may get worse on the metric by more than this, in %."""
    require_significance: bool = False
    """Whether the overall improvement's interval must lie entirely above zero."""
    expiry_days: int = 7
    resolved_share: float = 1.0
    """A task counts as resolved by an arm when at least this share of its scored
    runs resolved (1.0: all of them)."""
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.metric not in SAVINGS_METRICS:
            raise ValueError(f"promotion metric {self.metric!r} is not one of "
                             f"{', '.join(SAVINGS_METRICS)}")
        if self.min_runs < 1:
            raise ValueError(f"min_runs must be at least 1, not {self.min_runs}")
        if not (0 <= self.min_improvement < math.inf and 0 <= self.max_task_regression < math.inf):
            raise ValueError("min_improvement and max_task_regression are percentages >= 0")
        if not 0 <= self.expiry_days <= MOST_EXPIRY_DAYS:
            raise ValueError(f"expiry_days is between 0 and {MOST_EXPIRY_DAYS}, "
                             f"not {self.expiry_days}")
        if not 0.0 < self.resolved_share <= 1.0:
            raise ValueError(f"resolved_share is in (0, 1], not {self.resolved_share}")
        if type(self.seed) is not int:  # random.Random would take another stream of a float
            raise ValueError(f"seed must be an integer, not {self.seed!r}")
        if type(self.resamples) is not int or not 1 <= self.resamples <= MOST_RESAMPLES:
            raise ValueError(f"resamples must be an integer between 1 and {MOST_RESAMPLES}, "
                             f"not {self.resamples!r}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence is in (0, 1), not {self.confidence}")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def of_settings(cls, settings: object) -> PromotionPolicy:
        """The policy a sweep recorded (sweep.json's ``settings.promotion``; none:
        the defaults), or PolicyError naming what is wrong with it (a key the gate
        does not know, a value of the wrong kind or out of range)."""
        if settings is None:
            return cls()
        if not isinstance(settings, Mapping):
            raise PolicyError(f"the promotion settings are not a mapping: {settings!r}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(map(str, set(settings) - set(fields)))
        if unknown:
            raise PolicyError(f"unknown promotion settings {', '.join(unknown)} (known: "
                              f"{', '.join(fields)})")
        for name, value in settings.items():
            kind = type(fields[name].default)
            fits = (type(value) is kind if kind in (int, bool, str)
                    else type(value) in (int, float))  # a float setting takes an integer
            if not fits:
                raise PolicyError(f"promotion setting {name} must be {KINDS[kind]}, "
                                  f"not {value!r}")
        try:
            return cls(**settings)
        except ValueError as error:
            raise PolicyError(str(error)) from None


KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


class PolicyError(ValueError):
    """A recorded promotion policy the gate cannot apply."""


DigestValue = str | dict[str, str] | None


@dataclass(frozen=True)
class Digests:
    """Everything that determines the evidence: when any of it changes, the
    verdict no longer applies. Per-task digests may be given as task -> digest."""

    overlay: DigestValue
    incumbent_skills: DigestValue
    task_prompts: DigestValue
    oracles: DigestValue
    model: DigestValue
    effort: DigestValue
    harness_version: DigestValue

    def to_json(self) -> dict[str, Any]:
        return {name: dict(sorted(value.items())) if isinstance(value, dict) else value
                for name, value in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class PromotionContext:
    """The sweep the rows come from."""

    sweep_state: SweepState
    digests: Digests
    now: datetime
    """Timezone-aware: when the evidence was taken; its expiry counts from it."""
    health: Mapping[str, Health] = field(default_factory=dict)
    """Arm -> health as the sweep's summary has it; an arm left out is judged
    from its rows."""

    def __post_init__(self) -> None:
        if self.sweep_state not in SWEEP_STATES:
            raise ValueError(f"sweep state {self.sweep_state!r} is not one of "
                             f"{', '.join(SWEEP_STATES)}")
        if self.now.tzinfo is None:
            raise ValueError("the promotion context's time must be timezone-aware")
