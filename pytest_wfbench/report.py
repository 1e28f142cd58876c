"""The report's entry points, where the plugin and the tool-cost lanes import
them from: report.md, the terminal summary and their sections (SPEC §7). The
rendering itself lives in :mod:`pytest_wfbench.render`."""

from __future__ import annotations

from pytest_wfbench.render import (
    fmt,
    fmt_cost,
    fmt_pct,
    harness_error_lines,
    overhead_section,
    promotion_lines,
    promotion_sections,
    render_markdown,
    render_terminal,
    suspicious_lines,
    table,
    trust_sections,
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
