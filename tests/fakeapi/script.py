"""The script a :class:`~tests.fakeapi.FakeAnthropic` server plays back.

A script is an ordered sequence of items, one per request of the CLI's *main*
agent loop:

* :class:`Turn` -- an assistant message (text and ``tool_use`` blocks, a usage
  and a stop reason);
* :class:`Stall` -- accept the request and never answer it (the connection is
  held open until the client gives up or the server is closed);
* :class:`Disconnect` -- close the connection before or in the middle of the answer;
* :class:`HttpError` -- answer with an Anthropic-style JSON error.

Each main-loop request consumes exactly one item, retries included: a
``http_error(529, ...)`` followed by a ``turn(...)`` answers the first attempt
with the error and the CLI's retry with the turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

StopReason: TypeAlias = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"
]

#: The ``error.type`` the real API uses for each status it returns.
ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Usage:
    """Token usage reported for one response (the API's ``usage`` object)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


@dataclass(frozen=True)
class Text:
    """A ``text`` content block."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block.

    ``id`` is assigned by the server (``toolu_fake_0001``, ...) when left
    ``None``; explicit ids must be unique across the whole script.
    """

    name: str
    input: Mapping[str, Any]
    id: str | None = None


Block: TypeAlias = Text | ToolUse


@dataclass(frozen=True)
class Turn:
    """One scripted assistant response of the main agent loop."""

    content: tuple[Block, ...]
    usage: Usage = field(default_factory=lambda: Usage(100, 20))
    stop_reason: StopReason | None = None
    """``None`` means ``tool_use`` if the turn has a ``tool_use`` block, else ``end_turn``."""

    @property
    def effective_stop_reason(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.content) else "end_turn"


@dataclass(frozen=True)
class Stall:
    """Never answer: hold the connection open until the client or the server closes it."""


@dataclass(frozen=True)
class Disconnect:
    """Drop the connection without a complete answer.

    With ``after_events=0`` (or a non-streaming request) the socket is closed before any
    response byte; otherwise a 200 SSE response starts, the first ``after_events``
    events of a text answer ``partial_text`` are sent, and the socket is closed.
    """

    after_events: int = 0
    partial_text: str = "partial answer"


@dataclass(frozen=True)
class HttpError:
    """Answer with ``status`` and the body ``{"type": "error", "error": {type, message}}``."""

    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra response headers, e.g. ``{"retry-after": "0"}``."""

    def body(self, request_id: str) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": self.type, "message": self.message},
            "request_id": request_id,
        }


ScriptItem: TypeAlias = Turn | Stall | Disconnect | HttpError
Script: TypeAlias = Sequence[ScriptItem]


# --- constructors -------------------------------------------------------------------------


def text(value: str) -> Text:
    return Text(value)


def tool_use(name: str, input: Mapping[str, Any], *, id: str | None = None) -> ToolUse:
    # Fail early on inputs the server could not serialise.
    json.dumps(dict(input))
    return ToolUse(name, dict(input), id)


def turn(
    *blocks: Block | str,
    usage: Usage | None = None,
    stop_reason: StopReason | None = None,
) -> Turn:
    """A turn made of ``blocks``; a plain ``str`` is a text block."""
    content = tuple(Text(b) if isinstance(b, str) else b for b in blocks)
    if not content:
        raise ValueError("a turn needs at least one content block")
    return Turn(content, usage if usage is not None else Usage(100, 20), stop_reason)


def stall() -> Stall:
    return Stall()


def disconnect(after_events: int = 0, partial_text: str = "partial answer") -> Disconnect:
    return Disconnect(after_events, partial_text)


def http_error(
    status: int,
    type: str | None = None,
    message: str = "fake error",
    *,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """An error response; ``type`` defaults to the API's type for ``status``."""
    etype = type if type is not None else ERROR_TYPES.get(status, "api_error")
    return HttpError(status, etype, message, dict(headers or {}))
