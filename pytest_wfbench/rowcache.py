"""Each row's projection (:mod:`pytest_wfbench.projection`) kept beside
results.jsonl, so that a report of 100,000 rows does not parse 300 MB of JSON
again: parsing is most of its cost.

The cache (``.results.projections`` in the out dir) is never trusted for what
the file says: an entry is found by the digest of a row's line (its exact
bytes), so a line that changed, moved or was rewritten (a compacted results
file, a merge) is either found by its own bytes or parsed again, and a line the
cache does not know is always parsed. Entries are appended by the processes
that write the rows, a batch at a time under the results file's lock, and
rewritten whole by a report that found the cache stale or missing many lines.
An entry is a row's projection (the whole row, for a row the report lists).

The file is a sequence of frames, each ``MAGIC, tag, length, crc32, payload``:
the tag names what decides an entry besides its line (the projection's format,
the harness's version, the interpreter's marshal), and a frame of another tag is
passed over; the payload is a ``marshal`` of ``[(digest, entry), ...]`` (plain
data only). A torn or corrupted frame ends the reading; the lines it held are
parsed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import struct
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_wfbench import __version__
from pytest_wfbench.projection import project

CACHE = ".results.projections"
FORMAT = 2
"""Of the entries: a change of the projected fields must change it."""
MAGIC = b"WFP1"
TAG = hashlib.sha256(f"{FORMAT}\0{__version__}\0{sys.version_info[:2]}\0{marshal.version}"
                     .encode()).digest()[:8]
"""What decides an entry besides its line: the projection's format, the
harness, the interpreter's marshal. A frame of another tag is passed over."""
HEADER = struct.Struct("<4s8sII")
BATCH = 64
"""Rows a writer's frame holds."""
REWRITE_SHARE = 100
"""A report rewrites the cache when more than one line in this many was not in it."""
REWRITE_BATCH = 4096
"""Entries a frame of a rewritten cache holds."""

Row = dict[str, Any]
Entry = Row
"""A row's projection (the whole row when the report lists it)."""


def line_key(line: bytes) -> bytes:
    """The key of a row's line: the digest of its bytes."""
    return hashlib.sha256(line).digest()


def _frame(entries: list[tuple[bytes, Entry]]) -> bytes:
    payload = marshal.dumps(entries)
    return HEADER.pack(MAGIC, TAG, len(payload), zlib.crc32(payload)) + payload


def _frames(stream: IO[bytes]) -> Iterator[list[tuple[bytes, Entry]]]:
    while header := stream.read(HEADER.size):
        if len(header) < HEADER.size:
            return
        magic, tag, length, crc = HEADER.unpack(header)
        if magic != MAGIC:
            return
        payload = stream.read(length)
        if len(payload) < length or zlib.crc32(payload) != crc:
            return
        if tag != TAG:
            continue
        try:
            entries = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            return
        if isinstance(entries, list):
            yield entries


def load_entries(out_dir: Path) -> tuple[dict[bytes, Entry], int]:
    """The cache's entries by key, and how many frames held them (none when
    there is no cache, or it cannot be read)."""
    entries: dict[bytes, Entry] = {}
    frames = 0
    try:
        stream = (out_dir / CACHE).open("rb")
    except OSError:
        return entries, 0
    with stream:
        for frame in _frames(stream):
            frames += 1
            for item in frame:
                if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], bytes)
                        and isinstance(item[1], dict)):
                    entries[item[0]] = item[1]
    return entries, frames


def entries_of(lines: Iterable[bytes]) -> list[tuple[bytes, Entry]]:
    """The entries of rows' lines (a line that is not a row has none)."""
    entries = []
    for line in lines:
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict):
                entries.append((line_key(line), project(row)))
    return entries


def append_entries(out_dir: Path, entries: list[tuple[bytes, Entry]]) -> None:
    """Add a frame of entries. A cache that cannot be written costs only a
    report some parsing."""
    if entries:
        with contextlib.suppress(OSError, ValueError), (out_dir / CACHE).open("ab") as out:
            out.write(_frame(entries))


class CachedRows:
    """A writer's side of the cache: the entries of the rows it wrote, added a
    batch at a time (the caller holds the results file's lock). A frame of one
    row costs a report as much to read as a frame of many, so rows wait for
    their batch; rows whose batch never came (the process ended first) are
    simply parsed by the report."""

    def __init__(self, out_dir: Path, batch: int = BATCH) -> None:
        self.out_dir = out_dir
        self.batch = batch
        self._pending: list[tuple[bytes, Entry]] = []

    def add(self, lines: Iterable[bytes]) -> None:
        self._pending += entries_of(lines)
        if len(self._pending) >= self.batch:
            append_entries(self.out_dir, self._pending)
            self._pending = []


def rewrite_entries(out_dir: Path, entries: list[tuple[bytes, Entry]]) -> None:
    """Replace the cache by exactly these entries, REWRITE_BATCH to a frame (a
    frame is made, and read, whole: one frame of 100,000 rows would cost a report
    its whole payload in memory at once, twice over while it is written)."""
    path = out_dir / CACHE
    temporary = path.with_name(f"{CACHE}.{os.getpid()}.new")
    try:
        with temporary.open("wb") as out:
            for start in range(0, max(len(entries), 1), REWRITE_BATCH):
                out.write(_frame(entries[start:start + REWRITE_BATCH]))
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temporary.unlink()


@dataclass
class CacheUse:
    """What reading the results with the cache did (for the benchmark)."""

    lines: int = 0
    hits: int = 0
    missed: int = 0
    """Lines the cache did not know (parsed, or torn)."""
    parsed: int = 0
    """Lines parsed (the cache did not know them)."""
    rewritten: bool = False
    frames: int = 0
    stale: int = 0
    """Entries of the cache that no line of the file had."""


def _parsed(line: bytes) -> Row | None:
    try:
        row = json.loads(line)
    except ValueError:  # a torn line (a process killed mid-write), or not UTF-8
        return None
    return row if isinstance(row, dict) else None


def latest_rows(out_dir: Path, lines: Iterable[bytes], sweep_id: str | None,
                use: CacheUse | None = None) -> list[Row]:
    """The last row of each cell of the sweep (of every sweep when None) among
    the lines of out_dir's results file, in the order cells first appeared,
    each as its projection (listed rows whole): what ``latest_per_cell(iter_rows(
    results, sweep_id))`` gives, projected. Lines that do not parse are skipped.
    Rewrites the cache when it was stale or missed more than a few lines."""
    use = use if use is not None else CacheUse()
    cached, use.frames = load_entries(out_dir)
    latest: dict[str, Row] = {}
    seen: list[tuple[bytes, Entry]] = []
    found, sha256 = cached.get, hashlib.sha256  # line_key, inlined: once per line
    lines_read = missed = parsed = 0
    for line in lines:
        if not line or line.isspace():
            continue
        lines_read += 1
        key = sha256(line).digest()
        entry = found(key)
        if entry is None:
            missed += 1
            row = _parsed(line)
            if row is None:
                continue
            parsed += 1
            entry = project(row)
        seen.append((key, entry))
        if sweep_id is None or entry.get("sweep_id") == sweep_id:
            latest[str(entry.get("cell_id"))] = entry
    use.lines += lines_read
    use.missed += missed
    use.parsed += parsed
    use.hits = use.lines - use.missed
    use.stale = len(cached.keys() - {key for key, _ in seen})
    if use.stale or use.missed * REWRITE_SHARE > use.lines:
        rewrite_entries(out_dir, seen)
        use.rewritten = True
    return list(latest.values())
