"""Redaction of the secrets the harness was given, applied at every sink, and
neutralization of terminal control sequences in text that came from an arm.

An arm controls command output, error details and file names. Before any of
it reaches a terminal, junit, ``report.md`` or a row, control characters and
ANSI/OSC escape sequences (which can rewrite a terminal, hide lines or plant
links) and bidirectional overrides are shown as visible escapes (``\\x1b``)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SECRET_ENV_VARS = ("WFBENCH_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
REDACTED = "[REDACTED]"
# Shorter values would redact ordinary words; keys and tokens are far longer.
MIN_SECRET_LENGTH = 8
STREAM_SIZE = 1 << 20
"""Characters Redactor.clean_stream redacts at once."""
# Every C0 and C1 control character but newline and tab (ESC, CR, BEL, CSI, ...),
# DEL, the Unicode bidirectional controls and line separators (which split lines
# for readers that honour them): without them no escape sequence can act, and
# what is left of it reads as text.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                     "\u2028\u2029\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def neutralize(text: str) -> str:
    """``text`` with every control sequence shown as escapes, inert on any terminal."""
    return CONTROL.sub(_visible, text)


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

    def clean(self, value: str) -> str:
        """Redacted and neutralized: for terminals, junit, reports and rows."""
        return neutralize(self.text(value))

    def clean_stream(self, pieces: Iterable[str], size: int | None = None) -> Iterator[str]:
        """:meth:`clean` of the pieces' text, a part (of about ``size``
        characters, STREAM_SIZE by default) at a time: the parts joined are
        ``clean("".join(pieces))``, a secret split across pieces included (a
        long page is never held whole)."""
        wanted = STREAM_SIZE if size is None else size
        held: list[str] = []
        count = 0
        for piece in pieces:
            held.append(piece)
            count += len(piece)
            if count >= wanted:
                text = "".join(held)
                cut = self._cut(text)
                if cut > 0:
                    yield self.clean(text[:cut])
                    wanted = STREAM_SIZE if size is None else size
                else:  # no place to cut yet: wait for twice as much (never quadratic)
                    wanted = 2 * len(text)
                held, count = [text[cut:]], len(text) - cut
        yield self.clean("".join(held))

    def _cut(self, text: str) -> int:
        """The latest place to cut ``text`` at, where the text before it is
        redacted as the whole text would be: no secret occurs within reach of it.
        (Secrets are replaced one after the other, so a replacement and the text
        beside it can make another secret: each secret's replacement reaches as
        far as the longest secret, or the replacement, whichever is longer.)
        0: none."""
        if not self._secrets:
            return len(text)
        reach = len(self._secrets) * max(len(self._secrets[0]), len(REDACTED))
        cut = len(text) - reach - len(self._secrets[0])
        moved = True
        while moved and cut > 0:
            moved = False
            for secret in self._secrets:
                # An occurrence that ends after cut - reach and starts before cut + reach.
                start = text.find(secret, max(cut - reach - len(secret) + 1, 0),
                                  cut + reach + len(secret) - 1)
                if start != -1:
                    cut, moved = start - reach, True
        return max(cut, 0)

    def data(self, value: Any) -> Any:
        """Redact and neutralize every string inside dicts, lists and tuples."""
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, dict):
            return {self.clean(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def url_credentials(location: str) -> list[str]:
    """The credentials a repository URL carries (``https://user:token@host/``):
    its password, or over HTTP(S) a user name alone (a token given as the user)."""
    try:
        parts = urlsplit(location)
        username, password = parts.username, parts.password
    except ValueError:
        return []
    if password:
        return [f"{username or ''}:{password}", password]
    if username and parts.scheme in ("http", "https"):
        return [username]
    return []


def shown_location(location: str) -> str:
    """A repository location as the harness writes it: a URL's user info
    (credentials) replaced by ``[REDACTED]``."""
    try:
        parts = urlsplit(location)
    except ValueError:
        return location
    if not parts.scheme or "@" not in parts.netloc:
        return location
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{REDACTED}@{host}"))


def scrub_location(text: str, location: str) -> str:
    """``text`` (a git message, say) with the location's credentials removed."""
    text = text.replace(location, shown_location(location))
    for secret in url_credentials(location):
        text = text.replace(secret, REDACTED)
    return text
