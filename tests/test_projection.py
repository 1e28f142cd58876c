"""The report from the rows' table (pytest_wfbench/table/: columns, and the
projections of the rows it keeps) and the row cache beside results.jsonl
(pytest_wfbench/rowcache.py): the same report.md, byte for byte, as the rows
themselves gave it, whatever the cache holds."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.outdirs import agent_row
from pytest_wfbench import rowcache, table
from pytest_wfbench.outdir import build_report, latest_per_cell
from pytest_wfbench.projection import IDENTITY_PARTS, PROJECTED, SHARED_KEYS, listed, project
from pytest_wfbench.redact import Redactor
from pytest_wfbench.rowcache import CACHE, CachedRows, CacheUse, latest_rows, load_entries
from pytest_wfbench.store import ResultsStore, iter_rows, result_lines
from pytest_wfbench.table import encode
from tests.rows import row, runs

pytestmark = pytest.mark.rows_by_hand  # hand-built rows of a few fields


SWEEP = "20261201T000000Z-test0000"


def review_row(task: str, arm: str, run: int, **score: Any) -> dict[str, Any]:
    figures = {"tp": 1, "fp": 0, "fn": 1, "precision": 1.0, "recall": 0.5,
               "weighted_f1": 0.6, "grounding": 1.0, "blocker_recall": 0.5,
               "verdict_correct": True, "clean_control": False, **score}
    return row(task, arm, run, kind=None, resolved=False, review_scored=True, review=figures,
               stage_ms={"session": 10.0, "oracle": 2.0})


def variety() -> list[dict[str, Any]]:
    """Rows of every kind the report treats apart, and many ordinary ones."""
    rng = random.Random(3)
    rows: list[dict[str, Any]] = []
    for t in range(6):
        for arm in ("baseline", "workflow", "ce_workflow"):
            for r in range(1, 5):
                rows.append(agent_row(rng, f"task-{t}", arm, r))
    rows += runs("small", "baseline", "RFTSX-", stage_ms={"clone": 1.5, "verify": 3.0})
    rows += runs("small", "workflow", "RRFXS", cost_usd=0.25, num_turns=7)
    rows.append(row("small", "gold", 1, resolved=True, suspicious=["reads /proc"]))
    rows.append(row("small", "gold", 2, kind="harness-error",
                    error_detail="KeyError: 'x'\nsecond line"))
    rows.append(row("small", "noop", 1, kind="oracle-failed", kept_workspace="/tmp/w/x"))
    rows.append(row("small", "noop", 2, kind="oracle-failed", oracle_judged_by="exit-code"))
    rows.append(review_row("review-a", "review", 1))
    rows.append(review_row("review-a", "review", 2, tp=2, fn=0, recall=1.0))
    rows.append(row("review-a", "review_baseline", 1, review_scored=False, review=None))
    for each in rows:
        each["sweep_id"] = SWEEP
        each.setdefault("model", "claude-sonnet-4-5")
    return rows


def write_out_dir(out: Path, rows: list[dict[str, Any]], *, baseline: str = "baseline") -> Path:
    out.mkdir(parents=True)
    with (out / "results.jsonl").open("w", encoding="utf-8") as results:
        for r in rows:
            results.write(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n")
    record = {"sweep_id": SWEEP, "suite": "variety", "harness_version": "0.1.0",
              "settings": {"baseline_arm": baseline, "runs": 4}, "sessions": []}
    (out / "sweep.json").write_text(json.dumps(record))
    return out


REPORTS = Path(__file__).parent / "data" / "reports"
"""The report files of these rows, as the aggregation of row lists wrote them
(before the table). A deliberate change of the report is a change of them."""


def report_of_whole_rows(out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The report files as they are made when the table keeps every row whole."""
    with monkeypatch.context() as patched:
        patched.setattr(table.frame, "kept", lambda r: True)
        patched.setattr(table.frame, "project", lambda r: r)
        copy = out.parent / f"{out.name}-whole"
        shutil.copytree(out, copy)
        (copy / CACHE).unlink(missing_ok=True)
        report = build_report(copy)
        assert len(report.table.kept) == len(report.table.positions)
        files = report.files
    return {name: text.replace(str(copy), str(out)) for name, text in files.items()}


