"""A fake Anthropic Messages API server for driving the real Claude Code CLI offline.

Stdlib only: a :class:`http.server.ThreadingHTTPServer` on ``127.0.0.1:<ephemeral>``
served from a daemon thread.  See ``docs/claude-cli.md`` for what the pinned CLI
actually sends and why requests are classified the way they are.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, TypeAlias
from urllib.parse import parse_qs, urlsplit

from .script import (
    Disconnect,
    HttpError,
    Script,
    ScriptItem,
    Stall,
    Text,
    ToolUse,
    Turn,
    Usage,
)

RequestKind: TypeAlias = Literal[
    "main", "subagent", "compact", "side", "count_tokens", "probe", "unknown"
]

#: Headers whose values are replaced by ``"<present>"`` in the request log.
REDACTED_HEADERS = frozenset({"x-api-key", "authorization"})

#: Substrings of the system prompt of main-loop requests of the pinned CLI: in ``-p``
#: mode the second system block is "You are a Claude agent, built on Anthropic's Claude
#: Agent SDK." (kept with --system-prompt and --bare), interactively "You are Claude
#: Code, Anthropic's official CLI for Claude.".
MAIN_SYSTEM_MARKERS = ("Claude Agent SDK", "Anthropic's official CLI for Claude")

#: Sub-agent (``Agent`` tool) requests carry this header (the agent id) and
#: ``cc_is_subagent=true`` in the billing pseudo-header that opens the system prompt.
SUBAGENT_HEADER = "x-claude-code-agent-id"
SUBAGENT_SYSTEM_MARKER = "cc_is_subagent=true"

#: Compaction (``/compact`` or auto-compact) re-sends the main system prompt, tools and
#: history, then a last user text block that starts with this.
COMPACT_MARKER = "CRITICAL: Respond with TEXT ONLY"

DEFAULT_SIDE_TEXT = "OK"
DEFAULT_SIDE_USAGE = Usage(input_tokens=7, output_tokens=3)
DEFAULT_COMPACT_TEXT = (
    "<analysis>fakeapi compaction</analysis>\n"
    "<summary>fakeapi: summary of the conversation so far.</summary>"
)
EXHAUSTED_TEXT = "[fakeapi] script exhausted"


def system_text(body: Mapping[str, Any]) -> str:
    """The request's system prompt flattened to one string."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


