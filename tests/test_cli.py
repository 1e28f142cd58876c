"""The wfbench command end to end, in subprocesses: report reproduces a sweep's
report files byte for byte, compare names changed cells and digests, merge
joins shards into what one sweep writes, validate checks task files (and with
--gold proves tasks sound), schema prints the shipped schemas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.outdir import build_report, write_report
from pytest_wfbench.redact import Redactor
from pytest_wfbench.store import ResultsStore
from tests.conftest import Suite, script_arm, task_yaml
from tests.rows import row as hand_row

SuiteFactory = Callable[..., Suite]
ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks" / "demo.yaml"
REPORT_FILES = ("report.md", "report.html", "promotion.json")
TIMINGS = ("duration_s", "session_duration_s", "harness_overhead_s", "stage_ms", "started_at",
           "recorded_at", "worker", "shard")
"""What may differ between a merge of shards and one sweep of the same cells."""


def wfbench(*args: str | Path, cwd: Path | None = None,
            module: bool = True) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: ``python -m pytest_wfbench`` or the
    console script beside the interpreter."""
    program = [sys.executable, "-m", "pytest_wfbench"] if module else [
        str(Path(sys.executable).parent / "wfbench")]
    return subprocess.run([*program, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=600)


def rows_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()
            if line.strip()]


def test_report_writes_a_finished_sweeps_report_files_again_byte_for_byte(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    fixer = script_arm("sed -i 's/a - b/a + b/' calc.py")
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")],
                          arms=["gold", "noop", "fixer", "candidate_fixer"],
                          arm_definitions={"fixer": fixer, "candidate_fixer": fixer})
    pytester.runpytest_subprocess(*suite.args("--wfbench-runs", "2")).assert_outcomes(
        passed=12, xfailed=4)
    written = {name: (suite.out / name).read_bytes() for name in REPORT_FILES
               if (suite.out / name).exists()}
    assert {"report.md", "report.html"} <= set(written)
    for name in written:
        (suite.out / name).unlink()
    result = wfbench("report", suite.out)
    assert result.returncode == 0, result.stderr
    assert {name: (suite.out / name).read_bytes() for name in written} == written
    assert f"wfbench report: {suite.out / 'report.md'}" in result.stdout
    # The console script is the same command.
    (suite.out / "report.md").unlink()
    assert wfbench("report", suite.out, module=False).returncode == 0
    assert (suite.out / "report.md").read_bytes() == written["report.md"]


def test_usage_errors_name_the_argument_and_exit_2(tmp_path: Path) -> None:
    result = wfbench("report", tmp_path / "nowhere")
    assert result.returncode == 2
    assert f"wfbench report: DIR {tmp_path / 'nowhere'}: no such directory" in result.stderr
    result = wfbench("compare", tmp_path, tmp_path)
    assert result.returncode == 2
    assert f"OLD {tmp_path}: not the out dir of a sweep (it has no results.jsonl)" \
        in result.stderr
    (tmp_path / "results.jsonl").write_text("")
    (tmp_path / "sweep.json").write_text("{not json")
    result = wfbench("report", tmp_path)
    assert result.returncode == 2 and "sweep.json cannot be read as JSON" in result.stderr
    result = wfbench("merge", tmp_path, "-o", tmp_path)
    assert result.returncode == 2
    result = wfbench("nonsense")
    assert result.returncode == 2 and "invalid choice: 'nonsense'" in result.stderr
    assert wfbench("schema", "other").returncode == 2
    assert wfbench("report", tmp_path, "--", "-n", "2").returncode == 2


PERCENTAGES = "min_improvement and max_task_regression are percentages >= 0"


@pytest.mark.rows_by_hand
def test_a_recorded_promotion_policy_the_gate_cannot_apply_is_a_usage_error(
        tmp_path: Path) -> None:
    """sweep.json's promotion settings (hand-edited, or of another version) are
    checked as the options are: the key or value named, exit 2, no traceback."""
    rows = [hand_row("t", arm, 1, resolved=True, cost_usd=1.0)
            for arm in ("workflow", "candidate_workflow")]
    for n, each in enumerate(rows):
        each["cell_id"], each["sweep_id"] = f"c{n}", "s"
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for promotion, said in (({"bogus": 1}, "unknown promotion settings bogus (known: metric"),
                            ({"min_runs": "3"}, "promotion setting min_runs must be an integer"),
                            ({"require_significance": 1},
                             "promotion setting require_significance must be true or false"),
                            ({"metric": "nope"}, "promotion metric 'nope' is not one of"),
                            ({"min_improvement": float("nan")}, PERCENTAGES),
                            ({"max_task_regression": float("inf")}, PERCENTAGES),
                            ({"expiry_days": 10**10}, "expiry_days is between 0 and 36500"),
                            ({"resamples": 10**9}, "resamples must be an integer between 1"),
                            ([1], "the promotion settings are not a mapping")):
        (tmp_path / "sweep.json").write_text(json.dumps(
            {"sweep_id": "s", "settings": {"promotion": promotion}}))
        result = wfbench("report", tmp_path)
        assert result.returncode == 2, result.stderr
        assert f"wfbench report: DIR {tmp_path}: sweep.json: {said}" in result.stderr
        assert "Traceback" not in result.stderr
    (tmp_path / "sweep.json").write_text(json.dumps(
        {"sweep_id": "s", "settings": {"promotion": {"min_improvement": 3, "seed": 7}}}))
    assert wfbench("report", tmp_path).returncode == 0  # a float setting takes an integer
    assert json.loads((tmp_path / "promotion.json").read_text())["candidates"][0]["policy"][
        "min_improvement"] == 3


