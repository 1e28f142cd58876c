"""A sandboxed command's process: its output read with a cap, its stdin fed,
its whole process group killed (the harness's side of :meth:`Sandbox.run`)."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

# Bytes of each output stream a command keeps (its head and its tail).
OUTPUT_CAP = 8 << 20


class CappedOutput:
    """A stream's output: its head and tail, at most OUTPUT_CAP bytes in all."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = OUTPUT_CAP // 2 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - OUTPUT_CAP // 2)]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        cut = f"\n[... {self.total - kept:,} bytes of output cut ...]\n" \
            if self.total > kept else ""
        return (self.head.decode("utf-8", "replace") + cut
                + self.tail.decode("utf-8", "replace"))


def communicate(process: subprocess.Popen[bytes], stdin: bytes | None,
                 timeout_s: float) -> tuple[CappedOutput, CappedOutput, bool]:
    """Feed stdin and read both streams, keeping a bounded part of each, until
    the process exits and its streams close, or the timeout."""
    assert process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + timeout_s
    out, err = CappedOutput(), CappedOutput()
    streams = {process.stdout.fileno(): out, process.stderr.fileno(): err}
    pending = memoryview(stdin or b"")
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            if pending:
                selector.register(process.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                process.stdin.close()
        timed_out = False
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            for key, _ in selector.select(min(remaining, 1.0)):
                fd = int(key.fd)
                if fd in streams:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if chunk:
                        streams[fd].add(chunk)
                    else:
                        selector.unregister(fd)
                else:
                    assert process.stdin is not None
                    try:
                        pending = pending[os.write(fd, pending[:1 << 16]):]
                    except (BrokenPipeError, BlockingIOError) as exc:
                        if isinstance(exc, BrokenPipeError):
                            pending = memoryview(b"")
                    if not pending:
                        selector.unregister(fd)
                        process.stdin.close()
    if timed_out:
        kill_group(process)
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None and not stream.closed:
            stream.close()
    try:
        process.wait(timeout=max(0.0, deadline - time.monotonic()) + 5)
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.wait()
        timed_out = True
    return out, err, timed_out


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
