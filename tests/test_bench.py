"""The benchmark's own logic (benchmarks/, `make bench`): the target table, and
the generated inputs it measures on doing what the figures assume. Nothing here
times anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import phases
from benchmarks.aggregation import memory_per_row
from benchmarks.outdirs import RowsShape, write_outdir
from benchmarks.projects import session_lengths, write_pytest_suite, write_sleeper_suite
from benchmarks.sweeps import run_sweep
from benchmarks.targets import Target, ratio, render_targets, summary_line, target_rows
from benchmarks.workload import RepoShape
from pytest_wfbench.tasks import load_task_file


def target(value: float | None, limit: float = 1.3, unit: str = "x") -> Target:
    return Target(key="k", target="a cell <= 1.3x", value=value, limit=limit, unit=unit,
                  measured="what")


def test_a_target_holds_at_its_limit_and_an_unmeasured_one_holds_nothing() -> None:
    assert target(1.3).holds is True
    assert target(1.31).holds is False
    assert target(None).holds is None
    assert [t.verdict() for t in (target(1.0), target(2.0), target(None))] == \
        ["holds", "DOES NOT HOLD", "not measured"]
    assert target(0.0, 0.0, "builds").shown() == "0"
    assert target(1.234, 2.0, "s").shown() == "1.23 s"
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None and ratio(1.0, 0.0) is None


def test_the_table_shows_every_target_with_its_verdict() -> None:
    targets = [target(1.0), Target("b", "b <= 2 s", 2.5, 2.0, "s", "wall"), target(None)]
    assert target_rows(targets)[1] == ("b <= 2 s", "2.00 s", "2.50 s", "DOES NOT HOLD", "wall")
    plain = render_targets(targets)
    assert plain.count("DOES NOT HOLD") == 1 and "n/a" in plain
    markdown = render_targets(targets, markdown=True).splitlines()
    assert markdown[0].startswith("| target |") and len(markdown) == 2 + len(targets)
    assert summary_line(targets) == "1 of 3 targets hold; not held: b; not measured: k"
    shown = Target("f", "f / ideal", 1.2, 1.1, "x", "for the record", informational=True)
    assert target_rows([shown])[0][3] == "(not a target)" and shown.to_json()["holds"] is None
    assert summary_line([*targets, shown]) == summary_line(targets)


def test_the_reports_memory_per_row_is_its_peaks_growth_over_the_rows() -> None:
    """Between the shapes of the same arms and runs: the growth of the report's
    own peak (peak RSS less the RSS before it began) / rows, in KB, shown beside
    the figures' own inputs (not a target), with the peaks themselves."""
    def shape(tasks: int, peak: float, before: float) -> dict[str, object]:
        return {"shape": f"{tasks} tasks", "rows": tasks * 1000,
                "session_end": {"peak_rss_mib": peak, "rss_before_mib": before}}

    growth = memory_per_row({"10x4x250": shape(10, 90.0, 50.0),
                             "100x4x250": shape(100, 180.0, 60.0),
                             "1000x4x25": shape(100, 999.0, 60.0)})
    assert growth is not None and growth.informational and growth.unit == "KB"
    assert growth.value == pytest.approx(80 * 1024 / 90_000)
    assert growth.shown() == "0.91 KB" and growth.verdict() == "(not a target)"
    assert "peak RSS 90 -> 180 MiB" in growth.measured and "40 -> 120 MiB" in growth.measured
    assert "1.02 KB a row with the RSS before" in growth.measured
    assert 0.1 < growth.limit < 0.5  # a row's numbers, flags and stage times
    assert memory_per_row({"10x4x250": shape(10, 90.0, 50.0)}) is None


def test_session_lengths_sum_to_s_and_are_ten_times_apart() -> None:
    lengths = session_lengths(24, 120.0)
    assert len(lengths) == 24
    assert sum(lengths) == pytest.approx(120.0, abs=0.01)
    assert max(lengths) / min(lengths) == pytest.approx(10.0, rel=0.05)
    assert lengths != sorted(lengths)  # shuffled: long sessions are not all at the end
    assert session_lengths(24, 120.0) == lengths


def test_the_generated_project_fails_its_oracle_until_the_gold_patch(tmp_path: Path) -> None:
    suite = write_pytest_suite(tmp_path / "p", RepoShape(3, 4), tasks=2, name="bench-p")
    task_file = load_task_file(suite.task_file)
    assert [t.id for t in task_file.tasks] == list(suite.tasks)
    assert suite.repo_files == sum(1 for p in suite.repo.rglob("*") if p.is_file())

    def oracle(task: str) -> int:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               str(suite.oracle_dir(task))], cwd=suite.repo,
                              capture_output=True, check=False).returncode

    assert oracle("shift-1") == 1
    subprocess.run(["git", "apply", str(suite.gold("shift-1"))], cwd=suite.repo, check=True)
    assert oracle("shift-1") == 0
    assert oracle("shift-0") == 1