def test_the_report_is_the_same_from_the_table_cold_and_warm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = write_out_dir(tmp_path / "out", variety())
    expected = (REPORTS / "variety.report.md").read_text()
    assert "## Harness errors" in expected and "## Review quality" in expected
    assert "## Excluded runs" in expected and "Savings" in expected
    assert report_of_whole_rows(out, monkeypatch)["report.md"] == expected
    cold, warm = CacheUse(), CacheUse()
    assert build_report(out, use=cold).files["report.md"] == expected
    assert build_report(out, use=warm).files["report.md"] == expected
    assert (cold.parsed, cold.rewritten) == (cold.lines, True)
    assert (warm.hits, warm.parsed, warm.rewritten) == (warm.lines, 0, False)
    (out / CACHE).unlink()
    writer = CachedRows(out, batch=8)  # as the rows' writers leave it: some lines left out
    for line in (out / "results.jsonl").read_bytes().splitlines():
        writer.add([line])
    partial = CacheUse()
    assert build_report(out, use=partial).files["report.md"] == expected
    assert 0 < partial.missed < 8 and partial.hits == partial.lines - partial.missed


def audited_and_promoted() -> list[dict[str, Any]]:
    """Rows whose projections the audit (a surviving mutant's artifacts) and the
    promotion gate (the tasks' and oracles' digests) read."""
    rng = random.Random(5)
    rows: list[dict[str, Any]] = []
    for t in range(4):
        for arm in ("workflow", "candidate_workflow"):
            for r in range(1, 5):
                rows.append(agent_row(rng, f"task-{t}", arm, r))
        rows.append(row(f"task-{t}", "gold", resolved=True, arm_kind="gold",
                        oracle_passed=True, authored_tests_passed=True))
        rows.append(row(f"task-{t}", f"mutant-{t}", kind="oracle-failed", oracle_passed=True,
                        authored_tests_passed=True, artifacts=[f"artifacts/m{t}.patch"],
                        audit={"role": "mutant", "name": f"m{t}", "description": "flip",
                               "counts": {"mutants": 1}}))
    for each in rows:
        each["sweep_id"] = SWEEP
    return rows