@pytest.mark.parametrize("command", ["report", "compare", "merge", "validate", "schema"])
def test_every_subcommand_has_help_with_its_exit_codes(command: str) -> None:
    result = wfbench(command, "--help")
    assert result.returncode == 0
    assert f"usage: wfbench {command}" in result.stdout and "exit status: 0" in result.stdout


def test_schema_prints_the_shipped_schemas() -> None:
    for name, file in (("rows", "row.schema.json"), ("tasks", "task-file.schema.json")):
        result = wfbench("schema", name)
        assert result.returncode == 0
        assert json.loads(result.stdout) == json.loads(
            (ROOT / "pytest_wfbench" / file).read_text())


def demo_sweep(pytester: pytest.Pytester, out: Path, *extra: str,
               tasks: Path = DEMO) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--wfbench-tasks", str(tasks),
                                         "--wfbench-arms", "gold,noop", "--wfbench-out", str(out),
                                         *extra)


def normalized(out: Path, copy: Path) -> Path:
    """A copy of an out dir with what may differ set to one value: timings,
    workers, shards, the out dir's own path."""
    shutil.copytree(out, copy)
    alike = {"duration_s": 1.0, "session_duration_s": 0.5, "harness_overhead_s": 0.5,
             "stage_ms": {}, "started_at": "2026-01-01T00:00:00.000Z",
             "recorded_at": "2026-01-01T00:00:00Z", "worker": "main", "shard": None}
    rows = [{**row, **{key: value for key, value in alike.items() if row[key] is not None}}
            for row in rows_of(copy)]
    (copy / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n"
                                                for r in rows))
    record = json.loads((copy / "sweep.json").read_text())
    record["out_dir"] = "OUT"
    (copy / "sweep.json").write_text(json.dumps(record))
    return copy


