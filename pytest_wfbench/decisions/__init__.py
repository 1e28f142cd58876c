"""Decisions from a sweep's rows: the promotion gate (should candidate skill
files replace the incumbent's?). Pure functions at the core; the plugin's glue
builds the policy and context from options and writes promotion.json."""

from __future__ import annotations

from pytest_wfbench.decisions.gate import (
    EVIDENCE_VERSION,
    GATE_FIELDS,
    KEEP_INCUMBENT,
    PROMOTE,
    Condition,
    decide,
    improvement,
)
from pytest_wfbench.decisions.policy import (
    SWEEP_STATES,
    Digests,
    PromotionContext,
    PromotionPolicy,
    SweepState,
)
from pytest_wfbench.tasks.arms import (
    CANDIDATE_PREFIX,
    candidate_arm,
    candidate_pairs,
    incumbent_of,
)

__all__ = [
    "CANDIDATE_PREFIX",
    "EVIDENCE_VERSION",
    "GATE_FIELDS",
    "KEEP_INCUMBENT",
    "PROMOTE",
    "SWEEP_STATES",
    "Condition",
    "Digests",
    "PromotionContext",
    "PromotionPolicy",
    "SweepState",
    "candidate_arm",
    "candidate_pairs",
    "decide",
    "improvement",
    "incumbent_of",
]