def test_the_audit_and_the_promotion_evidence_are_the_same_from_the_table(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = audited_and_promoted()
    out = write_out_dir(tmp_path / "out", rows, baseline="workflow")
    report = build_report(out)
    projected = {r["cell_id"]: r for r in report.rows()}
    survivor = projected["task-0-mutant-0-r1"]
    assert not listed(survivor) and survivor["artifacts"] == ["artifacts/m0.patch"]
    ordinary = projected["task-0-workflow-r1"]
    if not listed(ordinary):
        assert "artifacts" not in ordinary and set(ordinary["identity"]) == {"task", "oracle"}
    files = report.files
    assert "### Surviving mutants" in files["report.md"] and "m0.patch" in files["report.md"]
    assert "promotion.json" in files and '"task_prompts"' in files["promotion.json"]
    assert files == {"report.md": (REPORTS / "audited.report.md").read_text(),
                     "promotion.json": (REPORTS / "audited.promotion.json").read_text()}
    assert report_of_whole_rows(out, monkeypatch) == files


def test_projected_rows_hold_only_the_reported_fields(tmp_path: Path) -> None:
    rows = variety()
    out = write_out_dir(tmp_path / "out", rows)
    report = build_report(out)
    assert len(report.rows()) == len(rows)
    projected = [r for r in report.rows() if not listed(r)]
    assert len(projected) > len(rows) // 2
    for r in projected:
        assert set(r) <= set(PROJECTED), set(r) - set(PROJECTED)
        assert None not in r.values()
        assert "phases" not in r and "model_usage" not in r and "error_detail" not in r
    whole = [r for r in report.rows() if listed(r)]
    assert {r["cell_id"] for r in whole} >= {"small-gold-r1", "small-gold-r2", "small-noop-r1",
                                             "small-baseline-r5", "small-baseline-r6"}
    assert all("error_detail" in r for r in whole)  # kept whole


def test_the_projection_of_a_row() -> None:
    rng = random.Random(1)
    rows = [agent_row(rng, "t", "baseline", run) for run in range(1, 60)]
    ordinary = [r for r in rows if not listed(r)]
    assert ordinary and len(ordinary) < len(rows)
    first, second = (project(dict(r)) for r in ordinary[:2])
    for key in PROJECTED:
        if key not in ("identity", "artifacts"):
            assert first.get(key) == ordinary[0].get(key)
    assert first["identity"] == {part: ordinary[0]["identity"][part] for part in ("task", "oracle")}
    assert "artifacts" not in first  # only the audit's rows keep theirs
    assert first["task"] is second["task"] and first["arm"] is second["arm"]  # shared
    assert next(iter(first["stage_ms"])) is next(iter(second["stage_ms"]))
    for r in rows:
        if listed(r):
            assert project(r) is r
    lane = row("scenario", "git", lane="tool-cost")
    assert listed(lane) and project(lane) is lane
    for kept in (row("t", "a", kind="session-error"), row("t", "a", status="skipped"),
                 row("t", "a", resolved=True, suspicious=["x"]),
                 row("t", "a", kind="harness-error"), row("t", "a", kept_workspace="/w")):
        assert project(kept) is kept


def test_latest_rows_are_the_last_row_of_each_cell_of_the_sweep(tmp_path: Path) -> None:
    rows = variety()[:30]
    again = dict(rows[3], resolved=not rows[3]["resolved"])  # the cell ran again
    other = dict(rows[4], sweep_id="another-sweep", cell_id="elsewhere")
    out = write_out_dir(tmp_path / "out", [*rows, again, other])
    results = out / "results.jsonl"
    with results.open("ab") as torn:
        torn.write(b'{"cell_id": "torn", "sweep_')
    expected = [project(r) for r in latest_per_cell(iter_rows(results, SWEEP))]
    for _ in range(2):  # cold, then from the cache
        assert latest_rows(out, result_lines(results), SWEEP) == expected


def test_a_line_that_changed_is_parsed_again_not_taken_from_the_cache(tmp_path: Path) -> None:
    rows = variety()
    out = write_out_dir(tmp_path / "out", rows)
    build_report(out)
    results = out / "results.jsonl"
    lines = results.read_bytes().split(b"\n")
    target = next(i for i, r in enumerate(rows) if not listed(r) and not r["resolved"])
    changed = dict(rows[target], resolved=True)
    lines[target] = json.dumps(changed, sort_keys=True).encode()
    results.write_bytes(b"\n".join(lines))
    use = CacheUse()
    report = build_report(out, use=use)
    assert (use.missed, use.stale, use.rewritten) == (1, 1, True)
    assert next(r for r in report.rows() if r["cell_id"] == changed["cell_id"])["resolved"]


def test_a_rewritten_cache_holds_its_entries_a_batch_to_a_frame(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = write_out_dir(tmp_path / "out", variety())
    expected = report_of_whole_rows(out, monkeypatch)["report.md"]
    monkeypatch.setattr(rowcache, "REWRITE_BATCH", 7)
    cold, warm = CacheUse(), CacheUse()
    assert build_report(out, use=cold).files["report.md"] == expected
    entries, frames = load_entries(out)
    assert cold.rewritten and len(entries) == cold.lines > 7
    assert frames == -(-cold.lines // 7)
    assert build_report(out, use=warm).files["report.md"] == expected
    assert (warm.hits, warm.frames, warm.rewritten) == (warm.lines, frames, False)
    rowcache.rewrite(out, [encode([])])
    assert load_entries(out) == ({}, 1)  # an empty cache is one empty frame


def test_a_cache_is_added_to_the_table_a_batch_of_rows_at_a_time_whatever_its_frames_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The peak of reading a cache is one batch of rows above the table: a
    report's frames (REWRITE_BATCH rows each) were counted as a writer's (BATCH),
    so that 100,000 rows were decoded and added at once."""
    from pytest_wfbench import cachefile
    from pytest_wfbench.table.table import Table

    out = write_out_dir(tmp_path / "out", variety())
    expected = report_of_whole_rows(out, monkeypatch)["report.md"]
    monkeypatch.setattr(rowcache, "REWRITE_BATCH", 5)
    build_report(out)  # the cache written again: frames of 5 rows
    monkeypatch.setattr(cachefile, "READ_BATCH", 12)  # writers' frames would count 256 each
    added: list[int] = []
    extend = Table.extend

    def counted(self: Table, frames: Any) -> list[int]:
        added.append(sum(frame[0] for frame in frames))
        return extend(self, frames)

    monkeypatch.setattr(Table, "extend", counted)
    use = CacheUse()
    assert build_report(out, use=use).files["report.md"] == expected
    batches = [rows for rows in added if rows]
    assert use.hits == use.lines == sum(batches) > 15
    assert batches[:-1] == [15] * (len(batches) - 1)  # 3 frames: the first 12 rows or more


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "other tag"])
def test_a_damaged_cache_is_read_as_far_as_it_checks_and_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    out = write_out_dir(tmp_path / "out", variety())
    expected = report_of_whole_rows(out, monkeypatch)["report.md"]
    build_report(out)
    cache = out / CACHE
    blob = bytearray(cache.read_bytes())
    if damage == "garbage":
        blob[:] = b"\x00not a cache" * 50
    elif damage == "truncated":
        del blob[len(blob) // 2:]
    elif damage == "flipped":
        blob[len(blob) // 2] ^= 0x40
    else:
        blob[4:12] = b"elsewher"
    cache.write_bytes(bytes(blob))
    assert load_entries(out) == ({}, 0)
    use = CacheUse()
    assert build_report(out, use=use).files["report.md"] == expected
    assert use.hits == 0 and use.rewritten
    assert len(load_entries(out)[0]) == use.lines


def test_writers_add_their_rows_a_batch_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = ResultsStore(out, Redactor.from_environment(()))
    store._cached = CachedRows(out, batch=4)
    rows = variety()[:10]
    for r in rows:
        store.append(r)
    entries, frames = load_entries(out)
    assert (len(entries), frames) == (8, 2)  # the last 2 wait for their batch
    (out / "sweep.json").write_text(json.dumps({"sweep_id": SWEEP}))
    use = CacheUse()
    report = build_report(out, use=use)
    assert (use.hits, use.missed, use.parsed) == (8, 2, 2)
    assert [r["cell_id"] for r in report.rows()] == [r["cell_id"] for r in rows]


def test_a_writers_rows_still_waiting_go_in_when_its_session_ends(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = ResultsStore(out, Redactor.from_environment(()))
    store._cached = CachedRows(out, batch=4)
    for r in variety()[:10]:
        store.append(r)
    store.flush_cache()  # the rows still waiting, in a frame of their own

    class Untouchable:
        def __enter__(self) -> None:
            raise AssertionError("took the results file's lock with nothing to add")

        def __exit__(self, *exc: object) -> None:
            return None

    store._lock = Untouchable()  # type: ignore[assignment]
    store.flush_cache()  # nothing waits any more: no lock, no empty frame
    entries, frames = load_entries(out)
    assert (len(entries), frames) == (10, 3)
    (out / "sweep.json").write_text(json.dumps({"sweep_id": SWEEP}))
    use = CacheUse()
    assert len(build_report(out, use=use).rows()) == 10
    assert (use.hits, use.missed, use.parsed, use.rewritten) == (10, 0, 0, False)


def test_compacting_the_results_leaves_stale_entries_that_a_report_drops(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = ResultsStore(out, Redactor.from_environment(()))
    store._cached = CachedRows(out, batch=1)
    rows = variety()[:6]
    again = dict(rows[0], resolved=True, duration_s=float(rows[0]["duration_s"]) + 1.0)
    for r in [*rows, again]:
        store.append(r)
    store.compact()
    (out / "sweep.json").write_text(json.dumps({"sweep_id": SWEEP}))
    use = CacheUse()
    report = build_report(out, use=use)
    assert (use.lines, use.hits, use.stale, use.rewritten) == (6, 6, 1, True)
    last = report.rows()[-1]
    assert (last["cell_id"], last["duration_s"]) == (again["cell_id"], again["duration_s"])
    assert len(load_entries(out)[0]) == 6


def test_the_projection_takes_each_projected_field_as_the_definition_says() -> None:
    """project() against its definition written out field by field."""

    def by_definition(r: dict[str, Any]) -> dict[str, Any]:
        if listed(r):
            return r
        out: dict[str, Any] = {}
        for key in PROJECTED:
            value = r.get(key)
            if value is None or (key == "artifacts" and not r.get("audit")):
                continue
            if key == "identity" and isinstance(value, dict):
                value = {p: d for p, d in value.items() if p in IDENTITY_PARTS}
            out[key] = value
        return out

    rng = random.Random(9)
    rows = [agent_row(rng, "t", "workflow", run) for run in range(1, 40)]
    rows += [row("t", "a", identity="not a dict", stage_ms=[1, 2], artifacts=["x"]),
             row("t", "a", audit={"role": "mutant"}, artifacts=["m.patch"],
                 identity={"oracle": "o", "other": "x"}, stage_ms={"clone": 1.0})]
    for r in rows:
        projected = project(dict(r))
        assert projected == by_definition(r)
        assert list(projected) == list(by_definition(r))
        for key in SHARED_KEYS:
            if isinstance(projected.get(key), str):
                assert projected[key] is sys.intern(projected[key])
        stage_ms = projected.get("stage_ms")
        if isinstance(stage_ms, dict) and not listed(r):
            assert all(name is sys.intern(name) for name in stage_ms)


def logged_copy(out: Path, name: str) -> Path:
    """A copy of the out dir, compacted as a sweep's end leaves it: with the
    results file's line log (the report's table keeps listed agent rows slim)."""
    copy = out.parent / name
    shutil.copytree(out, copy)
    ResultsStore(copy, Redactor([])).compact()
    assert (copy / ".results.lines").exists()
    return copy


def written(out: Path) -> tuple[dict[str, str], str, list[str]]:
    """report.md (and the files beside it), report.html and the terminal's lines
    of the out dir, with its path written as "OUT"."""
    from pytest_wfbench.finish import Finished, terminal_lines
    from pytest_wfbench.outdir import write_report

    store = ResultsStore(out, Redactor([]))
    report, html = write_report(store)
    assert html.path is not None and not html.failed, html.line
    lines = terminal_lines(Finished(report, html), store.redactor.clean, work_dir=out,
                           results=store.results, min_kill_rate=0.5)
    return ({name: text.replace(str(out), "OUT") for name, text in report.files.items()},
            html.path.read_text().replace(str(out), "OUT"),
            [line.replace(str(out), "OUT") for line, _ in lines])


@pytest.mark.parametrize("large", [False, True])
def test_a_report_of_slim_rows_is_the_report_of_whole_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """With the line log, the report's table keeps the listed agent rows slim
    (schema.SLIM: about a third of their fields) and reads the rows the page
    details again: report.md, report.html (a large page's detailed cells whole)
    and the terminal's lines are those of a table that keeps them whole."""
    from pytest_wfbench.render.html import overview

    if large:
        monkeypatch.setattr(overview, "DETAIL_CELLS", 10)
        monkeypatch.setattr(overview, "LISTED_CELLS", 6)
    rows = variety()
    rows.append(row("small", "gold", 3, kind="harness-error", num_turns="many",
                    identity="not a dict", error_detail="odd\nrow"))  # fits no column
    out = write_out_dir(tmp_path / "out", rows)
    slim = logged_copy(out, "slim")
    whole = logged_copy(out, "whole")
    (whole / ".results.lines").unlink()  # every line read: every listed row kept whole
    slim_report = build_report(slim)
    table_of = slim_report.table
    assert table_of.slimmed and not build_report(whole).table.slimmed
    assert {i for i in table_of.kept if listed(table_of.kept[i])
            and table_of.kept[i].get("lane", "agent") == "agent"
            and not table_of.kept[i].get("review_scored")} <= table_of.slimmed
    for i in table_of.slimmed:
        held = table_of.kept[i]
        assert set(held) <= table.schema.SLIM and "steps" not in held
        assert table_of.whole(i) == project(json.loads(
            (slim / "results.jsonl").read_bytes().splitlines()[i]))
    assert written(slim) == written(whole)
    page = written(slim)[1]
    assert ("more than 10" in page) is large


def test_a_slim_rows_whole_row_is_read_only_from_its_own_line(tmp_path: Path) -> None:
    """A slim row's whole row is its line read again, and only while that line
    is still the one the line log has (a file changed since gives the slim row,
    and, for the cache, nothing: the cache is not written again from it)."""
    out = logged_copy(write_out_dir(tmp_path / "out", variety()), "slim")
    table_of = build_report(out).table
    i = min(table_of.slimmed)
    whole = table_of.whole(i)
    assert whole["error_kind"] == table_of.kept[i]["error_kind"] and len(whole) > len(
        table_of.kept[i])
    results = out / "results.jsonl"
    data = bytearray(results.read_bytes())
    start = sum(len(line) + 1 for line in data.splitlines()[:i])
    at = data.index(b'"task": "', start) + len(b'"task": "')
    data[at:at + 1] = b"X"  # the same length, another line
    results.write_bytes(bytes(data))
    assert table_of.whole(i) == table_of.kept[i]
    with pytest.raises(table.table.WholeRowLost):
        table_of.whole(i, strict=True)
    cache = (out / CACHE).read_bytes()
    assert not rowcache.rewrite(out, (table_of.frame(table_of.positions) for _ in (1,)))
    assert (out / CACHE).read_bytes() == cache  # left as it was


def test_a_cache_written_again_from_a_table_of_slim_rows_holds_them_whole(
        tmp_path: Path) -> None:
    """The row cache is written again (here: damaged) by a report whose table
    holds the listed rows slim: each frame holds them whole, read again from
    their lines at once, as a table of whole rows would have written them."""
    out = logged_copy(write_out_dir(tmp_path / "out", variety()), "slim")
    build_report(out)  # the cache, as a first report writes it
    data = (out / CACHE).read_bytes()
    (out / CACHE).write_bytes(data[:len(data) // 2])
    use = CacheUse()
    assert build_report(out, use=use).table.slimmed and use.rewritten
    lines = (out / "results.jsonl").read_bytes().splitlines()
    entries, _ = load_entries(out)
    assert entries == {rowcache.line_key(line): project(json.loads(line)) for line in lines}
    assert any(listed(row) and "steps" in row for row in entries.values())
