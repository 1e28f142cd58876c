"""Review cells end to end with scripted arms: real pytest sweeps, real git and
bubblewrap, on review tasks of the tests' calc project (tests/review_suite.py).
The agent arms' sessions are in tests/test_review_agent.py."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from pytest_wfbench.cells import Cell, definitions
from pytest_wfbench.oracle import EMPTY_DIGEST, OracleSnapshot
from pytest_wfbench.review.session import review_task_text, workspace_write_attempts
from pytest_wfbench.tasks import load_task_file
from tests.conftest import script_arm, task_yaml
from tests.review_suite import (
    BUG_LABEL,
    BUG_LINES,
    CLAMP,
    clean_control,
    finding,
    review_json,
    review_suite,
    review_task,
    write_review_step,
)

FOUND = review_json(finding())
CELL = "review-clamp-reviewer-r1"


def run(pytester: pytest.Pytester, steps: list[str], *extra: str,
        tasks: list[dict[str, Any]] | None = None) -> tuple[pytest.RunResult, dict[str, Any]]:
    """One review cell of a script arm ``reviewer`` running ``steps``."""
    suite = review_suite(pytester.path, tasks=tasks, arms=["reviewer"],
                         arm_definitions={"reviewer": script_arm(*steps)})
    result = pytester.runpytest_subprocess(*suite.args("-rA", *extra))
    return result, suite.row(CELL)


def invalid(row: dict[str, Any]) -> str:
    """The reason of a review-evidence-invalid row (counted as unresolved: the
    reviewing arm's doing can never exclude it)."""
    assert row["error_kind"] == "review-evidence-invalid", row["error_detail"]
    assert row["counted"] is True and row["resolved"] is False
    assert row["review_scored"] is False and row["review"] is None
    return str(row["error_detail"])


def test_gold_and_noop_validate_review_tasks_and_the_clean_control_noop_resolves(
    pytester: pytest.Pytester
) -> None:
    suite = review_suite(pytester.path, tasks=[review_task(), clean_control(), task_yaml()])
    result = pytester.runpytest_subprocess(*suite.args("-n", "2", "-rA"))
    # noop on the planted bug is a strict xfail; on the clean control a pass.
    result.assert_outcomes(passed=4, xfailed=2)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["XFAIL*test_review?review-clamp-noop-r1?*"])
    result.stdout.fnmatch_lines(["PASSED*test_review?review-tidy-noop-r1?*"])
    gold, noop = suite.row("review-clamp-gold-r1"), suite.row("review-clamp-noop-r1")
    assert gold["resolved"] is True and gold["review_scored"] is True
    assert gold["review"]["tp"] == 1 and gold["review"]["labels"] == 1
    assert gold["oracle_passed"] is True and gold["authored_tests_passed"] is None
    assert noop["error_kind"] == "oracle-failed" and noop["counted"] is True
    assert noop["review"]["fn"] == 1 and noop["review"]["verdict"] == "approve"
    assert "1 missed label(s) of 1, verdict wrong" in noop["error_detail"]
    tidy = suite.row("review-tidy-noop-r1")
    assert tidy["resolved"] is True and tidy["review"]["clean_control_pass"] is True
    # The change tasks' rows are no review rows.
    assert suite.row("fix-add-gold-r1")["review_scored"] is None
    # The artifact is saved for every scored cell; gold's holds the labels.
    artifacts = suite.out / "artifacts"
    gold_review = json.loads((artifacts / "review-clamp-gold-r1.review.json").read_text())
    assert gold_review["findings"][0]["id"] == BUG_LABEL["id"]
    assert json.loads((artifacts / "review-clamp-noop-r1.review.json").read_text())[
        "findings"] == []
    assert gold["artifacts"] == ["artifacts/review-clamp-gold-r1.review.json"]
    report = (suite.out / "report.md").read_text()
    section = report[report.index("## Review quality"):]
    assert "| review-clamp | noop | 1/1 | 0 | 0 | 1 |" in section
    assert "| review-tidy | noop | 1/1 | 0 | 0 | 0 |" in section
    assert "Scored review runs per arm: gold 2/2, noop 2/2." in section
    # Review rows count in health like any other.
    assert "| gold | OBSERVED_OK | 3 | 3 |" in report


