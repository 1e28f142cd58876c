"""A malformed task file stops the sweep before any cell runs, naming where."""

from __future__ import annotations

import json
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
