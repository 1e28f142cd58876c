"""The table of rows (pytest_wfbench/table/): columns that give back each row's
projection, frames that survive marshal and refuse what is not one, and the
rows it keeps whole."""

from __future__ import annotations

import json
import marshal
import math
import os
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from benchmarks.outdirs import agent_row
from pytest_wfbench import cachefile, rowcache
from pytest_wfbench.aggregate import token_totals
from pytest_wfbench.outdir import build_report
from pytest_wfbench.projection import listed, project
from pytest_wfbench.rowcache import CACHE, CacheUse, load_entries
from pytest_wfbench.table import FrameError, Table, check, encode, kept
from tests.rows import row
from tests.test_projection import REPORTS, variety, write_out_dir

pytestmark = pytest.mark.rows_by_hand


def odd_rows() -> list[dict[str, Any]]:
    """Rows whose fields do not fit a column, or sit at its edges."""
    return [
        row("t", "a", 1, identity="not a dict", stage_ms=[1, 2], artifacts=["x"]),
        row("t", "a", 2, audit={"role": "mutant"}, artifacts=["m.patch"],
            identity={"oracle": "o", "other": "x"}, stage_ms={"clone": 1.0}),
        row("t", "a", 3, num_turns="many"), dict(row("t", "a", 4), resolved=1),
        row("t", "a", 5, cost_usd=0, input_tokens=0, diff_files=None),
        row("t", "a", 6, cost_usd=float(2**53), stage_ms={"clone": 3, "verify": 0.25}),
        row("t", "a", 7, stage_ms={"clone": "slow"}), dict(row("t", "a", 8), run=None),
        row("t", "a", 9, review_scored=False), row("t", "a", 10, duration_s=math.inf),
        row("t", "a", 11, stage_ms={}), row("t", "a", 12, identity={"arm": "x"}),
        row("t", "a", 13, identity={"task": None, "oracle": "o"}), {"cell_id": "bare"},
    ]


def test_a_tables_rows_are_the_rows_projections() -> None:
    rng = random.Random(2)
    rows = [agent_row(rng, f"t{i % 3}", "workflow", i) for i in range(80)] + odd_rows()
    table = Table.of(rows)
    assert list(table.positions) == list(range(len(rows)))
    for index, original in enumerate(rows):
        projection = project(original)
        assert table.row(index) == projection
        assert list(table.row(index)) == list(projection)
        assert (index in table.kept) == kept(original)
    assert sum(map(listed, rows)) < len(table.kept) < len(rows)
    plain = next(i for i, r in enumerate(rows) if not kept(r))
    assert table.row(plain) is not table.row(plain)  # made again, not held
    # A cost of 0 (an int) comes back as 0.0: cost is held as a float64, equal to it.
    zero = next(i for i, r in enumerate(rows) if r.get("cost_usd") == 0)
    assert table.row(zero)["cost_usd"] == 0 and type(rows[zero]["cost_usd"]) is int


def test_flags_and_numbers_keep_null_apart_from_false_and_zero() -> None:
    rows = [dict(row("t", "a", 1, cost_usd=None, review_scored=None), resolved=None),
            row("t", "a", 2, resolved=False, cost_usd=0.0, num_turns=0),
            row("t", "a", 3, resolved=True, cost_usd=1.5, num_turns=12)]
    table = Table.of(rows)
    assert [table.value("resolved", i) for i in range(3)] == [None, False, True]
    assert [table.value("cost_usd", i) for i in range(3)] == [None, 0.0, 1.5]
    assert [type(table.value("num_turns", i)) for i in range(3)] == [type(None), int, int]
    assert table.value("review_scored", 0) is None
    assert table.tokens([0, 1, 2]) == [float(sum(int(r.get(k) or 0) for k in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
        "output_tokens"))) for r in rows]


@pytest.mark.parametrize("odd", [None, 1.5, -3, 2**51, 2**52 - 1, -0.0])
def test_token_totals_are_each_fields_whole_count_whatever_the_values(odd: Any) -> None:
    """Whole counts are summed at once (aggregate.token_totals); a null, a
    fraction or a count too large to sum exactly in a float takes the row by
    row path (Table.tokens): the same totals."""
    rows = [row("t", "a", 1, input_tokens=10, output_tokens=7, cache_read_input_tokens=2**40),
            row("t", "a", 2, input_tokens=odd, output_tokens=2**51 - 1,
                cache_creation_input_tokens=3)]
    rows.append(row("t", "a", 3, input_tokens=-0.0, output_tokens=-0.0,
                    cache_creation_input_tokens=-0.0, cache_read_input_tokens=-0.0))
    table = Table.of(rows)
    for totals in (table.tokens([0, 1, 2]), token_totals(table).tolist()):
        assert math.copysign(1.0, totals[2]) == 1.0  # 0.0, as int(-0.0) makes it
        assert totals == [float(sum(int(r.get(k) or 0) for k in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "output_tokens"))) for r in rows]