def test_a_change_that_does_not_apply_is_a_usage_error_before_any_cell(
    pytester: pytest.Pytester
) -> None:
    suite = review_suite(pytester.path, tasks=[task_yaml(), review_task(change="stale.patch")])
    (suite.root / "stale.patch").write_text(
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a * b\n+    return a + b\n")
    result = pytester.runpytest_subprocess(*suite.args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{suite.task_file}:*: task 'review-clamp': field 'change': "
                                 f"*stale.patch: the change does not apply*"])
    assert not suite.rows()


def test_a_change_that_setup_keeps_from_applying_is_an_infra_error(
    pytester: pytest.Pytester
) -> None:
    task = review_task(setup="echo 'def double(x): return x + x' > calc.py")
    result, row = run(pytester, [write_review_step(FOUND)], tasks=[task])
    result.assert_outcomes(errors=1)
    assert row["error_kind"] == "infra-error" and row["counted"] is False
    assert "the change does not apply after setup" in row["error_detail"]
    assert row["steps"] == [] and row["review_scored"] is False


def test_a_scripted_review_that_finds_the_planted_bug_resolves(
    pytester: pytest.Pytester
) -> None:
    # The step sees the change (uncommitted, in git diff) on the read-only workspace.
    steps = ["git diff --stat | grep -q 'calc.py'",
             "grep -q 'def clamp' calc.py && test ! -w calc.py",
             'test -d "$WFBENCH_REVIEW_DIR" && test "$WFBENCH_REVIEW_DIR" = /review',
             write_review_step(FOUND)]
    result, row = run(pytester, steps)
    result.assert_outcomes(passed=1)
    assert [step["returncode"] for step in row["steps"]] == [0, 0, 0, 0]
    assert row["resolved"] is True and row["error_kind"] is None
    assert row["review"]["tp"] == 1 and row["review"]["grounding"] == 1.0
    assert row["tool_calls"] == 4 and row["session_duration_s"] is not None


def test_a_scripted_review_with_a_false_positive_does_not_resolve(
    pytester: pytest.Pytester
) -> None:
    extra = finding("F2", line=1, end_line=2, severity="low", blocking=False)
    result, row = run(pytester, [write_review_step(review_json(finding(), extra))])
    result.assert_outcomes(failed=1)
    assert row["error_kind"] == "oracle-failed" and row["counted"] is True
    assert row["review_scored"] is True
    assert (row["review"]["tp"], row["review"]["fp"], row["review"]["fn"]) == (1, 1, 0)
    assert "1 false positive(s), 0 missed" in row["error_detail"]


def test_invalid_json_is_review_evidence_invalid_with_the_parse_error(
    pytester: pytest.Pytester
) -> None:
    result, row = run(pytester, [write_review_step('{"schema_version": 1, "verdict": }')])
    result.assert_outcomes(errors=1)
    assert invalid(row) == ("review.json: not JSON: Expecting value at line 1 column 34")
    # The invalid artifact is kept, to see what was wrong.
    saved = pytester.path / "out" / "artifacts" / f"{CELL}.review.json"
    assert saved.read_text() == '{"schema_version": 1, "verdict": }'


def test_a_schema_violation_names_its_json_path(pytester: pytest.Pytester) -> None:
    bad = review_json(finding(line=0, end_line=0))
    result, row = run(pytester, [write_review_step(bad)])
    result.assert_outcomes(errors=1)
    assert "$.findings[0].line: expected at least 1, got 0" in invalid(row)


def test_a_missing_review_is_review_evidence_invalid(pytester: pytest.Pytester) -> None:
    result, row = run(pytester, ["true"])
    result.assert_outcomes(errors=1)
    assert "missing: the session left no review.json" in invalid(row)
    assert not (pytester.path / "out" / "artifacts" / f"{CELL}.review.json").exists()


# --- hostile arms -------------------------------------------------------------------------


