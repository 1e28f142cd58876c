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

Its file, frames and keys: :mod:`pytest_wfbench.cachefile`.

A report takes the lines' keys from the results file's line log when it
describes the file as it is (:mod:`pytest_wfbench.readback`), and reads only
the lines the cache does not know; else it reads every line.
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pytest_wfbench.cachefile import (
    BATCH,
    CACHE,
    KEY_SIZE,
    MAGIC,
    READ_BATCH,
    TAG,
    CachedRows,
    LineKeys,
    _read_cache,
    append_frames,
    line_key,
    load_entries,
    rewrite,
)
from pytest_wfbench.projection import project
from pytest_wfbench.table import Frame, Table, gather
from pytest_wfbench.table.frame import Record, encode_records, record_of
from pytest_wfbench.table.table import POSITION_TYPE

__all__ = ["BATCH", "CACHE", "KEY_SIZE", "MAGIC", "READ_BATCH", "REWRITE_BATCH",
           "REWRITE_SHARE", "TAG", "CacheUse", "CachedRows", "LineKeys", "Located",
           "append_frames", "latest_rows", "latest_table", "line_ids", "line_key",
           "load_entries", "rewrite", "table_of_keys"]

Row = dict[str, Any]

REWRITE_SHARE = 100
"""A report adds to the cache, or writes it again, when more than one line in
this many was not in it, or more than one entry in this many no line has."""
REWRITE_BATCH = 4096
"""Rows a frame written by a report holds."""


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


def _latest(table: Table, positions: list[int], sweep_id: str | None) -> array[int]:
    """Of these rows, the last of each cell (of the sweep; of every sweep when
    None), in the order cells first appeared."""
    if sweep_id is not None and positions:
        sweeps = gather(table.objects["sweep_id"], positions)
        if not all(sweep == sweep_id for sweep in sweeps):
            positions = [position for position, sweep in zip(positions, sweeps, strict=True)
                         if sweep == sweep_id]
    cells = gather(table.objects["cell_id"], positions)
    return array(POSITION_TYPE, dict(zip(map(str, cells), positions, strict=True)).values())


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
    gives the bytes of the line of an index the cache does not know). Keys at
    hand (LineKeys: the line log's) are found at once, others one by one; with
    the lines ``located`` too, the table keeps the listed agent rows slim, and
    reads their whole rows there again when asked (Table.whole)."""
    use = use if use is not None else CacheUse()
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
