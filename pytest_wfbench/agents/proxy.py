"""An Anthropic API proxy on the harness's side of the sandbox.

Agent sessions talk to the proxy with a per-session token; the proxy forwards
to the real endpoint with the real key, so the key never enters the sandbox.
Everything the model sends back passes through it, so the proxy's record of
each session's tool calls (and of their results, in the next request) is
evidence the agent cannot write: skill invocations are read from here, not
from the transcript in the agent's HOME.
"""

from __future__ import annotations

import http.client
import json
import secrets
import shutil
import socketserver
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate",
                        "proxy-authorization", "te", "trailers", "transfer-encoding",
                        "upgrade", "host", "content-length", "accept-encoding", "x-api-key",
                        "authorization"})
DEFAULT_UPSTREAM = "https://api.anthropic.com"
UPSTREAM_TIMEOUT_S = 900.0


@dataclass
class SessionLog:
    """What one session's requests and the model's answers showed."""

    tool_uses: dict[str, dict[str, Any]] = field(default_factory=dict)
    """tool_use id -> {"name", "input"}, from the model's answers."""
    tool_results: dict[str, bool] = field(default_factory=dict)
    """tool_use id -> is_error, from the client's next requests."""
    requests: int = 0
    service_failures: list[str] = field(default_factory=list)
    """The model service failing: an answer of HTTP 5xx or 429, an error event in
    a stream, no answer at all; or any error answer before the model's first
    tool call (until then every request is the CLI's own, none the agent's). A
    session that fails without one failed by its own doing."""

    def skills_invoked(self) -> list[str]:
        """Skills the model called and whose launch came back without error."""
        return [str(use["input"].get("skill")) for tool_id, use in self.tool_uses.items()
                if use["name"] == "Skill" and isinstance(use["input"], dict)
                and self.tool_results.get(tool_id) is False]


class SseToolUses:
    """Reassembles tool_use blocks from a streamed answer."""

    def __init__(self, log: SessionLog) -> None:
        self.log = log
        self.buffer = b""
        self.blocks: dict[int, dict[str, Any]] = {}

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while b"\n\n" in self.buffer:
            event, self.buffer = self.buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self._data(line[5:].strip())

    def _data(self, raw: bytes) -> None:
        try:
            event = json.loads(raw)
        except json.JSONDecodeError:
            return
        kind, index = event.get("type"), event.get("index")
        if kind == "content_block_start" and event["content_block"].get("type") == "tool_use":
            block = event["content_block"]
            self.blocks[index] = {"id": block.get("id"), "name": block.get("name"), "json": ""}
        elif kind == "content_block_delta" and index in self.blocks:
            delta = event.get("delta", {})
            if delta.get("type") == "input_json_delta":
                self.blocks[index]["json"] += delta.get("partial_json", "")
        elif kind == "error":
            error = event.get("error")
            name = error.get("type") if isinstance(error, dict) else None
            self.log.service_failures.append(f"an error event in the stream ({name})")
        elif kind == "content_block_stop" and index in self.blocks:
            block = self.blocks.pop(index)
            try:
                value = json.loads(block["json"] or "{}")
            except json.JSONDecodeError:
                value = {}
            self.log.tool_uses[str(block["id"])] = {"name": block["name"], "input": value}


