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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast, overload

from pytest_wfbench import __version__
from pytest_wfbench.projection import project
from pytest_wfbench.table import Frame, FrameError, Table, check, encode, gather
from pytest_wfbench.table.frame import Record, encode_records, record_of

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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
BATCH = 256
"""Rows a writer's frame holds (a report reads 100,000 rows in frames of 64 in
0.29 s, of 256 in 0.20 s)."""
REWRITE_SHARE = 100
"""A report adds to the cache, or writes it again, when more than one line in
this many was not in it, or more than one entry in this many no line has."""
REWRITE_BATCH = 4096
"""Rows a frame written by a report holds."""
READ_BATCH = 16384
"""Rows (of writers' frames) a report adds to its table at once."""

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


KEY_SIZE = 32
"""A line's key: its sha256 digest."""


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

    def add(self, keys: tuple[bytes, ...], base: int) -> None:
        """The keys of a frame whose first row is at ``base`` (a key of another
        size is no line's: left out, and never cut into others)."""
        if all(len(key) == KEY_SIZE for key in keys):
            self.keys += b"".join(keys)
            self.positions.extend(range(base, base + len(keys)))
            return
        for offset, key in enumerate(keys):
            if len(key) == KEY_SIZE:
                self.keys += key
                self.positions.append(base + offset)

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

    def add() -> None:
        for frame, base in zip(batch, table.extend(batch), strict=True):
            read.add(frame[1], base)
        read.frames += len(batch)
        batch.clear()

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
            if len(batch) * BATCH >= READ_BATCH:
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


class _Parsed:
    """The rows of the lines the cache does not know, parsed and added to the
    table a frame at a time (REWRITE_BATCH rows)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.keys: list[bytes] = []
        self.records: list[Record] = []
        self.frames: list[Frame] = []

    def add(self, key: bytes, line: bytes) -> int | None:
        """The position of the line's row in the table, or None when the line
        is not a row (torn)."""
        row = _parsed(line)
        if row is None:
            return None
        position = self.table.size + len(self.records)
        self.records.append(record_of(row))  # read while at hand; the row is not kept
        self.keys.append(key)
        if len(self.records) >= REWRITE_BATCH:
            self._flush()
        return position

    def _flush(self) -> None:
        self.frames.append(encode_records(self.records, self.keys))
        self.table.append(self.frames[-1])
        self.records, self.keys = [], []

    def done(self) -> list[Frame]:
        """The frames of the parsed rows (each already in the table)."""
        if self.records:
            self._flush()
        return self.frames


def _latest(table: Table, positions: list[int], sweep_id: str | None) -> list[int]:
    """Of these rows, the last of each cell (of the sweep; of every sweep when
    None), in the order cells first appeared."""
    if sweep_id is not None and positions:
        sweeps = gather(table.objects["sweep_id"], positions)
        if not all(sweep == sweep_id for sweep in sweeps):
            positions = [position for position, sweep in zip(positions, sweeps, strict=True)
                         if sweep == sweep_id]
    cells = gather(table.objects["cell_id"], positions)
    return list(dict(zip(map(str, cells), positions, strict=True)).values())


Located = tuple[Path, Sequence[int], Sequence[int]]
"""The results file, and where each of its lines starts and how long it is."""


def _whole_rows(path: Path, lines: dict[int, tuple[int, int, bytes]]
                ) -> Callable[[Sequence[int]], list[Row | None]]:
    """A reader of the whole rows of a table's slim rows (Table.read_whole):
    each one's line read again where it was (the file opened once a call, the
    lines in the file's order), and only if it is still the line of that key."""
    def read(positions: Sequence[int]) -> list[Row | None]:
        found: dict[int, Row | None] = {}
        wanted = sorted((lines[position], position) for position in set(positions)
                        if position in lines)
        try:
            with path.open("rb") as stream:
                for (offset, length, key), position in wanted:
                    stream.seek(offset)
                    line = stream.read(length)
                    row = _parsed(line) if line_key(line) == key else None
                    found[position] = None if row is None else project(row)
        except OSError:
            pass
        return [found.get(position) for position in positions]
    return read


def table_of_keys(out_dir: Path, keys: Iterable[bytes], fetch: Callable[[int], bytes],
                  sweep_id: str | None, use: CacheUse | None,
                  located: Located | None = None) -> Table:
    """:func:`latest_table` of the lines of these keys, in order (``fetch``
    gives the bytes of the line of an index the cache does not know). With the
    lines ``located`` (and their keys at hand), the table keeps the listed agent
    rows slim, and reads their whole rows there again when asked (Table.whole)."""
    use = use if use is not None else CacheUse()
    if isinstance(keys, list) and all(len(key) == KEY_SIZE for key in keys):
        keys = LineKeys(b"".join(keys))
    ordered: Sequence[bytes]  # the keys of the lines that are rows
    table = Table(slim=located is not None and isinstance(keys, LineKeys))
    read = _read_cache(out_dir, table)
    use.frames = read.frames
    parsed = _Parsed(table)
    if isinstance(keys, LineKeys):  # the keys at hand (the line log's): looked up at once
        found, known = read.find(keys)
        hits = len(set(found)) - (None in found)
        missing = [index for index, position in enumerate(found) if position is None]
        for index in missing:
            found[index] = parsed.add(keys[index], fetch(index))
        ordered, positions = keys, cast(list[int], found)
        if any(found[index] is None for index in missing):  # lines that are no rows
            ordered = [key for key, position in zip(keys, found, strict=True)
                       if position is not None]
            positions = [position for position in found if position is not None]
        lines_read, missed = len(keys), len(missing)
    else:
        known = len(read.index)
        hit: set[bytes] = set()
        rows_keys: list[bytes] = []
        ordered, positions = rows_keys, []
        lookup, seen = read.index.get, hit.add
        lines_read = missed = 0
        for key in keys:
            lines_read += 1
            position = lookup(key)
            if position is not None:
                seen(key)
            else:
                missed += 1
                position = parsed.add(key, fetch(lines_read - 1))
                if position is None:
                    continue
            rows_keys.append(key)
            positions.append(position)
        hits = len(hit)
    parsed_frames = parsed.done()
    if table.slimmed and located is not None and isinstance(keys, LineKeys):
        path, offsets, lengths = located
        slimmed = table.slimmed
        table.read_whole = _whole_rows(path, {
            position: (offsets[index], lengths[index], keys[index])
            for index, position in enumerate(found) if position in slimmed})
    table.positions = _latest(table, positions, sweep_id)
    use.lines += lines_read
    use.missed += missed
    use.parsed += sum(frame[0] for frame in parsed_frames)
    use.hits = use.lines - use.missed
    use.stale = known - hits + read.unkeyed
    many_missed = missed * REWRITE_SHARE > use.lines
    if (not read.whole or use.stale * REWRITE_SHARE > use.lines
            or (read.other and many_missed)):  # another harness's frames: dropped
        # (A slim row whose line changed meanwhile leaves the cache as it was.)
        use.rewritten = rewrite(out_dir, (
            table.frame(positions[start:start + REWRITE_BATCH],
                        ordered[start:start + REWRITE_BATCH])
            for start in range(0, max(len(positions), 1), REWRITE_BATCH)))
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