def tool_names(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    return [str(t.get("name")) for t in tools if isinstance(t, dict)]


def last_user_text(body: Mapping[str, Any]) -> str:
    """Text of the last user message (its text blocks joined)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(
                str(b.get("text", ""))
                for b in content
                if isinstance(b, dict) and b.get("type") == "text"
            )
        return ""
    return ""


def classify_messages_request(body: Mapping[str, Any], headers: Mapping[str, str]) -> RequestKind:
    """Who sent a ``POST /v1/messages``: the main agent loop, a sub-agent, or a side task.

    ``headers`` have lower-case names.  In order:

    * ``x-claude-code-agent-id`` header or ``cc_is_subagent=true`` in the system prompt
      -> ``subagent``;
    * no ``tools`` -> ``side`` (title/name generation, quota probe, summaries...);
    * no main-agent marker in the system prompt -> ``side``;
    * last user message asks for a text-only summary -> ``compact``;
    * otherwise ``main``.
    """
    sys_text = system_text(body)
    if SUBAGENT_HEADER in headers or SUBAGENT_SYSTEM_MARKER in sys_text:
        return "subagent"
    if not tool_names(body):
        return "side"
    if not any(marker in sys_text for marker in MAIN_SYSTEM_MARKERS):
        return "side"
    if COMPACT_MARKER in last_user_text(body):
        return "compact"
    return "main"


Classifier: TypeAlias = Callable[[Mapping[str, Any], Mapping[str, str]], RequestKind]


@dataclass
class RecordedRequest:
    """One request as received (and how it was answered)."""

    index: int
    time: float
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    kind: RequestKind
    script_index: int | None = None
    """Index of the script item that answered it (main loop or scripted sub-agent)."""
    status: int | None = None
    """HTTP status sent; ``None`` for a stall."""
    outcome: str = ""
    """``turn``, ``http_error``, ``exhausted``, ``stall`` (still held),
    ``stall:client_closed``, ``stall:server_closed``, the kind for unscripted answers
    (``side``, ``compact``, ``subagent``), ``count_tokens``, ``probe``, ``not_found``,
    ``client_gone``."""

    @property
    def model(self) -> str | None:
        if isinstance(self.body, dict):
            model = self.body.get("model")
            return model if isinstance(model, str) else None
        return None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    def summary(self) -> str:
        extra = ""
        if isinstance(self.body, dict):
            tools = len(tool_names(self.body))
            extra = (
                f" model={self.model} stream={self.stream}"
                f" max_tokens={self.body.get('max_tokens')} tools={tools}"
                f" messages={len(self.body.get('messages') or [])}"
            )
        script = "" if self.script_index is None else f" script[{self.script_index}]"
        return (
            f"#{self.index} {self.method} {self.path} kind={self.kind}{script}"
            f" -> {self.status} {self.outcome}{extra}"
        )


@dataclass(frozen=True)
class IssuedToolUse:
    id: str
    name: str
    input: Mapping[str, Any]
    script_index: int
    request_index: int


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block the CLI sent back for a ``tool_use`` the server issued."""

    tool_use_id: str
    name: str
    content: Any
    is_error: bool
    request_index: int

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "\n".join(
                str(b.get("text", ""))
                for b in self.content
                if isinstance(b, dict) and b.get("type") == "text"
            )
        return ""


@dataclass
class _Queue:
    """A script being played back, with the tool_use ids of its last served turn."""

    name: str
    script: tuple[ScriptItem, ...]
    cursor: int = 0
    pending: list[str] = field(default_factory=list)


@dataclass
class _State:
    main: _Queue
    subagent: _Queue | None
    next_request: int = 0
    next_message: int = 0
    next_tool: int = 0
    requests: list[RecordedRequest] = field(default_factory=list)
    issued: dict[str, IssuedToolUse] = field(default_factory=dict)
    results: dict[str, ToolResult] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _explicit_ids(items: tuple[ScriptItem, ...]) -> list[str]:
    return [
        b.id
        for item in items
        if isinstance(item, Turn)
        for b in item.content
        if isinstance(b, ToolUse) and b.id is not None
    ]


class FakeAnthropic:
    """Fake Anthropic Messages API on ``127.0.0.1:<ephemeral port>``.

    Usage::

        with FakeAnthropic([turn(tool_use("Bash", {"command": "ls"})), turn("done")]) as api:
            env["ANTHROPIC_BASE_URL"] = api.base_url
            ...run the CLI...
        assert api.script_done and not api.errors

    ``POST /v1/messages`` (with or without ``?beta=true``) is classified by ``classify``
    (default :func:`classify_messages_request`):

    * ``main`` requests consume ``script`` in order, one item per request (retries
      included);
    * ``subagent`` requests consume ``subagent_script`` when one is given, else get the
      side answer;
    * ``compact`` requests get ``compact_text``; ``side`` requests get ``side_text``;
      both with ``side_usage`` and without consuming anything.

    ``POST /v1/messages/count_tokens`` gets a size-based estimate; ``HEAD``/``GET`` on
    ``/`` and ``/api/hello`` get 200; everything else a JSON 404.  Requests are answered
    as SSE when the body has ``"stream": true``, else as one JSON message.
    """

    def __init__(
        self,
        script: Script,
        *,
        subagent_script: Script | None = None,
        side_text: str = DEFAULT_SIDE_TEXT,
        side_usage: Usage = DEFAULT_SIDE_USAGE,
        compact_text: str = DEFAULT_COMPACT_TEXT,
        classify: Classifier = classify_messages_request,
        chunk_size: int = 24,
        host: str = "127.0.0.1",
    ) -> None:
        main = _Queue("main", tuple(script))
        sub = None if subagent_script is None else _Queue("subagent", tuple(subagent_script))
        explicit = _explicit_ids(main.script) + (_explicit_ids(sub.script) if sub else [])
        if len(explicit) != len(set(explicit)):
            raise ValueError(f"duplicate explicit tool_use ids in script: {explicit}")
        self._explicit_ids = frozenset(explicit)
        self._state = _State(main=main, subagent=sub)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.side_text = side_text
        self.side_usage = side_usage
        self.compact_text = compact_text
        self.classify = classify
        self.chunk_size = max(1, chunk_size)
        self._httpd = _Server((host, 0), _Handler, self)
        self.host: str = host
        self.port: int = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeAnthropic:{self.port}",
            daemon=True,
        )
        self._thread.start()
        self._closed = False

    # --- public API -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the value for ``ANTHROPIC_BASE_URL``."""
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._state.requests)

    def requests_of(self, kind: RequestKind) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == kind]

    @property
    def main_requests(self) -> list[RecordedRequest]:
        return self.requests_of("main")

    @property
    def side_requests(self) -> list[RecordedRequest]:
        """Requests that consumed no script item: ``side``, ``compact``, unscripted
        ``subagent`` requests, ``count_tokens`` and probes."""
        with self._lock:
            scripted_sub = self._state.subagent is not None
        return [
            r
            for r in self.requests
            if r.kind != "main" and not (r.kind == "subagent" and scripted_sub)
        ]

    @property
    def tool_uses(self) -> dict[str, IssuedToolUse]:
        """Every ``tool_use`` sent so far, by id."""
        with self._lock:
            return dict(self._state.issued)

    @property
    def tool_results(self) -> list[ToolResult]:
        """``tool_result`` blocks received for issued tool uses, in arrival order."""
        with self._lock:
            return list(self._state.results.values())

    def tool_result(self, tool_use_id: str) -> ToolResult | None:
        with self._lock:
            return self._state.results.get(tool_use_id)

    @property
    def errors(self) -> list[str]:
        """Protocol problems seen: unknown or missing tool results, script overrun,
        a body that is not JSON."""
        with self._lock:
            return list(self._state.errors)

    @property
    def script_position(self) -> int:
        """How many items of the main script have been consumed."""
        with self._lock:
            return self._state.main.cursor

    @property
    def script_done(self) -> bool:
        """Whether every item of the main script has been consumed."""
        with self._lock:
            return self._state.main.cursor >= len(self._state.main.script)

    @property
    def subagent_script_position(self) -> int:
        with self._lock:
            sub = self._state.subagent
            return 0 if sub is None else sub.cursor

    def summary(self) -> str:
        """One line per request, then one per error."""
        lines = [r.summary() for r in self.requests]
        lines += [f"ERROR: {e}" for e in self.errors]
        return "\n".join(lines)

    def close(self) -> None:
        """Stop serving; stalled requests are released and their connections closed."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- used by the handler ------------------------------------------------------

    def _record(
        self,
        method: str,
        raw_path: str,
        headers: Mapping[str, str],
        body: Any,
        kind: RequestKind,
    ) -> RecordedRequest:
        split = urlsplit(raw_path)
        with self._lock:
            rec = RecordedRequest(
                index=self._state.next_request,
                time=time.time(),
                method=method,
                path=split.path,
                query=parse_qs(split.query, keep_blank_values=True),
                headers=_redact(headers),
                body=body,
                kind=kind,
            )
            self._state.next_request += 1
            self._state.requests.append(rec)
        return rec

    def _error(self, message: str) -> None:
        with self._lock:
            self._state.errors.append(message)

    def _next_message_id(self) -> str:
        with self._lock:
            self._state.next_message += 1
            return f"msg_fake_{self._state.next_message:04d}"

    def _collect_tool_results(self, rec: RecordedRequest) -> set[str]:
        """Record new ``tool_result`` blocks of ``rec``; return every id it carries.

        Call with the lock held."""
        st = self._state
        body = rec.body if isinstance(rec.body, dict) else {}
        seen: set[str] = set()
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                tid = str(block.get("tool_use_id"))
                seen.add(tid)
                if tid in st.results:
                    continue
                issued = st.issued.get(tid)
                if issued is None:
                    st.errors.append(
                        f"request #{rec.index}: tool_result for unknown tool_use id {tid!r}"
                    )
                    continue
                st.results[tid] = ToolResult(
                    tool_use_id=tid,
                    name=issued.name,
                    content=block.get("content"),
                    is_error=block.get("is_error") is True,
                    request_index=rec.index,
                )
        return seen

    def _take(self, rec: RecordedRequest) -> ScriptItem | Literal["unscripted"] | None:
        """Check the tool results ``rec`` carries and pop the next item of its queue.

        ``None`` when the queue is exhausted, ``"unscripted"`` when ``rec`` has no
        queue (side, compact, unscripted sub-agent)."""
        with self._lock:
            st = self._state
            seen = self._collect_tool_results(rec)
            queue = st.main if rec.kind == "main" else None
            if rec.kind == "subagent":
                queue = st.subagent
            if queue is None:
                return "unscripted"
            # Sub-agents may run concurrently, so only the main loop is held to
            # "every tool_use of the previous turn has its tool_result now".
            missing = [tid for tid in queue.pending if tid not in seen]
            if missing and queue is st.main:
                st.errors.append(f"request #{rec.index}: no tool_result for tool_use ids {missing}")
            if queue.cursor >= len(queue.script):
                st.errors.append(
                    f"request #{rec.index}: {queue.name} script exhausted after "
                    f"{len(queue.script)} items"
                )
                return None
            item = queue.script[queue.cursor]
            rec.script_index = queue.cursor
            queue.cursor += 1
            if isinstance(item, Turn):
                queue.pending = []
            return item

    def _materialise(self, item: Turn, rec: RecordedRequest) -> list[dict[str, Any]]:
        """Content blocks for ``item`` with tool_use ids assigned and registered."""
        blocks: list[dict[str, Any]] = []
        for block in item.content:
            if isinstance(block, Text):
                blocks.append({"type": "text", "text": block.text})
                continue
            with self._lock:
                st = self._state
                tid = block.id
                if tid is None:
                    while True:
                        st.next_tool += 1
                        tid = f"toolu_fake_{st.next_tool:04d}"
                        if tid not in self._explicit_ids and tid not in st.issued:
                            break
                if tid in st.issued:
                    st.errors.append(f"tool_use id {tid!r} sent twice")
                st.issued[tid] = IssuedToolUse(
                    id=tid,
                    name=block.name,
                    input=block.input,
                    script_index=rec.script_index if rec.script_index is not None else -1,
                    request_index=rec.index,
                )
                queue = st.subagent if rec.kind == "subagent" else st.main
                if queue is not None and rec.script_index is not None:
                    queue.pending.append(tid)
            blocks.append(
                {"type": "tool_use", "id": tid, "name": block.name, "input": dict(block.input)}
            )
        return blocks


def _redact(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        k.lower(): ("<present>" if k.lower() in REDACTED_HEADERS else v) for k, v in headers.items()
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        fake: FakeAnthropic,
    ) -> None:
        self.fake = fake
        super().__init__(address, handler)


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _chunks(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeapi/1"
    sys_version = ""

    @property
    def fake(self) -> FakeAnthropic:
        server = self.server
        assert isinstance(server, _Server)
        return server.fake

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- verbs ------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self._probe(with_body=False)

    def do_GET(self) -> None:
        self._probe(with_body=True)

    def do_POST(self) -> None:
        raw = self._read_body()
        path = urlsplit(self.path).path.rstrip("/")
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        if path == "/v1/messages/count_tokens":
            self._count_tokens(body)
        elif path == "/v1/messages":
            self._messages(body)
        else:
            rec = self.fake._record("POST", self.path, dict(self.headers), body, "unknown")
            self._send_json(404, _not_found(self.path), rec, "not_found")

    def do_PUT(self) -> None:
        self._not_found_with_body()

    def do_DELETE(self) -> None:
        self._not_found_with_body()

    def do_PATCH(self) -> None:
        self._not_found_with_body()

    # --- endpoints -------------------------------------------------------------------

    def _probe(self, *, with_body: bool) -> None:
        path = urlsplit(self.path).path
        known = path in ("/", "/api/hello")
        rec = self.fake._record(
            self.command, self.path, dict(self.headers), None, "probe" if known else "unknown"
        )
        if known:
            payload = _json_bytes({"ok": True}) if with_body else b""
            status, outcome = 200, "probe"
        else:
            payload = _json_bytes(_not_found(self.path)) if with_body else b""
            status, outcome = 404, "not_found"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if with_body:
            self.wfile.write(payload)
        rec.status, rec.outcome = status, outcome

    def _not_found_with_body(self) -> None:
        body = self._read_body()
        rec = self.fake._record(
            self.command,
            self.path,
            dict(self.headers),
            body.decode("utf-8", "replace"),
            "unknown",
        )
        self._send_json(404, _not_found(self.path), rec, "not_found")

    def _count_tokens(self, body: Any) -> None:
        rec = self.fake._record("POST", self.path, dict(self.headers), body, "count_tokens")
        size = 0
        if isinstance(body, dict):
            size = len(json.dumps([body.get(k) for k in ("system", "messages", "tools")]))
        self._send_json(200, {"input_tokens": max(1, size // 4)}, rec, "count_tokens")

    def _messages(self, body: Any) -> None:
        fake = self.fake
        if not isinstance(body, dict):
            rec = fake._record("POST", self.path, dict(self.headers), body, "unknown")
            fake._error(f"request #{rec.index}: body is not a JSON object")
            err = HttpError(400, "invalid_request_error", "body must be a JSON object")
            self._send_json(400, err.body(_request_id(rec)), rec, "http_error")
            return
        headers = dict(self.headers)
        kind = fake.classify(body, _redact(headers))
        rec = fake._record("POST", self.path, headers, body, kind)
        item = fake._take(rec)
        if item == "unscripted":
            answer = fake.compact_text if kind == "compact" else fake.side_text
            side = Turn((Text(answer),), fake.side_usage, "end_turn")
            self._send_message(side, rec, kind)
        elif item is None:
            exhausted = Turn((Text(EXHAUSTED_TEXT),), Usage(1, 1), "end_turn")
            self._send_message(exhausted, rec, "exhausted")
        elif isinstance(item, Stall):
            self._stall(rec)
        elif isinstance(item, Disconnect):
            self._disconnect(item, rec)
        elif isinstance(item, HttpError):
            headers = dict(item.headers)
            self._send_json(item.status, item.body(_request_id(rec)), rec, "http_error", headers)
        else:
            self._send_message(item, rec, "turn")

    # --- responses ----------------------------------------------------------------------

    def _send_message(self, item: Turn, rec: RecordedRequest, outcome: str) -> None:
        fake = self.fake
        blocks = fake._materialise(item, rec)
        message: dict[str, Any] = {
            "id": fake._next_message_id(),
            "type": "message",
            "role": "assistant",
            "model": rec.model or "claude-fake",
            "content": blocks,
            "stop_reason": item.effective_stop_reason,
            "stop_sequence": None,
            "usage": item.usage.to_json(),
        }
        if not rec.stream:
            self._send_json(200, message, rec, outcome)
            return
        rec.status, rec.outcome = 200, outcome
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", _request_id(rec))
        self.end_headers()
        try:
            for event in _sse_events(message, item.usage, fake.chunk_size):
                name = event["type"]
                frame = f"event: {name}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"
                self._write_chunk(frame.encode())
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            rec.outcome = "client_gone"
            self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(
        self,
        status: int,
        obj: Any,
        rec: RecordedRequest,
        outcome: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        payload = _json_bytes(obj)
        rec.status, rec.outcome = status, outcome
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", _request_id(rec))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            rec.outcome = "client_gone"
            self.close_connection = True

    def _disconnect(self, item: Disconnect, rec: RecordedRequest) -> None:
        rec.outcome = "disconnect"
        self.close_connection = True
        try:
            if item.after_events > 0 and rec.stream:
                partial = Turn((Text(item.partial_text),), Usage(1, 1), "end_turn")
                message: dict[str, Any] = {
                    "id": self.fake._next_message_id(),
                    "type": "message",
                    "role": "assistant",
                    "model": rec.model or "claude-fake",
                    "content": [{"type": "text", "text": item.partial_text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": partial.usage.to_json(),
                }
                rec.status = 200
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                events = _sse_events(message, partial.usage, self.fake.chunk_size)
                for _, event in zip(range(item.after_events), events, strict=False):
                    frame = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                    self._write_chunk(frame.encode())
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _stall(self, rec: RecordedRequest) -> None:
        """Answer nothing until the client hangs up or the server closes."""
        closing = self.fake._closing
        sock = self.connection
        rec.outcome = "stall"
        while not closing.is_set():
            readable, _, _ = select.select([sock], [], [], 0.05)
            if not readable:
                continue
            try:
                peek = sock.recv(1, socket.MSG_PEEK)
            except OSError:
                peek = b""
            if not peek:
                rec.outcome = "stall:client_closed"
                break
            closing.wait(0.05)  # the client sent more bytes; keep ignoring them
        else:
            rec.outcome = "stall:server_closed"
        self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""


def _request_id(rec: RecordedRequest) -> str:
    return f"req_fake_{rec.index:04d}"


def _not_found(path: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": "not_found_error", "message": f"fakeapi: no route for {path}"},
    }


def _sse_events(message: Mapping[str, Any], usage: Usage, chunk: int) -> Iterator[dict[str, Any]]:
    start_usage = usage.to_json()
    start_usage["output_tokens"] = min(1, usage.output_tokens)
    yield {
        "type": "message_start",
        "message": {
            **message,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        },
    }
    yield {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            for piece in _chunks(block["text"], chunk):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": block["id"],
                    "name": block["name"],
                    "input": {},
                },
            }
            for piece in ["", *_chunks(json.dumps(block["input"]), chunk)]:
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": usage.to_json(),
    }
    yield {"type": "message_stop"}
