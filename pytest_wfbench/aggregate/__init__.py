"""Aggregation of a sweep's rows (SPEC §7). Pure: plain rows in, plain data out.

:func:`summarize` is the entry point; its :class:`Summary` holds every figure
the report renders. docs/aggregation.md says how each one is computed.
"""

from __future__ import annotations

from pytest_wfbench.aggregate.compare import PairedComparison, PassK, paired_comparison, pass_k
from pytest_wfbench.aggregate.figures import (
    METRICS,
    SAVINGS_METRICS,
    USAGE_FIELDS,
    Row,
    TaskArm,
    combine_medians,
    median_of,
    metric,
    row_order,
    task_arm,
    total_tokens,
)
from pytest_wfbench.aggregate.health import (
    ArmHealth,
    Health,
    arm_health,
    health,
    is_failure,
    is_fresh,
)
from pytest_wfbench.aggregate.savings import (
    OverallSaving,
    TaskSaving,
    overall_saving,
    overall_savings,
    pooled_saving,
    resolved_less,
    savings,
    task_saving,
)
from pytest_wfbench.aggregate.summary import (
    DEFAULT_BASELINE,
    ArmSummary,
    Settings,
    Summary,
    summarize,
)

__all__ = [
    "DEFAULT_BASELINE",
    "METRICS",
    "SAVINGS_METRICS",
    "USAGE_FIELDS",
    "ArmHealth",
    "ArmSummary",
    "Health",
    "OverallSaving",
    "PairedComparison",
    "PassK",
    "Row",
    "Settings",
    "Summary",
    "TaskArm",
    "TaskSaving",
    "arm_health",
    "combine_medians",
    "health",
    "is_failure",
    "is_fresh",
    "median_of",
    "metric",
    "overall_saving",
    "overall_savings",
    "paired_comparison",
    "pass_k",
    "pooled_saving",
    "resolved_less",
    "row_order",
    "savings",
    "summarize",
    "task_arm",
    "task_saving",
    "total_tokens",
]
