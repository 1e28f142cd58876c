"""The results file's line log (pytest_wfbench/linelog.py): a report takes the
lines' keys from it only while it describes the file as it is. Whatever wrote
the file besides the harness's row writers, the report is the file's."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import time
from pathlib import Path

import pytest

from pytest_wfbench import linelog, readback, rowcache
from pytest_wfbench import store as store_module
from pytest_wfbench.linelog import LOG, logged_lines, state_of
from pytest_wfbench.outdir import build_report, latest_per_cell
from pytest_wfbench.projection import project
from pytest_wfbench.redact import Redactor
from pytest_wfbench.rowcache import CACHE, CachedRows, CacheUse
from pytest_wfbench.store import (
    ResultsStore,
    cells_with_rows,
    cells_without_rows,
    iter_rows,
    recorded_cell_ids,
)
from tests.rows import row

pytestmark = pytest.mark.rows_by_hand

SWEEP = "20261201T000000Z-test0000"


def store_of(out: Path, batch: int = 4) -> ResultsStore:
    store = ResultsStore(out, Redactor.from_environment(()))
    store._cached = CachedRows(out, batch=batch)
    return store


def written(out: Path, rows: int = 13) -> Path:
    """An out dir whose rows two workers wrote, turn about (one row, or two at
    once), as a sweep leaves it."""
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"sweep_id": SWEEP,
                                                "settings": {"baseline_arm": "baseline"}}))
    workers = [store_of(out), store_of(out, batch=3)]
    made = [row(f"t{n % 3}", ("baseline", "workflow")[n % 2], n // 6 + 1, sweep_id=SWEEP,
                resolved=n % 4 != 1, kind=None if n % 4 != 1 else "oracle-failed",
                input_tokens=1000 + n, duration_s=1.0 + n) for n in range(rows)]
    done = turn = 0
    while done < rows:
        take = 1 + turn % 2
        workers[turn % 2].append_many(made[done:done + take])
        done, turn = done + take, turn + 1
    return out


def as_the_file_says(out: Path) -> list[dict[str, object]]:
    return [project(r) for r in latest_per_cell(iter_rows(out / "results.jsonl", SWEEP))]


def unlogged_report(out: Path) -> str:
    copy = out.parent / f"{out.name}-unlogged"
    shutil.copytree(out, copy)
    (copy / LOG).unlink(missing_ok=True)
    (copy / CACHE).unlink(missing_ok=True)
    use = CacheUse()
    text = build_report(copy, use=use).files["report.md"]
    assert not use.logged
    return text.replace(str(copy), str(out))


def test_the_row_writers_log_every_line_and_a_report_takes_their_keys(tmp_path: Path) -> None:
    out = written(tmp_path / "out")
    results = (out / "results.jsonl").read_bytes()
    lines = results.split(b"\n")[:-1]
    logged = logged_lines(out, out / "results.jsonl")
    assert logged is not None
    assert list(logged.key_blob) == [hashlib.sha256(line).digest() for line in lines]
    assert list(logged.lengths) == [len(line) for line in lines]
    assert list(logged.offsets[:-1]) == [results.index(line) for line in lines]
    use = CacheUse()
    report = build_report(out, use=use)
    assert use.logged and use.lines == len(lines) == 13
    assert not linelog._last  # read last by the report: its memory let go
    assert 0 < use.missed < use.lines  # the rows still waiting for their batch: read by offset
    assert use.parsed == use.missed and use.hits == use.lines - use.missed
    assert report.rows() == as_the_file_says(out)
    assert report.files["report.md"] == unlogged_report(out)


def test_the_report_lets_the_log_go_before_it_reads_the_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a report keeps of the log is each line's key, start and length: its
    entries and each line's cell (some 16 MB at 100,000 lines) are let go before
    the rows are read, not after (the read is the report's peak of memory)."""
    out = written(tmp_path / "out")
    assert cells_without_rows(out, SWEEP, []) == []  # the sweep's end reads the log first
    assert linelog._last and "cells" in vars(linelog._last[0])
    held = []
    table_of_keys = rowcache.table_of_keys  # what readback calls

    def reading(*args: object, **kwargs: object) -> object:
        held.append(list(linelog._last))
        return table_of_keys(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(readback, "table_of_keys", reading)
    use = CacheUse()
    report = build_report(out, use=use)
    assert use.logged and held == [[]]
    assert report.rows() == as_the_file_says(out)


def wait_for_the_clock(out: Path, change: bytes) -> None:
    """Write ``change`` over results.jsonl, in place, until the file's state is
    not the one its log records (the file system's clock ticks every few ms:
    within the tick of the last write, the same size, the state is the same)."""
    results = out / "results.jsonl"
    logged = (out / LOG).read_bytes()[-linelog.ENTRY.size:]
    recorded = linelog.ENTRY.unpack(logged)[3:]
    while True:
        with results.open("r+b") as stream:
            stream.write(change)
        if state_of(results.stat()) != recorded:
            return
        time.sleep(0.001)


def edit(out: Path, how: str) -> None:
    results = out / "results.jsonl"
    data = results.read_bytes()
    if how == "in place, the same size":
        at = data.index(b'"resolved": false')
        wait_for_the_clock(out, data[:at] + b'"resolved": true ' + data[at + 17:])
    elif how == "appended to, not by a row writer":
        with results.open("ab") as stream:
            stream.write(json.dumps(row("t9", "baseline", sweep_id=SWEEP, resolved=True),
                                    sort_keys=True).encode() + b"\n")
    elif how == "replaced":
        temporary = out / "new"
        temporary.write_bytes(data.replace(b'"input_tokens": 1003', b'"input_tokens": 7003'))
        os.replace(temporary, results)
    elif how == "cut short":
        results.write_bytes(data[:data.rindex(b"\n", 0, len(data) - 1) + 1])
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["in place, the same size", "appended to, not by a row writer",
                                 "replaced", "cut short"])
