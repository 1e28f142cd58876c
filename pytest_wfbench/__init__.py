"""pytest-wfbench: benchmark coding-agent workflows as pytest cells."""

from __future__ import annotations

__version__ = "0.1.0"
