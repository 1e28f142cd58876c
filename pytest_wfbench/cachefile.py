"""The row cache's file (``.results.projections``, :mod:`pytest_wfbench.rowcache`):
its frames, written by the rows' writers and by reports, read defensively, and
the keys of the rows they hold, found at once for a report's lines.

The file is a sequence of frames, each ``MAGIC, tag, length, crc32, payload``:
the tag names what decides a frame besides its lines (the table's format, the
harness's version, the interpreter's marshal, the machine's byte order), and a
frame of another tag is passed over; the payload is a ``marshal`` of a
:mod:`~pytest_wfbench.table.frame` (plain data only). A torn, corrupted or
misshapen frame ends the reading; the lines it held are parsed again.
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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, overload

from pytest_wfbench import __version__
from pytest_wfbench.table import Frame, FrameError, Table, check, encode
from pytest_wfbench.table.frame import KEY_SIZE as KEY_SIZE

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Row = dict[str, Any]

CACHE = ".results.projections"
FORMAT = 5
"""Of the frames: a change of the table's columns must change it (4: shared
strings coded; 5: cell ids packed, keys a blob)."""
MAGIC = b"WFP1"
TAG = hashlib.sha256(
    f"{FORMAT}\0{__version__}\0{sys.version_info[:2]}\0{marshal.version}\0{sys.byteorder}"
    f"\0{array('d').itemsize}".encode()).digest()[:8]
"""What decides a frame besides its lines: the table's format, the harness, the
interpreter's marshal, the byte order of its numbers. A frame of another tag is
passed over."""
HEADER = struct.Struct("<4s8sII")
BATCH = 256
"""Rows a writer's frame holds (a report reads 100,000 rows in frames of 64 in
0.29 s, of 256 in 0.20 s)."""
READ_BATCH = 16384
"""Rows a report adds to its table at once (of as many frames as hold them:
counted by frames of a writer's size, the 25 frames a report writes of 100,000
rows were added at once, 50 MiB above the table at the peak)."""


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




class LineKeys(Sequence[bytes]):
    """Lines' keys (each KEY_SIZE bytes) in one blob, without an object per key
    (100,000 keys as bytes objects and their index took some 20 MB)."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        self.size = len(blob) // KEY_SIZE

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[bytes]:
        return map(itemgetter(0), struct.iter_unpack(f"{KEY_SIZE}s", self.blob))

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...

    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(index)
        start = index * KEY_SIZE
        return self.blob[start:start + KEY_SIZE]

    def array(self) -> npt.NDArray[np.bytes_]:
        import numpy as np  # a report's: the workers that write rows never load numpy

        return np.frombuffer(self.blob, f"S{KEY_SIZE}")


@dataclass
class _Read:
    """What reading the cache found."""

    keys: bytearray = field(default_factory=bytearray)
    """The key of each keyed row (KEY_SIZE bytes each), in the cache's order."""
    positions: array[int] = field(default_factory=lambda: array("q"))
    """Each key's position in the table."""
    frames: int = 0
    whole: bool = True
    """Read to its end, not stopped by a damaged or misshapen frame."""
    other: int = 0
    """Frames of another tag (another harness's), passed over."""
    unkeyed: int = 0
    """Rows of frames without keys: no line finds them."""

    def add(self, keys: bytes, base: int) -> None:
        """The keys of a frame (checked: KEY_SIZE bytes a row) whose first row
        is at ``base``."""
        self.keys += keys
        self.positions.extend(range(base, base + len(keys) // KEY_SIZE))

    @cached_property
    def index(self) -> dict[bytes, int]:
        """Each key's position in the table (of a key cached twice, the later:
        the same line, so the same row; either would do)."""
        return dict(zip(LineKeys(bytes(self.keys)), self.positions, strict=True))

    def find(self, lines: LineKeys) -> tuple[list[int | None], int]:
        """Each line's position in the table (None: the cache does not know
        it), as ``index`` gives them (found at once: sorted keys searched), and
        how many keys the cache knows."""
        if not self.keys:
            return [None] * len(lines), 0
        import numpy as np  # a report's: the workers that write rows never load numpy

        cached = np.frombuffer(self.keys, f"S{KEY_SIZE}")
        order = np.argsort(cached, kind="stable")
        ordered = cached[order]
        wanted = lines.array()
        at = np.maximum(np.searchsorted(ordered, wanted, side="right") - 1, 0)  # the later
        hit = ordered[at] == wanted
        found = np.frombuffer(self.positions, np.int64)[order[at]]
        positions: list[int | None] = found.tolist()
        for index in np.flatnonzero(~hit).tolist():
            positions[index] = None
        return positions, int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1


def _read_cache(out_dir: Path, table: Table) -> _Read:
    """The cache's frames added to ``table`` (a few thousand rows at a time:
    each column grows once a batch)."""
    read = _Read()
    try:
        stream = (out_dir / CACHE).open("rb")
    except OSError:
        return read
    batch: list[Frame] = []
    rows = 0  # in the batch: a report's frames hold REWRITE_BATCH rows, a writer's BATCH

    def add() -> None:
        nonlocal rows
        for frame, base in zip(batch, table.extend(batch), strict=True):
            read.add(frame[1], base)
        read.frames += len(batch)
        batch.clear()
        rows = 0

    with stream:
        for frame in _frames(stream):
            if frame is _OTHER:
                read.other += 1
                continue
            try:
                if frame is None:
                    raise FrameError("a damaged frame")
                batch.append(check(frame))
            except FrameError:
                read.whole = False
                break
            if not frame[1]:
                read.unkeyed += frame[0]
            rows += frame[0]
            if rows >= READ_BATCH:
                add()
        add()
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
    as much to read as a frame of many, so rows wait for their batch, and the
    rest are added when the process's session ends (:meth:`flush`); rows whose
    batch never came (the process was killed first) are simply parsed by the
    report."""

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
            self.flush()

    @property
    def waiting(self) -> bool:
        """Whether rows wait for their batch."""
        return bool(self._rows)

    def flush(self) -> None:
        """Add the rows waiting for their batch now (the process writes no more
        rows: its session ends)."""
        if not self._rows:
            return
        batch, self._keys, self._rows = (self._rows, self._keys), [], []
        try:
            frame = encode(*batch)
        except Exception:  # the cache must never cost a row its write
            return  # these rows are parsed by the report
        append_frames(self.out_dir, [frame])


def rewrite(out_dir: Path, frames: Iterable[Frame]) -> bool:
    """Replace the cache by exactly these frames (written to a new file first);
    whether it was (an error writing them, or making them, leaves it as it was)."""
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
        return False
    return True
