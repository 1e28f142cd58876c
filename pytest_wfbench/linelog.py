"""The results file's line log (``.results.lines`` in the out dir): for each line
of results.jsonl, in the file's order, its key (the digest of its bytes, what
the row cache is keyed by: :mod:`pytest_wfbench.rowcache`) and its length, with
the file's state after the write that added it (size, modification and change
times, inode, device).

The process that writes a row adds its entries at once, under the results
file's lock, after the row. Before it does, it compares the file's state as it
found it with the state the log's last entry records: a file that something
else wrote in between (a process killed before it logged its row, a hand edit,
a compaction that did not log) breaks the log, and a broken log is never read.
So a report that finds the log unbroken, its last entry's state the state of
the results file now, and the lengths adding up to the file's size, takes every
line's key from the log (some MB) instead of reading and digesting the file
(300 MB at 100,000 rows). Anything else, and it reads the file as before.

What it trusts is the file's state, as make, Python's ``.pyc`` files and git's
index do: an edit that keeps the file's size, its inode number and both of its
times is not seen. Since the file system's clock ticks every few milliseconds,
that is an edit of the same size (in place, or a new file that was given the
freed inode number) within the same tick as the last row's write; a file
system that keeps times in whole seconds is never trusted (:func:`whole_second_times`).
Only the harness writes the file (no arm's sandbox sees the out dir), under the
lock, and always at its end; a compaction (every sweep's end) writes the log
again when it rewrote the file or found the log broken. A log whose entries do
not check is read as no log, and a line the report must read (the cache does
not know it) must have the digest the log gives it, or the whole file is read.
Like the row cache, the log is as trusted as the results file beside it: what
can write the one can write the other.

Each entry also holds digests of its row's cell id and sweep id, so that a
sweep's end learns which cells have a row, and whether any has two (what a
compaction would supersede), from the log alone (:meth:`LoggedLines.recorded`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from operator import itemgetter
from pathlib import Path

from pytest_wfbench.cachefile import KEY_SIZE, LineKeys, line_key

LOG = ".results.lines"
_KEY, _LENGTH, _FLAGS, _PAD, _CELL, _SWEEP = "32s", "I", "B", "3x", "16s", "8s"
_STATE = "QqqQQ"
"""A file's size, modification and change times (ns), inode and device."""
ENTRY = struct.Struct(f"<{_KEY}{_LENGTH}{_FLAGS}{_PAD}{_CELL}{_SWEEP}{_STATE}")
"""A line's entry: its key (rowcache.line_key), its length (without the
newline), flags, the digests of its row's cell id and sweep id, and the results
file's state after the write that added it."""


def _at(fields: str) -> int:
    """Where the field after these ones starts in an entry."""
    return struct.calcsize(f"<{fields}")


_LENGTH_ONLY = struct.Struct(f"<{_at(_KEY)}x{_LENGTH}{ENTRY.size - _at(_KEY + _LENGTH)}x")
"""An entry read for its length alone."""
FLAGS_AT = _at(_KEY + _LENGTH)
CELL_AT = _at(_KEY + _LENGTH + _FLAGS + _PAD)
SWEEP_AT = _at(_KEY + _LENGTH + _FLAGS + _PAD + _CELL)
STATE_FIELD = 5
"""The index of the state's first field in an unpacked entry."""
BROKEN = 1
"""A flag: the file was not in the state the previous entry recorded when this
line was written (the log no longer describes the file)."""
NO_CELL = bytes(16)
"""The cell digest of a line whose row has no cell id (or that is no row)."""

Ids = tuple[object, object]
"""A row's cell id and sweep id, as its line has them."""

FileState = tuple[int, int, int, int, int]
"""A file's size, modification and change times (ns), inode and device."""


