"""Each row's columns (:mod:`pytest_wfbench.table`) kept beside results.jsonl,
so that a report of 100,000 rows neither parses 300 MB of JSON again (parsing is
most of its cost) nor holds the rows: it reads its table a frame at a time.

The cache (``.results.projections`` in the out dir) speaks only for the lines
whose digests key it: a row is found by the digest of its line (its exact
bytes), so a line that changed, moved or was rewritten (a compacted results
file, a merge) is either found by its own bytes or parsed again, and a line the
cache does not know is always parsed. It is as trusted as results.jsonl beside
it (what can write the one can write the other; no arm's sandbox sees either),
and read defensively: a frame of the wrong shape ends the reading, and the rows
of a frame without keys are no line's. Frames are appended by the processes that write the
rows, a batch at a time under the results file's lock, and by a report that
parsed many lines; a report that found many entries no line has (a compacted
file) writes the cache again, as its lines are.

The file is a sequence of frames, each ``MAGIC, tag, length, crc32, payload``:
the tag names what decides a frame besides its lines (the table's format, the
harness's version, the interpreter's marshal, the machine's byte order), and a
frame of another tag is passed over; the payload is a ``marshal`` of a
:mod:`~pytest_wfbench.table.frame` (plain data only). A torn, corrupted or
misshapen frame ends the reading; the lines it held are parsed again.

A report takes the lines' keys from the results file's line log when it
describes the file as it is (:mod:`pytest_wfbench.readback`), and reads only
the lines the cache does not know; else it reads every line.
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
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_wfbench import __version__
from pytest_wfbench.table import Frame, FrameError, Table, encode
from pytest_wfbench.table.frame import Record, encode_records, record_of

CACHE = ".results.projections"
FORMAT = 3
"""Of the frames: a change of the table's columns must change it."""
MAGIC = b"WFP1"
TAG = hashlib.sha256(
    f"{FORMAT}\0{__version__}\0{sys.version_info[:2]}\0{marshal.version}\0{sys.byteorder}"
    f"\0{array('d').itemsize}".encode()).digest()[:8]
"""What decides a frame besides its lines: the table's format, the harness, the
interpreter's marshal, the byte order of its numbers. A frame of another tag is
passed over."""
HEADER = struct.Struct("<4s8sII")
BATCH = 64
"""Rows a writer's frame holds."""
REWRITE_SHARE = 100
"""A report adds to the cache, or writes it again, when more than one line in
this many was not in it, or more than one entry in this many no line has."""
REWRITE_BATCH = 4096
"""Rows a frame written by a report holds."""

Row = dict[str, Any]


def line_key(line: bytes) -> bytes:
    """The key of a row's line: the digest of its bytes."""
    return hashlib.sha256(line).digest()


def _frame(frame: Frame) -> bytes:
    payload = marshal.dumps(frame)
    return HEADER.pack(MAGIC, TAG, len(payload), zlib.crc32(payload)) + payload


_OTHER: Frame = ()
"""What _frames yields for a frame of another tag (passed over)."""


def _frames(stream: IO[bytes]) -> Iterator[Frame | None]:
    """The frames of this harness in the stream, up to the first that is torn
    or damaged: then None (a frame of another harness: _OTHER)."""
    while header := stream.read(HEADER.size):
        if len(header) < HEADER.size:
            break
        magic, tag, length, crc = HEADER.unpack(header)
        if magic != MAGIC:
            break
        payload = stream.read(length)
        if len(payload) < length or zlib.crc32(payload) != crc:
            break
        if tag != TAG:
            yield _OTHER
            continue
        try:
            frame = marshal.loads(payload)
        except (ValueError, EOFError, TypeError):
            break
        yield frame  # its shape is checked by Table.append
    else:
        return
    yield None


@dataclass
class _Read:
    """What reading the cache found."""

    index: dict[bytes, int]
    """Each key's position in the table."""
    frames: int = 0
    whole: bool = True
    """Read to its end, not stopped by a damaged or misshapen frame."""
    other: int = 0
    """Frames of another tag (another harness's), passed over."""
    unkeyed: int = 0
    """Rows of frames without keys: no line finds them."""


