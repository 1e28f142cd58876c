"""A loopback fault fixture for interrupted publication: a git smart-HTTP
endpoint that advertises refs, reads one complete push request, then drops the
connection without replying. It keeps no remote state (the advertisement is
captured once, the seed repo is not kept) and listens on loopback only."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SERVICE = "git-receive-pack"


def pkt_line(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


def advertisement(bare_repo: Path) -> bytes:
    """What ``GET info/refs?service=git-receive-pack`` answers, captured once."""
    refs = subprocess.run(["git", "receive-pack", "--stateless-rpc", "--advertise-refs",
                           str(bare_repo)], capture_output=True, check=True).stdout
    return pkt_line(f"# service={SERVICE}\n") + b"0000" + refs


class FaultFixture:
    """Counts requests; each complete push request is a mutation that gets no reply.

    ``replays`` > 0 makes it a broken fixture on purpose: it delivers each mutation
    to its (absent) backend 1 + replays times, as a blindly retrying proxy would.
    """

    def __init__(self, advertised: bytes, *, replays: int = 0) -> None:
        self.advertised = advertised
        self.replays = replays
        self.requests: list[dict[str, object]] = []
        self.mutations_delivered = 0
        self.request_bytes = 0
        self._lock = threading.Lock()
        fixture = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                fixture._log("GET", self.path, 0, True)
                # Close after the advertisement: on a kept-alive connection libcurl
                # resends a request whose connection dies unanswered (a blind replay
                # of the push), which would hide the client's own behaviour.
                self.close_connection = True
                if self.path.endswith(f"/info/refs?service={SERVICE}"):
                    self.send_response(200)
                    self.send_header("Connection", "close")
                    self.send_header("Content-Type",
                                     f"application/x-{SERVICE}-advertisement")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Content-Length", str(len(fixture.advertised)))
                    self.end_headers()
                    self.wfile.write(fixture.advertised)
                else:
                    self.send_error(404)

            def do_POST(self) -> None:
                body, complete = self._read_body()
                fixture._log("POST", self.path, len(body), complete)
                if self.path.endswith(f"/{SERVICE}") and complete:
                    with fixture._lock:
                        fixture.mutations_delivered += 1 + fixture.replays
                        fixture.request_bytes += len(body)
                # The fault: the request arrived in full, and no reply ever leaves.
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

            def _read_body(self) -> tuple[bytes, bool]:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks: list[bytes] = []
                    while True:
                        size_line = self.rfile.readline()
                        if not size_line:
                            return b"".join(chunks), False
                        size = int(size_line.split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks), True
                        chunk = self.rfile.read(size)
                        self.rfile.readline()
                        chunks.append(chunk)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                return body, len(body) == length

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _log(self, method: str, path: str, size: int, complete: bool) -> None:
        with self._lock:
            self.requests.append({"method": method, "path": path, "bytes": size,
                                  "complete": complete})

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/repo.git"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
