"""Aggregation of a sweep's rows (SPEC §7). Pure: rows (or their table) in,
plain data out.

:func:`summarize` is the entry point (:func:`summarize_table` of a table of
rows, :mod:`pytest_wfbench.table`, what a report uses); its :class:`Summary`
holds every figure the report renders. docs/aggregation.md says how each one is
computed.
"""

from __future__ import annotations

from pytest_wfbench.aggregate.compare import PairedComparison, PassK, paired_comparison, pass_k
from pytest_wfbench.aggregate.figures import (
    METRICS,
    SAVINGS_METRICS,
    Row,
    Run,
    TaskArm,
    combine_medians,
    in_run_order,
    median_of,
    medians_at,
    metric,
    row_order,
    task_arm,
    task_arm_at,
    token_totals,
    total_tokens,
)
from pytest_wfbench.aggregate.health import (
    ArmHealth,
    Health,
    arm_health,
    arm_health_at,
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
    summarize_table,
)
from pytest_wfbench.fields import USAGE_FIELDS

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
    "Run",
    "Settings",
    "Summary",
    "TaskArm",
    "TaskSaving",
    "arm_health",
    "arm_health_at",
    "combine_medians",
    "health",
    "in_run_order",
    "is_failure",
    "is_fresh",
    "median_of",
    "medians_at",
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
    "summarize_table",
    "task_arm",
    "task_arm_at",
    "task_saving",
    "token_totals",
    "total_tokens",
]