def test_three_shards_merged_are_what_one_sweep_writes(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    whole = pytester.path / "whole"
    demo_sweep(pytester, whole, "--wfbench-sweep-id", "demo-1").assert_outcomes(
        passed=6, xfailed=4)
    shards = [pytester.path / f"shard-{i}" for i in (1, 2, 3)]
    for index, out in enumerate(shards, start=1):
        result = demo_sweep(pytester, out, "--wfbench-shard", f"{index}/3",
                            "--wfbench-sweep-id", "demo-1")
        assert result.ret == 0
    tasks_per_shard = [{row["task"] for row in rows_of(out)} for out in shards]
    for tasks in tasks_per_shard:
        assert tasks, "no shard is empty"
    assert sum(len(t) for t in tasks_per_shard) == len(set().union(*tasks_per_shard)) == 5
    merged = pytester.path / "merged"
    merging = wfbench("merge", *shards, "-o", merged)
    assert merging.returncode == 0, merging.stderr
    assert "10 cells from 3 out dirs" in merging.stdout and "(sweep demo-1, complete)" \
        in merging.stdout
    one, joined = rows_of(whole), rows_of(merged)
    assert sorted(r["cell_id"] for r in one) == sorted(r["cell_id"] for r in joined)
    by_cell = {r["cell_id"]: r for r in one}
    for row in joined:
        assert row["shard"] in ("1/3", "2/3", "3/3")
        mine = {k: v for k, v in row.items() if k not in TIMINGS}
        theirs = {k: v for k, v in by_cell[row["cell_id"]].items() if k not in TIMINGS}
        assert mine == theirs, row["cell_id"]
        for name in row["artifacts"]:
            path = merged / name
            assert path.is_file() and not path.is_symlink()
            assert path.read_bytes() == (whole / name).read_bytes()
    record = json.loads((merged / "sweep.json").read_text())
    assert record["sweep_id"] == "demo-1" and record["shard"] is None
    assert [m["shard"] for m in record["merged_from"]] == ["1/3", "2/3", "3/3"]
    # The same report apart from timings: rendered from both with the timings,
    # workers, shards and out dir set alike, byte for byte.
    a, b = normalized(whole, tmp_path / "a"), normalized(merged, tmp_path / "b")
    for out in (a, b):
        write_report(ResultsStore(out, Redactor([])))
    for name in ("report.md", "report.html"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    written = (merged / "report.md").read_text()
    assert written == build_report(merged).files["report.md"]
    assert "- shard:" not in written and "Sweep `demo-1`." in written


def test_compare_names_the_cells_a_changed_gold_patch_changed_and_its_digest(
    pytester: pytest.Pytester,
) -> None:
    changed = pytester.path / "tasks"
    shutil.copytree(ROOT / "tasks", changed, ignore=shutil.ignore_patterns("__pycache__"))
    gold = changed / "gold" / "mean-empty-input.patch"
    text = gold.read_text()
    # The gold patch keeps its new test and loses its fix: gold no longer resolves.
    gold.write_text(text[:text.index("diff --git a/textstats/core.py")])
    selected = ("-k", "mean-empty-input or fix-contractions")
    old, new = pytester.path / "old", pytester.path / "new"
    demo_sweep(pytester, old, *selected).assert_outcomes(passed=2, xfailed=2)
    demo_sweep(pytester, new, *selected, tasks=changed / "demo.yaml")
    old_rows = {r["cell_id"]: r for r in rows_of(old)}
    new_rows = {r["cell_id"]: r for r in rows_of(new)}
    before = old_rows["mean-empty-input-gold-r1"]["identity"]["task"]
    after = new_rows["mean-empty-input-gold-r1"]["identity"]["task"]
    assert before != after
    assert new_rows["mean-empty-input-gold-r1"]["resolved"] is False
    result = wfbench("compare", old, new)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "| mean-empty-input-gold-r1 | resolved | " in out
    assert f"| task | mean-empty-input | {before[:12]} | {after[:12]} | " \
           "mean-empty-input-gold-r1, mean-empty-input-noop-r1 |" in out
    assert "fix-contractions-gold-r1 |" not in out.split("## Cells that changed outcome")[1] \
        .split("## Identity changes")[0]
    data = json.loads(wfbench("compare", old, new, "--json").stdout)
    changes = {c["cell_id"]: c for c in data["changed_cells"]}
    assert changes["mean-empty-input-gold-r1"]["identity_changes"] == ["task"]
    (identity,) = data["identity_changes"]
    assert (identity["part"], identity["owner"], identity["old"], identity["new"]) == (
        "task", "mean-empty-input", before, after)
    # Merging the two is refused: the same cells, measured under other identities.
    result = wfbench("merge", old, new, "-o", pytester.path / "both")
    assert result.returncode == 1
    assert "cell mean-empty-input-gold-r1: " in result.stderr and "task (" in result.stderr
    assert not (pytester.path / "both").exists()


def test_merge_copies_artifacts_never_through_links_and_keeps_the_first_admissible_row(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("fix-add"), task_yaml("fix-add-2")])
    first, second = pytester.path / "first", pytester.path / "second"
    for out, selection in ((first, "fix-add-gold or fix-add-noop"), (second, "fix-add-2")):
        suite.out = out
        pytester.runpytest_subprocess(*suite.args("-k", selection))
    secret = pytester.path / "host-secret.txt"
    secret.write_text("not to be copied")
    link = second / "artifacts" / "fix-add-2-gold-r1.patch"
    link.unlink()
    link.symlink_to(secret)
    merged = pytester.path / "merged"
    result = wfbench("merge", first, second, "-o", merged)
    assert result.returncode == 0, result.stderr
    assert "fix-add-2-gold-r1: artifacts not copied" in result.stdout
    assert not (merged / "artifacts" / "fix-add-2-gold-r1.patch").exists()
    assert (merged / "artifacts" / "fix-add-gold-r1.patch").read_bytes() == \
        (first / "artifacts" / "fix-add-gold-r1.patch").read_bytes()
    rows = rows_of(merged)
    ids = {r["sweep_id"] for r in rows}
    assert len(ids) == 1 and ids.pop().startswith("merged-")
    assert {r["merged_from"] for r in rows} == {rows_of(first)[0]["sweep_id"],
                                                rows_of(second)[0]["sweep_id"]}
    assert "| fix-add-2 | bug | gold | 1/1 |" in (merged / "report.md").read_text()
    # The same out dir twice: identical rows, taken once.
    again = pytester.path / "again"
    result = wfbench("merge", first, first, "-o", again)
    assert result.returncode == 0
    assert "fix-add-gold-r1: identical rows in" in result.stdout
    assert len(rows_of(again)) == len(rows_of(first))
    assert wfbench("merge", first, "-o", again).returncode == 2  # not empty


def test_validate_checks_task_files_as_a_sweep_does(tmp_path: Path,
                                                    suite_factory: SuiteFactory) -> None:
    suite = suite_factory()
    result = wfbench("validate", DEMO, suite.task_file)
    assert result.returncode == 0, result.stderr
    assert f"{DEMO}: valid: 5 tasks, 0 scenarios, 10 cells" in result.stdout
    document = json.loads(suite.task_file.read_text())
    document["tasks"][0]["colour"] = "blue"
    bad = suite.root / "bad.yaml"
    bad.write_text(json.dumps(document, indent=2))
    result = wfbench("validate", bad, DEMO)
    assert result.returncode == 1
    assert f"wfbench validate: {bad}:" in result.stderr and "colour" in result.stderr
    assert f"{DEMO}: valid" in result.stdout  # every file is checked
    result = wfbench("validate", suite.task_file, "--arms", "gold,nosuch")
    assert result.returncode == 1 and "arm 'nosuch'" in result.stderr
    twin = suite.root / "twin.yaml"
    twin.write_text(suite.task_file.read_text())
    result = wfbench("validate", suite.task_file, twin)
    assert result.returncode == 1 and "task id also used in" in result.stderr
    result = wfbench("validate", tmp_path / "missing.yaml")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_validate_gold_proves_each_task_sound_and_exits_0_only_when_all_are(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory()
    result = wfbench("validate", "--gold", suite.task_file, cwd=pytester.path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wfbench validate: fix-add: sound: gold resolves it, noop does not" in result.stdout
    suite = suite_factory(tasks=[
        task_yaml("fix-add"),
        task_yaml("passes-anyway", verify="true",
                  oracle={"command": "true", "files": "oracle/", "expect": "exit-code"}),
        task_yaml("cannot-pass", verify="false")])
    out = pytester.path / "validated"
    result = wfbench("validate", "--gold", suite.task_file, "--out", out, "--", "-n", "2",
                     cwd=pytester.path)
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("wfbench validate: ")]
    assert "wfbench validate: fix-add: sound: gold resolves it, noop does not" in lines
    assert "wfbench validate: passes-anyway: unsound: noop resolves it (its oracle passes " \
           "without any change)" in lines
    assert any(line.startswith("wfbench validate: cannot-pass: unsound: gold does not resolve "
                               "it (verify-failed") for line in lines)
    assert {r["worker"] for r in rows_of(out)} <= {"gw0", "gw1"}  # -n 2 reached pytest
    assert f"out dir: {out}" in result.stdout


WEAK_ORACLE = "from calc import add\n\n\ndef test_add_exists():\n    assert callable(add)\n"


def test_validate_mutants_judges_each_tasks_kill_rate(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """The calc task's oracle checks add(2, 3) == 5: it kills the mutants of
    `a + b` that verify lets through; an oracle that only checks that add exists
    kills none, and the task is under-specified (exit 1)."""
    suite = suite_factory(tasks=[task_yaml(verify="true", oracle={
        "command": "python -m pytest -q -p no:cacheprovider $WFBENCH_ORACLE_DIR",
        "files": "oracle/"})])
    result = wfbench("validate", "--mutants", suite.task_file, "--", "-n", "2",
                     cwd=pytester.path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wfbench validate: fix-add: sound: gold resolves it, noop does not" in result.stdout
    assert "wfbench validate: fix-add: kill rate 100% (" in result.stdout
    (suite.root / "oracle" / "test_oracle.py").write_text(WEAK_ORACLE)
    result = wfbench("validate", "--mutants", suite.task_file, "--max-mutants", "3",
                     cwd=pytester.path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "wfbench validate: fix-add: under-specified: kill rate 0% < 60% (" in result.stdout
    result = wfbench("validate", "--mutants", suite.task_file, "--min-kill-rate", "2")
    assert result.returncode == 2 and "--min-kill-rate must be between 0 and 1" in result.stderr


def test_validate_gold_says_when_the_sweep_cannot_run(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory()
    env = {**os.environ, "CI": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest_wfbench", "validate", "--gold", str(suite.task_file),
         "--", "--wfbench-unsafe-no-sandbox"], cwd=pytester.path, capture_output=True,
        text=True, env=env, check=False, timeout=600)
    assert result.returncode == 3
    assert "the gold,noop sweep could not run (pytest exit status 4" in result.stderr
