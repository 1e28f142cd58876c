"""Rendering: report.md (markdown), the terminal summary, and the sections read
straight from rows. Pure functions of plain data, deterministic to the byte."""

from __future__ import annotations

from pytest_wfbench.render.format import fmt, fmt_cost, fmt_pct, table
from pytest_wfbench.render.markdown import render_markdown
from pytest_wfbench.render.promotion import promotion_sections
from pytest_wfbench.render.sections import overhead_section, trust_sections
from pytest_wfbench.render.terminal import (
    harness_error_lines,
    promotion_lines,
    render_terminal,
    suspicious_lines,
    unusable_lines,
)

__all__ = [
    "fmt",
    "fmt_cost",
    "fmt_pct",
    "harness_error_lines",
    "overhead_section",
    "promotion_lines",
    "promotion_sections",
    "render_markdown",
    "render_terminal",
    "suspicious_lines",
    "table",
    "trust_sections",
    "unusable_lines",
]