def test_a_link_as_review_json_is_never_followed(pytester: pytest.Pytester) -> None:
    secret = f"HOST-SECRET-{secrets.token_hex(6)}"
    host_file = pytester.path / "host-review.json"
    # A valid review: following the link would score it.
    host_file.write_text(review_json(finding(evidence=secret)))
    result, row = run(pytester, [f'ln -s {host_file} "$WFBENCH_REVIEW_DIR/review.json"'])
    result.assert_outcomes(errors=1)
    assert "is a symbolic link (not followed)" in invalid(row)
    assert host_file.read_text() == review_json(finding(evidence=secret))
    for path in (pytester.path / "out").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path


def test_a_fifo_as_review_json_is_never_opened(pytester: pytest.Pytester) -> None:
    result, row = run(pytester, ['mkfifo "$WFBENCH_REVIEW_DIR/review.json"'])
    result.assert_outcomes(errors=1)
    assert "is a FIFO (not opened)" in invalid(row)


def test_a_directory_as_review_json_is_refused(pytester: pytest.Pytester) -> None:
    result, row = run(pytester, ['mkdir "$WFBENCH_REVIEW_DIR/review.json"',
                                 write_review_step(FOUND, '"$WFBENCH_REVIEW_DIR/review.json/x"')])
    result.assert_outcomes(errors=1)
    assert "review.json is a directory" in invalid(row)


def test_an_oversized_review_is_refused_after_reading_one_byte_past_the_limit(
    pytester: pytest.Pytester
) -> None:
    # Valid JSON but for its size: 300 KiB of it (trailing spaces).
    pad = ("python -c \"import sys; sys.stdout.write(open(sys.argv[1]).read() + ' ' * "
           "(300 * 1024 - len(open(sys.argv[1]).read())))\" \"$HOME/r.json\" "
           '> "$WFBENCH_REVIEW_DIR/review.json"')
    result, row = run(pytester, [write_review_step(FOUND, '"$HOME/r.json"'), pad])
    result.assert_outcomes(errors=1)
    assert [step["returncode"] for step in row["steps"]] == [0, 0]
    detail = invalid(row)
    assert "oversized: at least 262,145 bytes, over the limit of 262,144 (256 KiB)" in detail
    assert not (pytester.path / "out" / "artifacts" / f"{CELL}.review.json").exists()


def test_a_review_written_into_the_workspace_is_refused_by_its_read_only_mount(
    pytester: pytest.Pytester
) -> None:
    result, row = run(pytester, [write_review_step(FOUND, "review.json"),
                                 write_review_step(FOUND, "/workspace/review.json")])
    result.assert_outcomes(errors=1)
    assert [step["returncode"] for step in row["steps"]] == [1, 1]
    assert "missing: the session left no review.json" in invalid(row)


def test_links_in_the_review_folder_do_not_open_the_workspace_to_writes(
    pytester: pytest.Pytester
) -> None:
    steps = ['ln -s /workspace "$WFBENCH_REVIEW_DIR/ws"',
             'echo pwned >> "$WFBENCH_REVIEW_DIR/ws/calc.py"',
             'ln -s /workspace/calc.py "$WFBENCH_REVIEW_DIR/calc-link"',
             'echo pwned >> "$WFBENCH_REVIEW_DIR/calc-link"',
             write_review_step(FOUND)]
    result, row = run(pytester, steps)
    # Every write into the workspace failed (read-only): nothing changed (the
    # harness compares the workspace with what it was), the review is scored.
    codes = [step["returncode"] for step in row["steps"]]
    assert codes == [0, 1, 0, 1, 0], codes
    result.assert_outcomes(passed=1)
    assert row["resolved"] is True and row["review"]["tp"] == 1


