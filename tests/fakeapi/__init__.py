"""Fake Anthropic Messages API for running the real Claude Code CLI offline.

Quick start::

    from tests.fakeapi import FakeAnthropic, Usage, text, tool_use, turn

    script = [
        turn(tool_use("Bash", {"command": "echo hi > out.txt", "description": "write"})),
        turn("All done.", usage=Usage(120, 8)),
    ]
    with FakeAnthropic(script) as api:
        ...  # run `claude -p ...` with ANTHROPIC_BASE_URL=api.base_url
    assert api.script_done and not api.errors

Each ``POST /v1/messages`` is classified (:func:`classify_messages_request`) as
``main`` (consumes the next script item: :func:`turn`, :func:`stall`,
:func:`disconnect` or :func:`http_error`), ``subagent`` (``x-claude-code-agent-id``
header; consumes ``subagent_script`` if given), ``compact`` or ``side`` (fixed answers
that consume nothing).  See ``docs/claude-cli.md`` for the CLI's observed behaviour.
"""

from __future__ import annotations

from .script import (
    ERROR_TYPES,
    Block,
    Disconnect,
    HttpError,
    Script,
    ScriptItem,
    Stall,
    StopReason,
    Text,
    ToolUse,
    Turn,
    Usage,
    disconnect,
    http_error,
    stall,
    text,
    tool_use,
    turn,
)
from .server import (
    COMPACT_MARKER,
    DEFAULT_COMPACT_TEXT,
    DEFAULT_SIDE_TEXT,
    DEFAULT_SIDE_USAGE,
    MAIN_SYSTEM_MARKERS,
    SUBAGENT_HEADER,
    SUBAGENT_SYSTEM_MARKER,
    Classifier,
    FakeAnthropic,
    IssuedToolUse,
    RecordedRequest,
    RequestKind,
    ToolResult,
    classify_messages_request,
    last_user_text,
    system_text,
    tool_names,
)

__all__ = [
    "COMPACT_MARKER",
    "DEFAULT_COMPACT_TEXT",
    "DEFAULT_SIDE_TEXT",
    "DEFAULT_SIDE_USAGE",
    "ERROR_TYPES",
    "MAIN_SYSTEM_MARKERS",
    "SUBAGENT_HEADER",
    "SUBAGENT_SYSTEM_MARKER",
    "Block",
    "Classifier",
    "Disconnect",
    "FakeAnthropic",
    "HttpError",
    "IssuedToolUse",
    "RecordedRequest",
    "RequestKind",
    "Script",
    "ScriptItem",
    "Stall",
    "StopReason",
    "Text",
    "ToolResult",
    "ToolUse",
    "Turn",
    "Usage",
    "classify_messages_request",
    "disconnect",
    "http_error",
    "last_user_text",
    "stall",
    "system_text",
    "text",
    "tool_names",
    "tool_use",
    "turn",
]
