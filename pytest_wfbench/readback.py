"""A sweep's rows read back for its report: the lines' keys from the results
file's line log (:mod:`pytest_wfbench.linelog`) when it describes the file as it
is, their columns from the row cache (:mod:`pytest_wfbench.rowcache`), and only
the lines the cache does not know read from the file. Else every line is read
and digested, and when the file stayed in one state while it was, its log is
written again, so that the next report takes its keys from it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from filelock import Timeout

from pytest_wfbench.linelog import (
    coarse,
    line_key,
    logged_lines,
    result_lines,
    results_lock,
    rewrite_log,
    state_of,
)
from pytest_wfbench.rowcache import CacheUse, keyed_table, table_of_keys
from pytest_wfbench.table import Table


class _Changed(Exception):
    """The results file is no longer what its line log said (it changed since)."""


def results_table(out_dir: Path, results: Path, sweep_id: str | None,
                  use: CacheUse | None = None) -> Table:
    """:func:`pytest_wfbench.rowcache.latest_table` of the results file's lines."""
    logged = logged_lines(out_dir, results)
    if logged is not None:
        with contextlib.suppress(_Changed, OSError), results.open("rb") as stream:
            offsets = logged.offsets()

            def fetch(index: int) -> bytes:
                stream.seek(offsets[index])
                line = stream.read(logged.lengths[index])
                if line_key(line) != logged.keys[index]:
                    raise _Changed(index)
                return line

            table = table_of_keys(out_dir, logged.keys, fetch, sweep_id, use)
            if use is not None:
                use.logged = True
            return table
    return _read_whole(out_dir, results, sweep_id, use)


def _read_whole(out_dir: Path, results: Path, sweep_id: str | None,
                use: CacheUse | None) -> Table:
    try:
        before = state_of(os.stat(results))
    except OSError:
        before = None
    seen: list[tuple[bytes, int]] = []
    table = keyed_table(out_dir, result_lines(results), sweep_id, use, seen)
    if (before is not None and not coarse(before)
            and sum(length for _, length in seen) + len(seen) == before[0]):  # only lines
        with contextlib.suppress(OSError, Timeout), results_lock(results).acquire(timeout=0):
            if state_of(os.stat(results)) == before:  # no row was written meanwhile
                rewrite_log(out_dir, (key for key, _ in seen),
                            (length for _, length in seen), before)
    return table
