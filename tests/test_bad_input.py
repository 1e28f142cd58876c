"""A malformed task file stops the sweep before any cell runs, naming where."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.tasks import TaskFileError, load_task_file, load_task_files
from tests.conftest import task_yaml, write_suite


def rewrite(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2))


CASES: dict[str, tuple[Any, str]] = {
    "unknown key": (lambda d: d["tasks"][0].update(verfy="x"),
                    r"task 'fix-add': field 'verfy': unknown key"),
    "task id with spaces": (lambda d: d["tasks"][0].update(id="fix add"),
                            r"field 'id': 'fix add' is not a valid task id"),
    "duplicate task id": (lambda d: d["tasks"].append(task_yaml()),
                          r"task 'fix-add': field 'id': duplicate task id \(first at line \d+\)"),
    "missing oracle files": (lambda d: d["tasks"][0]["oracle"].update(files="nope/"),
                             r"field 'oracle.files': .*nope does not exist"),
    "gold escapes the folder": (lambda d: d["tasks"][0].update(gold="../../etc/passwd"),
                                r"field 'gold': \.\./\.\./etc/passwd escapes the task file's"),
    "missing verify": (lambda d: d["tasks"][0].pop("verify"),
                       r"field 'verify': required field is missing"),
    "unknown arm": (lambda d: d.update(arms=["gold", "mystery"]),
                    r"field 'arms': unknown arm 'mystery'"),
    "bad version": (lambda d: d.update(version=2), r"field 'version': unsupported version"),
    "hidden path escapes": (lambda d: d["tasks"][0]["oracle"].update(hidden_paths=["../x"]),
                            r"field 'oracle.hidden_paths': '\.\./x' must be a relative path"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_loader_names_file_line_task_and_field(tmp_path: Path, case: str) -> None:
    change, message = CASES[case]
    suite = write_suite(tmp_path)
    rewrite(suite.task_file, change)
    with pytest.raises(TaskFileError, match=message) as info:
        load_task_file(suite.task_file)
    assert str(info.value).startswith(f"{suite.task_file}:")
    assert info.value.line is not None and info.value.line > 1


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("version: 1\ntasks:\n  - id: a\n    prompt: [unclosed\n")
    with pytest.raises(TaskFileError, match=r"tasks\.yaml:\d+: invalid YAML") as info:
        load_task_file(path)
    assert info.value.line is not None and info.value.line >= 4


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text("version: 1\nversion: 1\ntasks: []\n")
    with pytest.raises(TaskFileError, match=r":2: field 'version': duplicate key"):
        load_task_file(path)


def test_task_ids_are_unique_across_files(tmp_path: Path) -> None:
    first = write_suite(tmp_path / "a")
    second = write_suite(tmp_path / "b")
    with pytest.raises(TaskFileError, match="task id also used in"):
        load_task_files([first.task_file, second.task_file])


@pytest.mark.parametrize("case", ["unknown key", "task id with spaces", "gold escapes the folder",
                                  "missing oracle files", "duplicate task id"])
def test_bad_task_file_is_a_usage_error_and_no_cell_runs(
    pytester: pytest.Pytester, case: str
) -> None:
    change, message = CASES[case]
    suite = write_suite(pytester.path)
    rewrite(suite.task_file, change)
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.re_match_lines([rf".*wfbench: .*tasks\.yaml:\d+: .*{message}.*"])
    assert not suite.out.exists() or not (suite.out / "results.jsonl").exists()


def test_malformed_yaml_is_a_usage_error(pytester: pytest.Pytester) -> None:
    suite = write_suite(pytester.path)
    suite.task_file.write_text("version: 1\ntasks: [\n")
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tasks.yaml:*invalid YAML*"])


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester) -> None:
    suite = write_suite(pytester.path)
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-runs", "0"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--wfbench-runs*must be a positive whole number*"])
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-arms", "nope"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*arm 'nope' from --wfbench-arms is not defined here*"])


def test_ini_keys_are_read_and_the_command_line_wins(pytester: pytest.Pytester) -> None:
    suite = write_suite(pytester.path)
    pytester.makeini("[pytest]\nwfbench_arms = noop\nwfbench_runs = 2\n")
    result = pytester.runpytest_subprocess(*suite.args("--collect-only", "-q"))
    result.stdout.fnmatch_lines(["*fix-add-noop-r1*", "*fix-add-noop-r2*", "2 tests collected*"])
    result = pytester.runpytest_subprocess(*suite.args("--collect-only", "-q",
                                                       "--wfbench-runs", "1"))
    result.stdout.fnmatch_lines(["1 test collected*"])


def _nothing_written(suite: Any) -> None:
    assert not suite.out.exists(), sorted(p.name for p in suite.out.iterdir())


LAST_BAD_INPUTS: dict[str, tuple[Any, tuple[str, ...], str]] = {
    "task file not UTF-8": (lambda s: s.task_file.write_bytes(
        s.task_file.read_bytes().replace(b'"bug"', b'"b\xe9g"')), (),
        r".*tasks\.yaml:\d+: the task file is not UTF-8 text \(byte 0xe9 at offset \d+\).*"),
    "ref that does not resolve": (lambda s: rewrite(s.task_file, lambda d: d["tasks"][0].update(
        ref="no-such-branch")), (),
        r".*tasks\.yaml:\d+: task 'fix-add': field 'ref': cannot resolve ref 'no-such-branch'.*"),
    "effort outside the CLI's levels": (lambda s: None, ("--wfbench-effort", "extreme"),
                                        r".*--wfbench-effort .*must be one of low, medium, high, "
                                        r"xhigh, max, got 'extreme'.*"),
    "empty arms": (lambda s: None, ("--wfbench-arms", ","),
                   r".*--wfbench-arms names no arm \(got ','\).*"),
    "out dir that is a file": (lambda s: s.out.write_text("x"), (),
                               r".*--wfbench-out .*out exists and is not a directory.*"),
}


@pytest.mark.parametrize("case", list(LAST_BAD_INPUTS))
def test_the_last_bad_inputs_are_usage_errors_that_write_nothing(
    pytester: pytest.Pytester, case: str
) -> None:
    change, options, message = LAST_BAD_INPUTS[case]
    suite = write_suite(pytester.path)
    change(suite)
    existed = suite.out.exists()
    result = pytester.runpytest_subprocess(*suite.args(*options))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.re_match_lines([message])
    if not existed:
        _nothing_written(suite)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_an_out_dir_that_holds_a_sweep_needs_resume(pytester: pytest.Pytester) -> None:
    suite = write_suite(pytester.path)
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=1, xfailed=1)
    before = (suite.out / "results.jsonl").read_bytes()
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*already holds the rows of a sweep: continue it with "
                                 "--wfbench-resume, or give another directory*"])
    assert (suite.out / "results.jsonl").read_bytes() == before


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run the sweep as another user")
@pytest.mark.parametrize("what", ["gold", "oracle"])
def test_unreadable_gold_and_oracle_files_are_usage_errors(tmp_path_factory: Any,
                                                           what: str) -> None:
    """Run as an unprivileged user (root reads everything), with a file it
    cannot read: a usage error naming the task and the field, nothing written."""
    base = Path(tempfile.mkdtemp(prefix="wfbench-unreadable-", dir="/tmp"))
    try:
        suite = write_suite(base)
        locked = base / ("gold.patch" if what == "gold" else "oracle/test_oracle.py")
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        locked.chmod(0o000)
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                   sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                   *suite.args()[2:]]
        env = {**os.environ, "HOME": str(base), "WFBENCH_CACHE_DIR": "none"}
        result = subprocess.run(command, cwd=base, env=env, capture_output=True, text=True,
                                timeout=120, check=False)
        assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
        field = "gold" if what == "gold" else "oracle.files"
        assert f"task 'fix-add': field '{field}'" in result.stderr, result.stderr
        assert "cannot be read" in result.stderr
        assert not suite.out.exists()
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=False)