def test_a_frame_survives_marshal_and_gathering() -> None:
    rng = random.Random(4)
    rows = [agent_row(rng, "t", "baseline", i) for i in range(30)] + odd_rows()
    keys = [bytes([i]) * 32 for i in range(len(rows))]
    frame = marshal.loads(marshal.dumps(encode(rows, keys)))
    table = Table()
    assert table.append(frame) == 0 and table.append(encode(rows[:5])) == len(rows)
    assert [table.row(i) for i in range(len(rows))] == [project(r) for r in rows]
    picked = [3, 0, len(rows) - 1, 7]
    again = Table()
    again.append(marshal.loads(marshal.dumps(table.frame(picked, [keys[i] for i in picked]))))
    assert [again.row(i) for i in range(4)] == [project(rows[i]) for i in picked]
    assert set(again.stages) <= set(table.stages)


def misshapen(frame: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    count, keys, objects, identity, flags, numbers, names, _, _ = frame
    return [
        frame[:8], (-1, *frame[1:]), (count, ("key",) * count, *frame[2:]),
        (count, keys, objects[:-1], *frame[3:]),
        (count, keys, objects, identity, (flags[0][:-1], *flags[1:]), *frame[5:]),
        (count, keys, objects, identity, flags, (*numbers[:-1], b""), *frame[6:]),
        (count, keys, objects, identity, flags, numbers, ("extra", *names), *frame[7:]),
        (*frame[:8], {count: {}}), (*frame[:8], {0: "not a row"}),
    ]


def test_misshapen_frames_are_refused() -> None:
    frame = encode([row("t", "a", 1), row("t", "a", 2, kind="session-error")], [b"k" * 32] * 2)
    assert check(frame) is frame
    for bad in misshapen(frame):
        with pytest.raises(FrameError):
            Table().append(bad)
    with pytest.raises(FrameError):
        check(["not", "a", "frame"])


def test_a_cache_frame_of_the_wrong_shape_is_damage_and_the_cache_is_rebuilt(
        tmp_path: Path) -> None:
    """A frame whose checksum holds but whose shape does not (a cache written by
    something else) ends the reading: its lines are parsed, the cache written
    again whole, and the report is the rows' report."""
    out = write_out_dir(tmp_path / "out", variety())
    expected = (REPORTS / "variety.report.md").read_text()
    build_report(out)
    good = (out / CACHE).read_bytes()
    payload = marshal.dumps(misshapen(encode([row("t", "a", 1)], [b"k" * 32]))[4])
    bad = struct.pack("<4s8sII", rowcache.MAGIC, rowcache.TAG, len(payload),
                      zlib.crc32(payload)) + payload
    (out / CACHE).write_bytes(bad + good)
    assert load_entries(out) == ({}, 0)
    use = CacheUse()
    assert build_report(out, use=use).files["report.md"] == expected
    assert (use.hits, use.rewritten) == (0, True)
    assert len(load_entries(out)[0]) == use.lines


def test_the_table_keeps_only_the_rows_the_report_lists(tmp_path: Path) -> None:
    rng = random.Random(6)
    rows = [agent_row(rng, f"task-{t}", arm, r) for t in range(5)
            for arm in ("baseline", "workflow") for r in range(1, 21)]
    for each in rows:
        each["sweep_id"] = "20261201T000000Z-test0000"
    out = write_out_dir(tmp_path / "out", rows)
    report = build_report(out)
    assert len(report.table.positions) == len(rows)
    assert len(report.table.kept) == sum(map(listed, rows)) < len(rows) // 5
    assert report.kept_rows == [r for r in rows if listed(r)]


def test_compaction_reads_the_cells_of_cached_lines_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_wfbench.redact import Redactor
    from pytest_wfbench.rowcache import CachedRows
    from pytest_wfbench.store import SUPERSEDED, ResultsStore, read_rows

    out = tmp_path / "out"
    out.mkdir()
    store = ResultsStore(out, Redactor.from_environment(()))
    store._cached = CachedRows(out, batch=1)
    rows = [row("t", "a", 1), row("t", "a", 2), row("t", "b", 1)]
    again = dict(rows[0], resolved=True)
    for each in [*rows, again]:
        store.append(each)
    with store.results.open("ab") as results:  # not in the cache, and no cell id
        results.write(b'{"task": "t", "arm": "x"}\n')
    parsed: list[bytes] = []
    real = rowcache._parsed

    def counted(line: bytes) -> dict[str, Any] | None:
        parsed.append(line)
        return real(line)

    monkeypatch.setattr(rowcache, "_parsed", counted)
    store.compact()
    assert parsed == [b'{"task": "t", "arm": "x"}']  # the cached lines were not parsed
    assert [(r["cell_id"], r["resolved"]) for r in read_rows(store.results)] == \
        [(rows[1]["cell_id"], rows[1]["resolved"]), (rows[2]["cell_id"], rows[2]["resolved"]),
         (again["cell_id"], True)]
    superseded = read_rows(out / SUPERSEDED)
    assert [r.get("cell_id") for r in superseded] == [rows[0]["cell_id"], None]


# ------------------------------------------------- rows at the edges, planted frames


def results_dir(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    with (out / "results.jsonl").open("w") as results:
        for each in rows:
            results.write(json.dumps({"sweep_id": "S1", **each}, sort_keys=True) + "\n")
    (out / "sweep.json").write_text(json.dumps({"sweep_id": "S1", "settings": {},
                                                "sessions": []}))
    return out


def plant(out: Path, frame: tuple[Any, ...], tag: bytes = rowcache.TAG) -> None:
    payload = marshal.dumps(frame)
    (out / CACHE).write_bytes(struct.pack("<4s8sII", rowcache.MAGIC, tag, len(payload),
                                          zlib.crc32(payload)) + payload)


def test_a_planted_frame_without_keys_changes_no_row_and_breaks_nothing(tmp_path: Path) -> None:
    rows = [row("t", "a", r, stage_ms={"clone": 100.0 * r}) for r in range(1, 4)]
    out = results_dir(tmp_path, rows)
    clean = build_report(out).files["report.md"]
    count, _, objects, identity, flags, numbers, _, stages, kept_rows = encode(
        [row("x", "x", 1, stage_ms={"clone": 1.0})])
    twice = (count, (), objects, identity, flags, numbers, ("clone", "clone"),
             (stages[0], stages[0]), kept_rows)  # a stage named twice
    with pytest.raises(FrameError):
        check(twice)
    for planted in (twice, encode([row("x", "x", 1, input_tokens=math.inf)])):
        plant(out, planted)
        use = CacheUse()
        assert build_report(out, use=use).files["report.md"] == clean
        assert use.hits == 0


def test_rows_the_report_is_not_about_are_not_read(tmp_path: Path) -> None:
    other = {**row("t", "a", 1, input_tokens=1e400), "sweep_id": "other"}  # "Infinity"
    out = results_dir(tmp_path, [other, *(row("t", "a", r) for r in range(1, 4))])
    report = build_report(out)
    assert report.summary.rows == 3 and len(report.table.positions) == 3


def test_a_line_twice_is_found_twice_and_the_cache_stays_as_it_is(tmp_path: Path) -> None:
    rows = [row("t", "a", r) for r in range(1, 6)]
    out = results_dir(tmp_path, [*rows, rows[0]])  # an append retried whole
    build_report(out)
    size = (out / CACHE).stat().st_size
    use = CacheUse()
    build_report(out, use=use)
    assert (use.missed, use.stale, use.rewritten) == (0, 0, False)
    assert (out / CACHE).stat().st_size == size


def test_flags_are_read_by_their_truth_as_the_rows_were() -> None:
    table = Table.of([row("t", "a", 1), dict(row("t", "a", 2), counted=1, resolved=0, reused=1)])
    assert [table.value("counted", i) for i in (0, 1)] == [True, True]
    assert (table.value("resolved", 1), table.value("reused", 1)) == (False, True)
    assert 1 in table.kept  # not a boolean: kept as it is, too


def test_fields_of_odd_types_and_sizes_neither_crash_nor_lose_digits(tmp_path: Path) -> None:
    odd = [row("t", "a", 1, arm_kind={"kind": "gold"}, model=["m"]),
           row("t", "a", 2, identity={"task": ["x"], "oracle": "o"}),
           row("t", "a", 3, input_tokens=2**53 + 1), row("t", "a", 4, output_tokens=10**400)]
    table = Table.of(odd)
    assert [table.row(i) for i in range(4)] == [project(r) for r in odd]
    assert len(table.kept) == 4
    from pytest_wfbench.redact import Redactor
    from pytest_wfbench.rowcache import CachedRows
    from pytest_wfbench.store import ResultsStore, read_rows
    store = ResultsStore(tmp_path, Redactor.from_environment(()))
    store._cached = CachedRows(tmp_path, batch=2)
    store.append(row("t", "a", 1, input_tokens=10**400))
    for run in range(2, 7):
        store.append(row("t", "a", run))  # a batch that cannot be cached costs no write
    assert len(read_rows(store.results)) == 6


def test_a_null_lane_is_not_the_agent_lane(tmp_path: Path) -> None:
    out = results_dir(tmp_path, [row("t", "a", 1), row("t", "a", 2, lane=None),
                                 {k: v for k, v in row("t", "a", 3).items() if k != "lane"}])
    assert build_report(out).summary.rows == 2  # lane "agent", and no lane at all


def test_another_harnesss_frames_are_dropped_when_the_cache_is_written(tmp_path: Path) -> None:
    out = results_dir(tmp_path, [row("t", "a", r) for r in range(1, 20)])
    plant(out, encode([row("x", "x", 1)], [b"k" * 32]), tag=b"elsewher")
    use = CacheUse()
    build_report(out, use=use)
    assert use.rewritten and use.hits == 0
    again = CacheUse()
    build_report(out, use=again)
    assert (again.hits, again.frames, again.rewritten) == (again.lines, 1, False)
    assert b"elsewher" not in (out / CACHE).read_bytes()


def test_the_cache_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    out = results_dir(tmp_path, [row("t", "a", 1)])
    target = tmp_path / "elsewhere"
    target.write_text("keep me")
    (out / f"{CACHE}.{os.getpid()}.new").symlink_to(target)
    rowcache.rewrite(out, [encode([])])
    assert target.read_text() == "keep me" and load_entries(out) == ({}, 1)


def test_the_spend_line_sums_each_arms_fresh_cells() -> None:
    from pytest_wfbench.aggregate.spend import spend_lines

    rows = [row("t", "a", 1, input_tokens=1000, output_tokens=234, cost_usd=0.1),
            row("t", "a", 2, input_tokens=None, output_tokens=66, cost_usd=0.2),
            row("t", "a", 3, input_tokens=10**6, cost_usd=5.0, reused=True),  # not spent now
            row("t", "a", 4, status="skipped", input_tokens=10**6),
            row("t", "b", 1, input_tokens=7, cost_usd=None),
            row("t", "b", 2, cache_read_input_tokens=3, cost_usd=None)]
    assert spend_lines(Table.of(rows)) == [
        "wfbench spend: a 1,300 tokens $0.3000; b 10 tokens; sweep 1,310 tokens $0.3000"]
    assert spend_lines(Table.of([row("t", "a", 1)])) == []  # nothing spent: no line
    huge = [row("t", "a", 1, input_tokens=1e308, output_tokens=1e308, cost_usd=1e308),
            row("t", "a", 2, input_tokens=1e308, cost_usd=1e308)]  # fsum refuses them
    assert spend_lines(Table.of(huge)) == [
        "wfbench spend: a inf tokens $inf; sweep inf tokens $inf"]


def test_the_lines_keys_are_found_as_a_dict_of_the_cache_finds_them() -> None:
    """The cache's keys are held in one blob and found at once (sorted, then
    searched): each line's position is what a dict of the keys, in the cache's
    order, gives (of a key cached twice the later), and the keys the cache
    knows are the dict's. A frame's keys are one blob of whole keys: a frame
    whose blob is no whole number of its rows' keys is no frame."""
    rng = random.Random(8)
    pool = [bytes(rng.choice([0, 1, 255]) for _ in range(32)) for _ in range(60)]
    pool += [bytes(32), b"\xff" * 32, bytes(31) + b"\x01"]
    read = cachefile._Read()
    expected: dict[bytes, int] = {}
    base = 0
    for _ in range(40):
        keys = tuple(rng.choice(pool) for _ in range(rng.randint(0, 9)))
        read.add(b"".join(keys), base)
        expected.update((key, base + at) for at, key in enumerate(keys))
        base += len(keys)
    lines = [rng.choice(pool) for _ in range(400)] + [b"\x02" * 32]
    found, known = read.find(rowcache.LineKeys(b"".join(lines)))
    assert found == [expected.get(key) for key in lines]
    assert known == len(expected) and read.index == expected
    assert cachefile._Read().find(rowcache.LineKeys(b"".join(lines)))[0] == [None] * len(lines)
    rows = [{"cell_id": "a", "run": 1}, {"cell_id": "b", "run": 2}]
    frame = encode(rows, [pool[0], pool[1]])
    assert check(frame)[1] == pool[0] + pool[1]
    wrong: list[Any] = [pool[0], pool[0] + pool[1] + b"x", pool[0][:16] * 3, (pool[0], pool[1])]
    for blob in wrong:
        with pytest.raises(FrameError):
            check((frame[0], blob, *frame[2:]))
    with pytest.raises(ValueError):
        encode(rows, [b"short", pool[1]])
    blob = rowcache.LineKeys(b"".join(lines))
    assert list(blob) == lines and blob[-1] == lines[-1] and blob[3:7] == lines[3:7]
    with pytest.raises(IndexError):
        blob[len(lines)]