def test_a_file_written_besides_the_row_writers_is_read_whole(tmp_path: Path, how: str) -> None:
    out = written(tmp_path / "out")
    build_report(out)
    before = as_the_file_says(out)
    edit(out, how)
    assert as_the_file_says(out) != before
    assert logged_lines(out, out / "results.jsonl") is None
    use = CacheUse()
    report = build_report(out, use=use)
    assert not use.logged and report.rows() == as_the_file_says(out)
    assert report.files["report.md"] == unlogged_report(out)


@pytest.mark.parametrize("how", ["in place, the same size", "appended to, not by a row writer"])
def test_a_row_written_after_an_unlogged_write_leaves_the_log_broken_until_a_new_file(
        tmp_path: Path, how: str) -> None:
    out = written(tmp_path / "out")
    edit(out, how)
    store = store_of(out)
    store.append(row("t8", "workflow", sweep_id=SWEEP, resolved=True))
    assert logged_lines(out, out / "results.jsonl") is None  # the last entry is in order, yet
    use = CacheUse()
    assert build_report(out, use=use).rows() == as_the_file_says(out)
    assert not use.logged and "t8-workflow-r1" in {r["cell_id"] for r in build_report(out).rows()}
    (out / "results.jsonl").unlink()  # a new results file begins a new log
    store.append(row("t7", "workflow", sweep_id=SWEEP))
    use = CacheUse()
    assert [r["cell_id"] for r in build_report(out, use=use).rows()] == ["t7-workflow-r1"]
    assert use.logged