def test_the_sleeper_suite_has_one_task_per_length(tmp_path: Path) -> None:
    suite = write_sleeper_suite(tmp_path / "s", [1.5, 0.25], "bench-s")
    tasks = load_task_file(suite.task_file).tasks
    assert [t.setup for t in tasks] == ["printf 1.5 > .session-length",
                                        "printf 0.25 > .session-length"]
    assert load_task_file(suite.task_file).arm_definitions["sleeper"].steps == (
        'sleep "$(cat .session-length)"',)


def test_a_measured_sweep_keeps_out_of_the_shared_pytest_temp_root(tmp_path: Path) -> None:
    """pytest-xdist's controller makes a basetemp; in the shared root
    (/tmp/pytest-of-<user>) pytest then deletes the oldest dirs there at the
    session's end, whatever run left them: a measured sweep would time that."""
    suite = write_sleeper_suite(tmp_path / "s", [0.05, 0.05], "bench-s")
    root = tmp_path / "temproot"
    root.mkdir()
    run = run_sweep(suite.task_file, tmp_path / "scratch", "basetemp", workers=2,
                    cache_dir=Path(os.environ["WFBENCH_CACHE_DIR"]), expect_cells=2,
                    env={"PYTEST_DEBUG_TEMPROOT": str(root)})
    assert run.measured.returncode == 0
    assert list(root.iterdir()) == []
    assert (tmp_path / "scratch" / "basetemp" / "basetemp").is_dir()


def test_a_generated_out_dir_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    shape = RowsShape(3, 2, 4)
    first = write_outdir(tmp_path / "a", shape) / "results.jsonl"
    second = write_outdir(tmp_path / "b", shape) / "results.jsonl"
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes().count(b"\n") == shape.rows == 24
    assert first.read_bytes().count(b'"error_kind": "harness-error"') == 1


def test_the_aggregation_measures_a_sweeps_end_with_its_page_in_every_state(
        tmp_path: Path) -> None:
    """Each state (as the writers leave it, without the line log, cold, warm)
    writes the same report.md and report.html and the terminal lines; a large
    sweep's page (600 cells) has the listed rows' transcripts, as a sweep's end
    reads them."""
    from benchmarks.aggregation import measure_shape

    figures = measure_shape(tmp_path, RowsShape(3, 2, 100))
    assert figures["same_report"] and figures["rows"] == 600
    end = figures["session_end"]
    assert end["rows"] == 600 and end["terminal_lines"] > 3 and end["html_bytes"] > 0
    page = (tmp_path / "rows-3x2x100" / "report.html").read_text()
    assert "This sweep has 600 cells, more than 500" in page
    assert "Turn 39: I will look at the module." in page  # a listed cell's transcript
    assert set(figures["session_end_split"]) >= {"read_s", "html_overview_s", "html_page_s"}


def test_a_shape_with_a_candidate_arm_measures_the_promotion_gate(tmp_path: Path) -> None:
    """Its last arm is a candidate of ``workflow``: the report writes promotion.json
    (one verdict, a task each), and the build says how long the gate took."""
    from benchmarks.aggregation import aggregation_targets, measure_shape

    shape = RowsShape(3, 4, 6, candidate=True)
    figures = measure_shape(tmp_path, shape)
    end = figures["session_end"]
    assert end["rows"] == 72 and end["promotion_s"] > 0 and "cold" not in figures
    evidence = json.loads((tmp_path / f"rows-{shape.key}" / "promotion.json").read_text())
    [verdict] = evidence["candidates"]
    assert (verdict["candidate"], verdict["incumbent"]) == ("candidate_workflow", "workflow")
    assert len(verdict["tasks"]) == 3
    [target] = aggregation_targets({shape.key: figures}, 72)
    assert "a candidate arm, session end" in target.target and "promotion gate" in target.measured


def test_a_stall_is_the_controllers_and_says_where_each_worker_last_was(tmp_path: Path) -> None:
    marks = tmp_path / "sweep.phases.json"
    stall = tmp_path / "sweep.phases.json.stall-{}.txt"
    early = ("gw0 (pid 2): sessionfinish at 1.0\nTimeout (0:00:02)!\nwaiting\n"
             "Timeout (0:00:02)!\nlast\n")
    Path(str(stall).format("gw0")).write_text(early)
    Path(str(stall).format("controller")).write_text("controller (pid 1): sessionfinish at 9.0\n")
    # A worker that finished first waits for the others, dumping: no stall.
    assert phases.stalls(marks) == {}
    Path(str(stall).format("controller")).write_text(
        "controller (pid 1): sessionfinish at 9.0\nTimeout (0:00:02)!\nin teardown_nodes\n")
    Path(str(stall).format("gw1")).write_text("gw1 (pid 3): sessionfinish at 8.0\n")
    found = phases.stalls(marks)
    assert set(found) == {"controller", "gw0", "gw1"}
    assert "in teardown_nodes" in found["controller"]
    assert found["gw0"].endswith("Timeout (0:00:02)!\nlast\n") and "waiting" not in found["gw0"]
    assert found["gw1"].endswith("(no dump)")
