"""A loopback fault fixture for publication faults: an HTTP endpoint that
answers a version-control client's read-only requests from a capture of the
remote, reads each complete push (mutation) request, then drops the connection
without replying. It keeps no remote state (the capture is taken once, and
nothing it receives goes anywhere) and listens on loopback only.

Each wire protocol (git smart HTTP here, Mercurial's in :mod:`.hgwire`) says
which requests are mutations and how read-only ones are answered.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from dataclasses import dataclass
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

SERVICE = "git-receive-pack"
# A request body that stops arriving (a replay that resends headers only) is
# given up after this long, so the client sees the connection die.
BODY_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Answer:
    """The reply to a read-only request."""

    body: bytes
    content_type: str
    status: int = 200


class WireProtocol(Protocol):
    """What a fault fixture needs to know of one client's protocol."""

    path: str
    """The repository's URL path (``/repo.git``)."""

    def is_mutation(self, method: str, target: str) -> bool:
        """Whether a request (method and request target) would change the remote."""
        ...

    def answer(self, method: str, target: str, headers: Message) -> Answer | None:
        """The reply to a read-only request, or None for a 404."""
        ...


def pkt_line(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


def advertisement(refs: bytes) -> bytes:
    """What ``GET info/refs?service=git-receive-pack`` answers, from the output
    of ``git receive-pack --stateless-rpc --advertise-refs <remote>`` (captured once)."""
    return pkt_line(f"# service={SERVICE}\n") + b"0000" + refs


class GitSmartHttp:
    """git's smart HTTP: the ref advertisement, then one receive-pack POST."""

    path = "/repo.git"

    def __init__(self, advertised: bytes) -> None:
        self.advertised = advertised

    def is_mutation(self, method: str, target: str) -> bool:
        return method == "POST" and target.split("?")[0].endswith(f"/{SERVICE}")

    def answer(self, method: str, target: str, headers: Message) -> Answer | None:
        if method == "GET" and target.endswith(f"/info/refs?service={SERVICE}"):
            return Answer(self.advertised, f"application/x-{SERVICE}-advertisement")
        return None


class CountingReader:
    """The request stream, counting every byte the fixture reads from it."""

    def __init__(self, stream: io.BufferedIOBase) -> None:
        self.stream = stream
        self.count = 0

    def readline(self, limit: int = -1) -> bytes:
        line = self.stream.readline(limit)
        self.count += len(line)
        return line

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.count += len(data)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class FaultFixture:
    """Counts requests; each complete mutation request gets no reply at all.

    ``keepalive`` keeps connections open after read-only answers (a client may
    then send its push on a reused connection, and may resend it when that
    connection dies unanswered); without it, every answer closes its connection.
    ``replays`` > 0 makes it a broken fixture on purpose: it delivers each mutation
    to its (absent) backend 1 + replays times, as a blindly retrying proxy would.
    """

    def __init__(self, protocol: WireProtocol, *, replays: int = 0,
                 keepalive: bool = False) -> None:
        self.protocol = protocol
        self.replays = replays
        self.keepalive = keepalive
        self.requests: list[dict[str, object]] = []
        self.mutation_requests_received = 0
        self.mutations_delivered = 0
        self.request_bytes = 0
        self.network_request_bytes = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = BODY_TIMEOUT_S

            def setup(self) -> None:
                super().setup()
                self.counter = CountingReader(self.rfile)
                self.rfile = self.counter  # type: ignore[assignment]

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                mutation = fixture.protocol.is_mutation(self.command, self.path)
                body, complete = self._read_body()
                fixture._log(self.command, self.path, len(body), complete, mutation,
                             self.counter.count)
                self.counter.count = 0
                if mutation:
                    if complete:
                        fixture._mutation(len(body))
                    # The fault: the request arrived in full, and no reply ever leaves.
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                answer = fixture.protocol.answer(self.command, self.path, self.headers)
                if answer is None:
                    self.send_error(404)
                    return
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(answer.body)))
                if not fixture.keepalive:
                    # On a kept-alive connection a client may resend a push whose
                    # connection dies unanswered (a blind replay), which would hide
                    # the client's own behaviour: only publication_replay wants it.
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(answer.body)

            def _read_body(self) -> tuple[bytes, bool]:
                try:
                    if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                        return self._read_chunked()
                    length = int(self.headers.get("Content-Length", "0"))
                    body = self.rfile.read(length)
                    return body, len(body) == length
                except (OSError, ValueError):
                    return b"", False

            def _read_chunked(self) -> tuple[bytes, bool]:
                chunks: list[bytes] = []
                while True:
                    size_line = self.rfile.readline()
                    if not size_line:
                        return b"".join(chunks), False
                    size = int(size_line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(chunks), True
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()

        return Handler

    def _log(self, method: str, target: str, size: int, complete: bool, mutation: bool,
             total_bytes: int) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": target, "bytes": size,
                                  "complete": complete, "mutation": mutation})
            self.network_request_bytes += total_bytes

    def _mutation(self, size: int) -> None:
        with self._lock:
            self.mutation_requests_received += 1
            self.mutations_delivered += 1 + self.replays
            self.request_bytes += size

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}{self.protocol.path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