@pytest.mark.parametrize("damage", ["torn", "garbage", "a key", "a length", "a flag"])
def test_a_damaged_log_is_never_believed(tmp_path: Path, damage: str) -> None:
    out = written(tmp_path / "out")
    build_report(out)  # the cache knows every line: a wrong key would find another row
    log = out / LOG
    blob = bytearray(log.read_bytes())
    size = linelog.ENTRY.size
    if damage == "torn":
        del blob[-size // 2:]
    elif damage == "garbage":
        blob[:] = b"\xff" * len(blob)
    elif damage == "a key":  # not the digest of any line: read by offset, and checked
        blob[2 * size + 7] ^= 0x20
    elif damage == "a length":
        blob[3 * size + 32] ^= 0x01
    else:
        blob[4 * size + 36] = linelog.BROKEN
    log.write_bytes(bytes(blob))
    use = CacheUse()
    report = build_report(out, use=use)
    assert report.rows() == as_the_file_says(out)
    assert not use.logged and use.lines == 13


def test_a_file_that_changes_while_a_report_reads_it_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line the cache does not know is read by its offset, and its bytes must
    have its key: else the file changed after its log was checked."""
    out = written(tmp_path / "out")
    (out / CACHE).unlink()
    checked = linelog.logged_lines

    def then_changed(out_dir: Path, results: Path) -> linelog.LoggedLines | None:
        logged = checked(out_dir, results)
        assert logged is not None
        data = results.read_bytes()
        results.write_bytes(b"\n" + data.replace(b'"input_tokens": 1005', b'"input_tokens": 5'))
        return logged

    monkeypatch.setattr(readback, "logged_lines", then_changed)
    use = CacheUse()
    report = build_report(out, use=use)
    assert not use.logged and use.lines == 13
    assert report.rows() == as_the_file_says(out)
    assert any(r["input_tokens"] == 5 for r in report.rows())


def test_compacting_the_results_writes_their_log_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"sweep_id": SWEEP}))
    store = store_of(out, batch=1)
    rows = [row(f"t{n}", "baseline", sweep_id=SWEEP) for n in range(5)]
    for r in [*rows, dict(rows[1], resolved=True, duration_s=9.0)]:
        store.append(r)
    store.compact()
    use = CacheUse()
    report = build_report(out, use=use)
    assert use.logged and use.lines == 5 and report.rows() == as_the_file_says(out)
    assert report.rows()[-1]["duration_s"] == 9.0
    store.append(row("t6", "baseline", sweep_id=SWEEP))  # the log goes on from there
    assert build_report(out, use=CacheUse()).rows() == as_the_file_says(out)
    assert logged_lines(out, out / "results.jsonl") is not None


def test_the_log_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (out / LOG).symlink_to(target)
    store = store_of(out)
    store.append(row("t", "a", sweep_id=SWEEP))
    assert target.read_text() == "keep me"
    assert logged_lines(out, out / "results.jsonl") is None
    assert [r["cell_id"] for r in iter_rows(out / "results.jsonl")] == ["t-a-r1"]


def test_a_log_that_lost_entries_is_never_believed(tmp_path: Path) -> None:
    """Every entry of a batch records the file's state after it: a log cut at a
    batch's middle (a full disk) still ends in the file's state."""
    out = written(tmp_path / "out")
    log = out / LOG
    blob = log.read_bytes()
    for keep in (11, 7, 1):  # of 13
        log.write_bytes(blob[:keep * linelog.ENTRY.size] + blob[-linelog.ENTRY.size:])
        assert logged_lines(out, out / "results.jsonl") is None
        assert build_report(out).rows() == as_the_file_says(out)


def test_a_file_system_of_whole_second_times_is_always_read_whole(tmp_path: Path) -> None:
    out = written(tmp_path / "out")
    results = out / "results.jsonl"
    lines = results.read_bytes().split(b"\n")[:-1]
    whole = (int(time.time()) - 5) * 1_000_000_000
    for seconds in (whole, whole + 1):  # as such a file system keeps them; then not
        os.utime(results, ns=(seconds, seconds))
        ids = [(row["cell_id"], row["sweep_id"]) for row in map(json.loads, lines)]
        linelog.rewrite_log(out, map(rowcache.line_key, lines), map(len, lines), ids,
                            state_of(results.stat()))
        believed = logged_lines(out, results) is not None
        assert believed == (seconds % 1_000_000_000 != 0)


def test_a_log_that_cannot_be_written_costs_no_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = store_of(out, batch=1)

    def too_long(*args: object) -> bytes:
        raise struct.error("'I' format requires 0 <= number <= 4294967295")

    monkeypatch.setattr(linelog, "_entries", too_long)
    store.append(row("t", "a", sweep_id=SWEEP))
    assert [r["cell_id"] for r in iter_rows(out / "results.jsonl")] == ["t-a-r1"]
    assert len(rowcache.load_entries(out)[0]) == 1  # and the cache still has it
    assert logged_lines(out, out / "results.jsonl") is None


@pytest.mark.parametrize("how", ["appended to, not by a row writer", "cut short", "replaced"])
def test_compacting_results_whose_log_broke_writes_it_again(tmp_path: Path, how: str) -> None:
    """As every sweep's end does: the next report, and the next row, take it up."""
    out = written(tmp_path / "out")
    edit(out, how)
    first = CacheUse()
    assert build_report(out, use=first).rows() == as_the_file_says(out) and not first.logged
    store_of(out).compact()  # nothing superseded: the file stays, its log is written
    use = CacheUse()
    assert build_report(out, use=use).rows() == as_the_file_says(out) and use.logged
    store_of(out).append(row("t8", "workflow", sweep_id=SWEEP))
    assert logged_lines(out, out / "results.jsonl") is not None


def test_compacting_results_of_a_row_a_cell_reads_only_their_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = written(tmp_path / "out")
    before = (out / "results.jsonl").read_bytes()

    def unread(*args: object) -> object:
        raise AssertionError("the results file was read")

    with monkeypatch.context() as patched:
        patched.setattr(store_module, "result_lines", unread)
        assert store_of(out).compact() == len(before)
    store_of(out).append({"sweep_id": SWEEP, "note": "a row without a cell id"})
    store_of(out).compact()
    assert [r.get("note") for r in iter_rows(out / "superseded.jsonl")] == [
        "a row without a cell id"]
    store_of(out).append(dict(row("t0", "baseline", 1, sweep_id=SWEEP), resolved=True))
    store_of(out).append(row("t0", "baseline", 2, sweep_id="another sweep"))  # the same cell id
    cells = [r["cell_id"] for r in iter_rows(out / "results.jsonl")]
    assert len(cells) == 15 and len(set(cells)) == 13
    with monkeypatch.context() as patched:
        patched.setattr(store_module, "result_lines", unread)
        with pytest.raises(AssertionError, match="was read"):
            store_of(out).compact()
    store_of(out).compact()  # cells twice: read, and their earlier rows superseded
    kept = {r["cell_id"]: r for r in iter_rows(out / "results.jsonl")}
    assert len(kept) == 13 and len(list(iter_rows(out / "superseded.jsonl"))) == 3
    assert kept["t0-baseline-r1"]["resolved"] and kept["t0-baseline-r2"]["sweep_id"] != SWEEP
    use = CacheUse()
    assert build_report(out, use=use).rows() == as_the_file_says(out) and use.logged


def test_the_cells_recorded_since_a_sweep_session_began_come_from_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = written(tmp_path / "out")
    offset = (out / "results.jsonl").stat().st_size
    store = store_of(out)
    store.append(row("late", "baseline", sweep_id=SWEEP))
    store.append(row("elsewhere", "baseline", sweep_id="another sweep"))
    by_scan = recorded_cell_ids(out / "results.jsonl", SWEEP, offset)
    with monkeypatch.context() as patched:
        patched.setattr(store_module, "recorded_cell_ids", lambda *a: pytest.fail("scanned"))
        from_log = cells_with_rows(out, SWEEP, offset)
        every = cells_with_rows(out, SWEEP)
    assert by_scan == {"late-baseline-r1"}
    assert "late-baseline-r1" in from_log and "elsewhere-baseline-r1" not in from_log
    assert "t0-baseline-r1" not in from_log and "t0-baseline-r1" in every
    assert all(cell in every for cell in recorded_cell_ids(out / "results.jsonl", SWEEP))
    # Asked of many cells at once (a sweep's end: every selected cell), the same.
    asked = ["late-baseline-r1", "elsewhere-baseline-r1", "t0-baseline-r1", "late-baseline-r1",
             "caf\u00e9-\udcff-r1", ""]
    with monkeypatch.context() as patched:
        patched.setattr(store_module, "recorded_cell_ids", lambda *a: pytest.fail("scanned"))
        assert cells_without_rows(out, SWEEP, asked, offset) == [
            cell for cell in asked if cell not in from_log] == asked[1:3] + asked[4:]
        assert cells_without_rows(out, SWEEP, asked) == [
            cell for cell in asked if cell not in every]
    edit(out, "appended to, not by a row writer")  # no log to believe: the lines are scanned
    assert cells_with_rows(out, SWEEP, offset) == by_scan | {"t9-baseline-r1"}
    assert cells_without_rows(out, SWEEP, asked, offset) == asked[1:3] + asked[4:]


def test_the_cells_recorded_since_a_resumed_session_began_are_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of one sweep, as every out dir holds: a session that resumed it
    has only the rows written since it began."""
    out = written(tmp_path / "out")
    offset = store_of(out).compact()  # as a resumed session's start
    store_of(out).append_many([row("late", "baseline", sweep_id=SWEEP),
                               row("later", "workflow", sweep_id=SWEEP)])
    with monkeypatch.context() as patched:
        patched.setattr(store_module, "recorded_cell_ids", lambda *a: pytest.fail("scanned"))
        since = cells_with_rows(out, SWEEP, offset)
    earlier = {r["cell_id"] for r in iter_rows(out / "results.jsonl")} - {
        "late-baseline-r1", "later-workflow-r1"}
    assert "late-baseline-r1" in since and "later-workflow-r1" in since
    assert len(earlier) == 13 and not any(cell in since for cell in earlier)
    assert recorded_cell_ids(out / "results.jsonl", SWEEP, offset) == {
        "late-baseline-r1", "later-workflow-r1"}


@pytest.mark.parametrize("how", ["a blank line", "no newline at its end"])
def test_a_compaction_leaves_a_file_of_rows_and_their_log(tmp_path: Path, how: str) -> None:
    out = written(tmp_path / "out")
    results = out / "results.jsonl"
    before = as_the_file_says(out)
    if how == "a blank line":
        with results.open("ab") as stream:
            stream.write(b"\n")
    else:
        results.write_bytes(results.read_bytes()[:-1])
    size = store_of(out).compact()
    assert results.read_bytes().endswith(b"}\n") and b"\n\n" not in results.read_bytes()
    assert size == results.stat().st_size and as_the_file_says(out) == before
    assert logged_lines(out, results) is not None
    assert not (out / "superseded.jsonl").exists()
    store_of(out).append(row("t8", "workflow", sweep_id=SWEEP))
    use = CacheUse()
    assert build_report(out, use=use).rows() == as_the_file_says(out) and use.logged


def test_a_log_read_again_unchanged_is_not_taken_apart_again(tmp_path: Path) -> None:
    out = written(tmp_path / "out")
    results = out / "results.jsonl"
    first = logged_lines(out, results)
    assert first is not None and logged_lines(out, results) is first
    store_of(out).append(row("t8", "workflow", sweep_id=SWEEP))
    again = logged_lines(out, results)
    assert again is not None and again is not first and len(again.key_blob) == 14
    edit(out, "in place, the same size")  # the log's bytes as they were, the file not
    assert logged_lines(out, results) is None


def test_a_log_planted_as_a_link_is_never_read(tmp_path: Path) -> None:
    """Even a link to a log that would check (a copy of this very log)."""
    out = written(tmp_path / "out")
    elsewhere = tmp_path / "elsewhere.lines"
    shutil.copyfile(out / LOG, elsewhere)
    (out / LOG).unlink()
    (out / LOG).symlink_to(elsewhere)
    linelog._last.clear()  # not the log as last read, before the link
    assert logged_lines(out, out / "results.jsonl") is None
    use = CacheUse()
    assert build_report(out, use=use).rows() == as_the_file_says(out) and not use.logged