def _read_cache(out_dir: Path, table: Table) -> _Read:
    """The cache's frames added to ``table``."""
    read = _Read({})
    try:
        stream = (out_dir / CACHE).open("rb")
    except OSError:
        return read
    with stream:
        for frame in _frames(stream):
            if frame is _OTHER:
                read.other += 1
                continue
            try:
                if frame is None:
                    raise FrameError("a damaged frame")
                base = table.append(frame)
            except FrameError:
                read.whole = False
                return read
            read.frames += 1
            if not frame[1]:
                read.unkeyed += frame[0]
            # A key twice (the same line cached twice) is the same row: either will do.
            read.index.update(zip(frame[1], range(base, base + frame[0]), strict=False))
    return read


def load_entries(out_dir: Path) -> tuple[dict[bytes, Row], int]:
    """The cache's rows (their projections) by key, and how many frames held
    them (none when there is no cache, or it cannot be read)."""
    table = Table()
    read = _read_cache(out_dir, table)
    return {key: table.row(position) for key, position in read.index.items()}, read.frames


def _parsed_rows(lines: Iterable[bytes]) -> tuple[list[bytes], list[Row]]:
    keys, rows = [], []
    for line in lines:
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            if isinstance(row, dict):
                keys.append(line_key(line))
                rows.append(row)
    return keys, rows


def append_frames(out_dir: Path, frames: Iterable[Frame]) -> None:
    """Add frames to the cache. A cache that cannot be written costs only a
    report some parsing."""
    data = b"".join(_frame(frame) for frame in frames)
    if data:
        with contextlib.suppress(OSError, ValueError), (out_dir / CACHE).open("ab") as out:
            out.write(data)


class CachedRows:
    """A writer's side of the cache: the rows it wrote, added a batch at a time
    (the caller holds the results file's lock). A frame of one row costs a report
    as much to read as a frame of many, so rows wait for their batch; rows whose
    batch never came (the process ended first) are simply parsed by the report."""

    def __init__(self, out_dir: Path, batch: int = BATCH) -> None:
        self.out_dir = out_dir
        self.batch = batch
        self._keys: list[bytes] = []
        self._rows: list[Row] = []

    def add(self, lines: Iterable[bytes]) -> None:
        keys, rows = _parsed_rows(lines)
        self._keys += keys
        self._rows += rows
        if len(self._rows) >= self.batch:
            batch, self._keys, self._rows = (self._rows, self._keys), [], []
            try:
                frame = encode(*batch)
            except Exception:  # the cache must never cost a row its write
                return  # these rows are parsed by the report
            append_frames(self.out_dir, [frame])


def rewrite(out_dir: Path, frames: Iterable[Frame]) -> None:
    """Replace the cache by exactly these frames (written to a new file first)."""
    path = out_dir / CACHE
    temporary = path.with_name(f"{CACHE}.{os.getpid()}.new")
    with contextlib.suppress(OSError):
        temporary.unlink()  # a leftover (or a planted link): never written through
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with open(fd, "wb") as out:
            for frame in frames:
                out.write(_frame(frame))
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
    """The cache was added to, or written again."""
    frames: int = 0
    stale: int = 0
    """Entries of the cache that no line of the file had."""
    logged: bool = False
    """The lines' keys came from the results file's line log (not read and digested)."""


def _parsed(line: bytes) -> Row | None:
    try:
        row = json.loads(line)
    except ValueError:  # a torn line (a process killed mid-write), or not UTF-8
        return None
    return row if isinstance(row, dict) else None


def latest_table(out_dir: Path, lines: Iterable[bytes], sweep_id: str | None,
                 use: CacheUse | None = None) -> Table:
    """The table of out_dir's results file's lines, through the cache: its
    ``positions`` are the last row of each cell of the sweep (of every sweep
    when None), in the order cells first appeared: what ``latest_per_cell(
    iter_rows(results, sweep_id))`` gives. Lines that do not parse are skipped.
    Adds the rows it parsed to the cache when it missed many lines, and writes
    the cache again, as the lines are, when many of its entries are stale or it
    is damaged."""
    current = [b""]  # the line just keyed: all a miss needs (the lines are not kept)
    sha256 = hashlib.sha256

    def keys() -> Iterator[bytes]:
        for line in lines:
            if line and not line.isspace():
                current[0] = line
                yield sha256(line).digest()

    def fetch(index: int) -> bytes:
        return current[0]  # a miss is fetched as soon as its key is yielded

    return table_of_keys(out_dir, keys(), fetch, sweep_id, use)