def test_without_a_sandbox_a_changed_workspace_is_review_evidence_invalid(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read-only mount is the sandbox's: without one, the harness's own check
    of the workspace after the session is what catches an edit."""
    monkeypatch.delenv("CI", raising=False)
    steps = ["echo '# reviewed' >> calc.py", write_review_step(FOUND)]
    result, row = run(pytester, steps, "--wfbench-unsafe-no-sandbox")
    result.assert_outcomes(errors=1)
    assert row["sandbox_backend"] == "unsafe-host"
    assert row["steps"][0]["returncode"] == 0  # the edit itself went through
    assert invalid(row) == ("the session changed the workspace, which is read-only for a "
                            "review: calc.py")


# --- the labels stay hidden ---------------------------------------------------------------

MARK_ID = "zq8k-" + "planted"
MARK_PATH = "legacy/caller_" + "x7w2.py"
MARK_LINES = (7391, 7394)
# The two line numbers near each other, in either order (a rendering sorts keys).
LINES_RE = re.compile("|".join(rf"(?<!\d){a}(?!\d).{{1,300}}?(?<!\d){b}(?!\d)"
                               for a, b in (MARK_LINES, MARK_LINES[::-1])), re.DOTALL)


def _split(marker: str) -> str:
    """The marker as a shell word that does not hold it literally (the step's
    command is in the row)."""
    return f'"{marker[:4]}""{marker[4:]}"'


def reveals_labels(text: str) -> list[str]:
    found = [marker for marker in (MARK_ID, MARK_PATH) if marker in text]
    return found + (["lines"] if LINES_RE.search(text) else [])


def test_the_labels_reach_no_file_the_arm_can_read_nor_any_output_but_golds_review(
    pytester: pytest.Pytester
) -> None:
    # A second label on a file the change does not touch (a caller it breaks), with
    # a distinctive id, path and line range: the label's whole content.
    hidden = {"id": MARK_ID, "path": MARK_PATH, "line": MARK_LINES[0],
              "end_line": MARK_LINES[1], "severity": "low", "category": "compatibility",
              "blocking": False}
    task = review_task(findings=[BUG_LABEL, hidden])
    # The arm searches every file it can see (but the large read-only system trees)
    # for the labels, and reports what it found in its review.
    search = (r"grep -rlI --exclude-dir={proc,sys,dev,usr,.pyenv,.venv,site-packages} "
              f"-e {_split(MARK_ID)} -e {_split(MARK_PATH)} "
              "/ 2>/dev/null | sort | tr '\\n' ' '")
    report = ('F=$(' + search + '); python -c "import json, sys; print(json.dumps({'
              "'schema_version': 1, 'verdict': 'comment', 'findings': [{'id': 'F1', "
              "'severity': 'low', 'path': 'calc.py', 'line': 1, 'end_line': 1, 'category': "
              "'other', 'scenario': 'search', 'evidence': 'found: ' + sys.argv[1] + ' end', "
              "'recommendation': 'none', 'blocking': False}]}))\" \"$F\" "
              '> "$WFBENCH_REVIEW_DIR/review.json"')
    decoy = f'echo {_split(MARK_ID)} > "$HOME/decoy.txt"'
    suite = review_suite(pytester.path, tasks=[task], arms=["gold", "noop", "thief"],
                         arm_definitions={"thief": script_arm(decoy, report)})
    junit = suite.root / "junit.xml"
    result = pytester.runpytest_subprocess(*suite.args(f"--junitxml={junit}", "-rA", "-v"))
    result.assert_outcomes(passed=1, failed=1, xfailed=1)
    thief = suite.row("review-clamp-thief-r1")
    assert thief["review_scored"] is True and thief["error_kind"] == "oracle-failed"
    artifacts = suite.out / "artifacts"
    evidence = json.loads((artifacts / "review-clamp-thief-r1.review.json").read_text())[
        "findings"][0]["evidence"]
    # The search ran and reached the arm's own files; it found the decoy only.
    assert evidence == "found: /home/wfbench/decoy.txt  end", evidence
    # gold's review holds the labels (the test can see them) ...
    gold = (artifacts / "review-clamp-gold-r1.review.json").read_text()
    assert reveals_labels(gold) == [MARK_ID, MARK_PATH, "lines"]
    # ... and nothing else does: rows, report, junit, every other artifact, the terminal.
    outputs = [path for path in suite.out.rglob("*") if path.is_file()] + [junit]
    assert suite.out / "results.jsonl" in outputs and suite.out / "report.md" in outputs
    for path in outputs:
        if path.name != "review-clamp-gold-r1.review.json":
            assert reveals_labels(path.read_text(errors="replace")) == [], path
    assert reveals_labels(result.stdout.str() + result.stderr.str()) == []
    # Rows keep counts: gold matched both labels, the thief none.
    assert suite.row("review-clamp-gold-r1")["review"]["tp"] == 2
    assert (thief["review"]["labels"], thief["review"]["tp"]) == (2, 0)


def test_the_labels_are_part_of_the_oracle_digest(pytester: pytest.Pytester) -> None:
    low = {**BUG_LABEL, "severity": "low"}
    tasks = [review_task("same-a"), review_task("same-b"), review_task("other", findings=[low])]
    suite = review_suite(pytester.path, tasks=tasks, arms=["gold"])
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=3)
    digests = {task["id"]: suite.row(f"{task['id']}-gold-r1")["oracle_digest"] for task in tasks}
    assert digests["same-a"] == digests["same-b"] != digests["other"]
    loaded = {task.id: task for task in load_task_file(suite.task_file).tasks}
    labels = loaded["other"].oracle.review
    assert labels is not None
    expected = hashlib.sha256(f"{EMPTY_DIGEST}:{labels.digest}".encode()).hexdigest()
    assert OracleSnapshot.capture(loaded["other"]).digest == expected


# --- pure parts of the glue ---------------------------------------------------------------


def test_the_review_text_states_the_change_the_folder_and_no_label() -> None:
    text = review_task_text("Add clamp().\n", "/workspace", "/review")
    assert text.startswith("Review the change in the repository at /workspace.")
    assert "Add clamp()." in text and "    /review/review.json" in text
    assert "The JSON Schema:" in text


def test_write_attempts_are_the_file_tools_aimed_at_the_workspace() -> None:
    uses: list[dict[str, Any]] = [
        {"name": "Write", "input": {"file_path": "/review/review.json", "content": "{}"}},
        {"name": "Edit", "input": {"file_path": "/workspace/calc.py", "old_string": "a"}},
        {"name": "Write", "input": {"file_path": "notes.md", "content": "x"}},
        {"name": "NotebookEdit", "input": {"notebook_path": "/workspace/../workspace/n.ipynb"}},
        {"name": "Write", "input": {"file_path": "/tmp/scratch.txt"}},
        {"name": "Write", "input": {"file_path": "/workspace-other/x"}},
        {"name": "Bash", "input": {"command": "sed -i s/a/b/ calc.py"}},
        {"name": "Edit", "input": "not an object"},
    ]
    assert workspace_write_attempts(uses, "/workspace") == [
        "Edit /workspace/calc.py", "Write /workspace/notes.md",
        "NotebookEdit /workspace/n.ipynb"]


def test_arms_that_must_change_code_skip_review_tasks_and_review_arms_skip_change_tasks(
    tmp_path: Path
) -> None:
    suite = review_suite(tmp_path, tasks=[review_task(), task_yaml()])
    task_file = load_task_file(suite.task_file)
    known = definitions(task_file)
    review, change = task_file.tasks

    def reason(arm: str, task: Any) -> str | None:
        return Cell(task, known[arm], 1, "calc").skip_reason(False)

    assert reason("workflow", review) == ("arm 'workflow' has phases that must change the "
                                          "workspace; task 'review-clamp' is a review task "
                                          "(its workspace is read-only)")
    assert reason("workflow_direct", review) is not None
    assert reason("review", change) == ("arm 'review' reviews a change; task 'fix-add' is not "
                                        "a review task")
    assert reason("ce_review", change) is not None
    for arm in ("gold", "noop", "review", "review_baseline", "ce_review", "baseline"):
        assert reason(arm, review) is None, arm
    assert reason("baseline", change) is None and reason("gold", change) is None
    assert Cell(review, known["noop"], 1, "calc").noop_resolves is False


def test_the_planted_bug_is_where_its_label_says() -> None:
    lines = CLAMP.splitlines()
    assert lines[BUG_LINES[0] - 1].strip() == "if x > high:"
    assert lines[BUG_LINES[1] - 1].strip() == "return low"