class ApiProxy:
    """Started once per process that runs agent cells; one token per session."""

    def __init__(self, upstream: str | None, api_key: str) -> None:
        self.upstream = urlsplit(upstream or DEFAULT_UPSTREAM)
        self.api_key = api_key
        self.sessions: dict[str, SessionLog] = {}
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            # Close-delimited answers: the stream goes through as it arrives.
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_HEAD(self) -> None:
                proxy._forward(self, "HEAD")

            def do_GET(self) -> None:
                proxy._forward(self, "GET")

            def do_POST(self) -> None:
                proxy._forward(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        # The same service on a unix socket, for sandboxes without a network.
        self.socket_dir = Path(tempfile.mkdtemp(prefix="wfbench-api-"))
        self.socket_path = self.socket_dir / "api.sock"
        self.unix_server = _UnixHTTPServer(str(self.socket_path), Handler)
        self.unix_server.daemon_threads = True
        threading.Thread(target=self.unix_server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def new_session(self) -> tuple[str, SessionLog]:
        """A token for one session's ``ANTHROPIC_API_KEY`` and its log."""
        token = f"wfbench-session-{secrets.token_hex(16)}"
        log = SessionLog()
        with self._lock:
            self.sessions[token] = log
        return token, log

    def close(self) -> None:
        for server in (self.server, self.unix_server):
            server.shutdown()
            server.server_close()
        shutil.rmtree(self.socket_dir, ignore_errors=True)

    def _forward(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        token = handler.headers.get("x-api-key") or ""
        log = self.sessions.get(token)
        if log is None:
            handler.send_error(401, "unknown session token")
            return
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        log.requests += 1
        # Before the model's first tool call nothing the agent runs exists yet:
        # every request so far is the CLI's own.
        agents_turn = bool(log.tool_uses)
        self._read_tool_results(body, log)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        headers["x-api-key"] = self.api_key
        headers["accept-encoding"] = "identity"
        headers["content-length"] = str(len(body))
        connection_class = (http.client.HTTPSConnection if self.upstream.scheme == "https"
                            else http.client.HTTPConnection)
        connection = connection_class(self.upstream.netloc, timeout=UPSTREAM_TIMEOUT_S)
        path = self.upstream.path.rstrip("/") + handler.path
        try:
            try:
                connection.request(method, path, body=body or None, headers=headers)
                response = connection.getresponse()
            except (OSError, http.client.HTTPException) as error:
                log.service_failures.append(f"no answer ({type(error).__name__})")
                raise
            if response.status >= 500 or response.status == 429 or (
                    response.status >= 400 and not agents_turn):
                log.service_failures.append(f"HTTP {response.status}")
            handler.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP:
                    handler.send_header(key, value)
            handler.end_headers()
            streaming = "text/event-stream" in (response.getheader("Content-Type") or "")
            parser = SseToolUses(log) if streaming else None
            collected = b""
            chunks = _chunks(response)
            while True:
                try:
                    chunk = next(chunks, b"")
                except (OSError, http.client.HTTPException) as error:
                    log.service_failures.append(f"an answer cut short ({type(error).__name__})")
                    raise
                if not chunk:
                    break
                if parser is not None:
                    parser.feed(chunk)
                else:
                    collected += chunk
                # The client going away (the CLI killed mid-answer) is no failure
                # of the service's: not recorded.
                handler.wfile.write(chunk)
                handler.wfile.flush()
            if parser is None:
                self._read_answer(collected, log)
        except (OSError, http.client.HTTPException):
            handler.close_connection = True
        finally:
            connection.close()

    @staticmethod
    def _read_tool_results(body: bytes, log: SessionLog) -> None:
        try:
            request = json.loads(body) if body else {}
        except json.JSONDecodeError:
            return
        for message in request.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    log.tool_results[str(block.get("tool_use_id"))] = bool(block.get("is_error"))

    @staticmethod
    def _read_answer(body: bytes, log: SessionLog) -> None:
        try:
            answer = json.loads(body) if body else {}
        except json.JSONDecodeError:
            return
        for block in answer.get("content") or [] if isinstance(answer, dict) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                log.tool_uses[str(block.get("id"))] = {"name": block.get("name"),
                                                       "input": block.get("input") or {}}


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """An HTTP server on a unix socket (handlers see an empty client address)."""

    def get_request(self) -> tuple[Any, Any]:
        request, _ = super().get_request()
        return request, ("unix", 0)


def _chunks(response: http.client.HTTPResponse) -> Iterator[bytes]:
    while True:
        chunk = response.read1(65536)
        if not chunk:
            return
        yield chunk
