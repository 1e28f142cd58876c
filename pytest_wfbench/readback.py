"""A sweep's rows read back for its report: the lines' keys from the results
file's line log (:mod:`pytest_wfbench.linelog`) when it describes the file as it
is, their columns from the row cache (:mod:`pytest_wfbench.rowcache`), and only
the lines the cache does not know read from the file. Else every line is read
and digested (and the log is written again by the sweep's next compaction)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from pytest_wfbench.linelog import forget_logged_lines, logged_lines
from pytest_wfbench.rowcache import CacheUse, latest_table, line_key, table_of_keys
from pytest_wfbench.store import result_lines
from pytest_wfbench.table import Table


class _Changed(Exception):
    """The results file is no longer what its line log said (it changed since)."""


def results_table(out_dir: Path, results: Path, sweep_id: str | None,
                  use: CacheUse | None = None) -> Table:
    """:func:`pytest_wfbench.rowcache.latest_table` of the results file's lines."""
    logged = logged_lines(out_dir, results)
    if logged is not None:
        offsets, keys, lengths = logged.offsets, logged.key_blob, logged.lengths
        del logged
        forget_logged_lines()  # the report reads the log last: the rest of it (its
        # entries, each line's cell) goes before the rows come
        with contextlib.suppress(_Changed, OSError), results.open("rb") as stream:

            def fetch(index: int) -> bytes:
                stream.seek(offsets[index])
                line = stream.read(lengths[index])
                if line_key(line) != keys[index]:
                    raise _Changed(index)
                return line

            table = table_of_keys(out_dir, keys, fetch, sweep_id, use,
                                  located=(results, offsets, lengths))
            if use is not None:
                use.logged = True
            return table
    return latest_table(out_dir, result_lines(results), sweep_id, use)