def table_of_keys(out_dir: Path, keys: Iterable[bytes], fetch: Callable[[int], bytes],
                  sweep_id: str | None, use: CacheUse | None) -> Table:
    """:func:`latest_table` of the lines of these keys, in order (``fetch``
    gives the bytes of the line of an index the cache does not know)."""
    use = use if use is not None else CacheUse()
    table = Table()
    read = _read_cache(out_dir, table)
    use.frames = read.frames
    cells, sweeps = table.objects["cell_id"], table.objects["sweep_id"]
    hit: set[bytes] = set()
    latest: dict[str, int] = {}
    ordered: list[bytes] = []
    positions: list[int] = []
    pending_keys: list[bytes] = []
    pending: list[Record] = []
    parsed_frames: list[Frame] = []
    found, seen = read.index.get, hit.add
    lines_read = missed = 0
    for key in keys:
        lines_read += 1
        position = found(key)
        if position is not None:
            seen(key)
            cell, sweep = cells[position], sweeps[position]
        else:
            missed += 1
            row = _parsed(fetch(lines_read - 1))
            if row is None:
                continue
            position = table.size + len(pending)
            pending.append(record_of(row))  # read while at hand; the row is not kept
            pending_keys.append(key)
            cell, sweep = row.get("cell_id"), row.get("sweep_id")
            if len(pending) >= REWRITE_BATCH:
                parsed_frames.append(encode_records(pending, pending_keys))
                table.append(parsed_frames[-1])
                pending, pending_keys = [], []
        ordered.append(key)
        positions.append(position)
        if sweep_id is None or sweep == sweep_id:
            latest[str(cell)] = position
    if pending:
        parsed_frames.append(encode_records(pending, pending_keys))
        table.append(parsed_frames[-1])
    table.positions = list(latest.values())
    use.lines += lines_read
    use.missed += missed
    use.parsed += sum(frame[0] for frame in parsed_frames)
    use.hits = use.lines - use.missed
    use.stale = len(read.index) - len(hit) + read.unkeyed
    many_missed = missed * REWRITE_SHARE > use.lines
    if (not read.whole or use.stale * REWRITE_SHARE > use.lines
            or (read.other and many_missed)):  # another harness's frames: dropped
        rewrite(out_dir, (table.frame(positions[start:start + REWRITE_BATCH],
                                      ordered[start:start + REWRITE_BATCH])
                          for start in range(0, max(len(positions), 1), REWRITE_BATCH)))
        use.rewritten = True
    elif many_missed:
        append_frames(out_dir, parsed_frames)
        use.rewritten = True
    return table


def line_ids(out_dir: Path, lines: Iterable[bytes]) -> list[tuple[object, object]]:
    """Each line's cell id and sweep id, as its row has them, through the cache
    (None for a line that is not a row, or a row without one)."""
    table = Table()
    cells, sweeps = table.objects["cell_id"], table.objects["sweep_id"]
    found, sha256 = _read_cache(out_dir, table).index.get, hashlib.sha256
    out: list[tuple[object, object]] = []
    for line in lines:
        position = found(sha256(line).digest())
        if position is not None:
            out.append((cells[position], sweeps[position]))
        else:
            row = _parsed(line)
            out.append((None, None) if row is None else (row.get("cell_id"),
                                                         row.get("sweep_id")))
    return out


def latest_rows(out_dir: Path, lines: Iterable[bytes], sweep_id: str | None,
                use: CacheUse | None = None) -> list[Row]:
    """The projections of :func:`latest_table`'s rows (listed rows whole)."""
    return latest_table(out_dir, lines, sweep_id, use).rows()