def cell_digest(cell_id: object) -> bytes:
    """What an entry holds of its row's cell id: NO_CELL unless it is a string
    (a row without one, or with another value, is superseded by a compaction)."""
    if not isinstance(cell_id, str):
        return NO_CELL
    return hashlib.blake2b(cell_id.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def sweep_digest(sweep_id: object) -> bytes:
    """What an entry holds of its row's sweep id."""
    if not isinstance(sweep_id, str):
        return bytes(8)
    return hashlib.blake2b(sweep_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def state_of(status: os.stat_result) -> FileState:
    """What an entry holds of the results file's state."""
    return (status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino,
            status.st_dev)


def whole_second_times(state: FileState) -> bool:
    """Whether the file system keeps the file's times in whole seconds (ext3,
    ext4 with small inodes, FAT...): an edit of the same size a second after the
    last row's write would keep its state. Such a file is always read whole."""
    return state[1] % 1_000_000_000 == 0 or state[2] % 1_000_000_000 == 0


_UNWRITABLE = (OSError, ValueError, OverflowError, struct.error)
"""What writing the log may meet (a full disk, a line of 4 GiB): it costs only a
report the reading of the file, never a row its write."""


def _entries(keys: Iterable[bytes], lengths: Iterable[int], ids: Iterable[Ids], flags: int,
             after: FileState) -> bytes:
    return b"".join(ENTRY.pack(key, length, flags, cell_digest(cell), sweep_digest(sweep), *after)
                    for key, length, (cell, sweep) in zip(keys, lengths, ids, strict=True))


def log_lines(out_dir: Path, lines: Sequence[bytes], ids: Sequence[Ids], before: FileState,
              after: FileState) -> None:
    """Add the entries of ``lines`` (rows of these cell and sweep ids), just
    written to the results file (which was in state ``before`` and is now in
    state ``after``). The caller holds the results file's lock."""
    with contextlib.suppress(*_UNWRITABLE):
        fd = os.open(out_dir / LOG, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644)
        try:
            size = os.fstat(fd).st_size
            if before[0] == 0 and size:  # a new results file: a new log
                os.ftruncate(fd, 0)
                size = 0
            flags = 0 if _continues(fd, size, before) else BROKEN
            _write(fd, _entries(map(line_key, lines), map(len, lines), ids, flags, after))
        finally:
            os.close(fd)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _continues(fd: int, size: int, before: FileState) -> bool:
    """Whether the log (``size`` bytes, open as ``fd``) describes the results
    file as it was found (``before``): its last entry unbroken and in that state."""
    if size == 0:
        return before[0] == 0
    if size % ENTRY.size:
        return False
    last = ENTRY.unpack(os.pread(fd, ENTRY.size, size - ENTRY.size))
    return not last[2] & BROKEN and last[STATE_FIELD:] == before


def rewrite_log(out_dir: Path, keys: Iterable[bytes], lengths: Iterable[int],
                ids: Iterable[Ids], after: FileState) -> None:
    """Replace the log (written to a new file first) by the entries of the lines
    of these keys, lengths and ids, the whole results file in state ``after``:
    what a compaction leaves. The caller holds the results file's lock."""
    path = out_dir / LOG
    temporary = path.with_name(f"{LOG}.{os.getpid()}.new")
    with contextlib.suppress(OSError):
        temporary.unlink()  # a leftover (or a planted link): never written through
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644)
        try:
            _write(fd, _entries(keys, lengths, ids, 0, after))
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except _UNWRITABLE:
        with contextlib.suppress(OSError):
            temporary.unlink()


@dataclass
class LoggedLines:
    """The results file's lines as its log has them, in the file's order."""

    entries: bytes
    lengths: Sequence[int]
    state: FileState
    """The results file's, as the last entry records it."""

    @cached_property
    def key_blob(self) -> LineKeys:
        """Each line's key (rowcache.line_key), in one blob (no object per key)."""
        import numpy as np  # a report's: the workers that write rows never load numpy

        table = np.frombuffer(self.entries, np.uint8).reshape(-1, ENTRY.size)
        return LineKeys(table[:, :KEY_SIZE].tobytes())

    @cached_property
    def cells(self) -> list[bytes]:
        """Each line's cell digest (:func:`cell_digest`)."""
        return self._field(CELL_AT, 16)

    def _field(self, start: int, size: int) -> list[bytes]:
        field = struct.Struct(f"<{start}x{size}s{ENTRY.size - start - size}x")
        return list(map(itemgetter(0), field.iter_unpack(self.entries)))

    @cached_property
    def offsets(self) -> Sequence[int]:
        """Where each line starts in the file (and, last, the file's size)."""
        return array("q", [0, *accumulate(length + 1 for length in self.lengths)])

    def one_row_a_cell(self) -> bool:
        """Whether every line is a row with a cell id, each of another cell: a
        compaction would supersede nothing."""
        cells = set(self.cells)
        return NO_CELL not in cells and len(cells) == len(self.lengths)

    def recorded(self, sweep_id: str, offset: int = 0) -> CellDigests:
        """The cells with a row of the sweep from byte ``offset`` on (a line's
        start, as a compaction returns it: results_offset)."""
        first = bisect_left(self.offsets, offset)
        sweep, cells, sweeps = sweep_digest(sweep_id), self.cells[first:], self._field(SWEEP_AT, 8)
        if set(sweeps[first:]) <= {sweep}:  # the rows of one sweep, as an out dir holds
            return CellDigests(set(cells))
        return CellDigests({cell for cell, of in zip(cells, sweeps[first:], strict=True)
                            if of == sweep})


class CellDigests(Container[str]):
    """Cells known by their digests (:func:`cell_digest`)."""

    def __init__(self, digests: set[bytes]) -> None:
        self.digests = digests

    def __contains__(self, cell_id: object) -> bool:
        return isinstance(cell_id, str) and cell_digest(cell_id) in self.digests

    def missing(self, cell_ids: Iterable[str]) -> list[str]:
        """The cells among these that are not here, in their order (a sweep's
        end asks it of every selected cell: cell_digest inlined)."""
        digests, blake2b = self.digests, hashlib.blake2b
        return [cell for cell in cell_ids if not isinstance(cell, str) or blake2b(
            cell.encode("utf-8", "surrogatepass"), digest_size=16).digest() not in digests]


_last: list[LoggedLines] = []
"""The log last read: a sweep's end reads it three times (the cells without a
row, the compaction, the report), and its lines need not be taken apart again."""


def forget_logged_lines() -> None:
    """Let the log last read go (some 30 MB at 100,000 lines): its last reader,
    the report, has taken what it needs."""
    _last.clear()


def logged_lines(out_dir: Path, results: Path) -> LoggedLines | None:
    """The lines of ``results`` from the out dir's log, or None when the log is
    missing, broken, damaged, or does not describe the file as it is now."""
    try:
        fd = os.open(out_dir / LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "rb") as log:
            entries = log.read()
        now = state_of(os.stat(results))
    except OSError:
        return None
    if _last and _last[0].entries == entries:  # the same bytes: the same checks hold
        return _last[0] if _last[0].state == now else None
    if not entries or len(entries) % ENTRY.size or whole_second_times(now):
        return None
    if ENTRY.unpack_from(entries, len(entries) - ENTRY.size)[STATE_FIELD:] != now:
        return None
    if entries[FLAGS_AT::ENTRY.size].strip(b"\0"):  # an entry that broke the log
        return None
    lengths = array("q", map(itemgetter(0), _LENGTH_ONLY.iter_unpack(entries)))
    if sum(lengths) + len(lengths) != now[0]:  # lines and their newlines, nothing else
        return None
    _last[:] = [LoggedLines(entries, lengths, now)]
    return _last[0]
