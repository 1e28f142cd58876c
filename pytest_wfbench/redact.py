"""Redaction of the secrets the harness was given, applied at every sink."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

SECRET_ENV_VARS = ("WFBENCH_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
REDACTED = "[REDACTED]"
# Shorter values would redact ordinary words; keys and tokens are far longer.
MIN_SECRET_LENGTH = 8


class Redactor:
    """Replaces every known secret value in text or JSON-like data."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
        # Longest first, so a secret that contains another is removed whole.
        self._secrets = sorted(values, key=len, reverse=True)

    @classmethod
    def from_environment(
        cls, extra_env_names: Iterable[str] = (), environ: Mapping[str, str] | None = None
    ) -> Redactor:
        env = os.environ if environ is None else environ
        names = [*SECRET_ENV_VARS, *extra_env_names]
        return cls(env[name] for name in names if env.get(name))

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(self._secrets)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def data(self, value: Any) -> Any:
        """Redact every string inside dicts, lists and tuples."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value
