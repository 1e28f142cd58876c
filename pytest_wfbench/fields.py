"""Row fields that several stages name: defined once, imported by all. Pure."""

from __future__ import annotations

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens")
"""A row's model usage: ``tokens`` is their total."""
