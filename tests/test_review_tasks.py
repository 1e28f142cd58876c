"""Review tasks in task files (tasks.review): what the loader accepts, its errors,
and the labels' digest. Agreement with the JSON Schema is in test_schema.py."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pytest_wfbench.tasks import ReviewLabel, ReviewLabels, TaskFileError, load_task_file

PATCH = """\
diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -1,2 +1,2 @@
 def f(x):
-    return x
+    return -x
"""


def _suite(tmp_path: Path, task: str, *, patch: str = PATCH) -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    (tmp_path / "change.patch").write_text(patch, encoding="utf-8")
    path = tmp_path / "suite.yaml"
    path.write_text("version: 1\nrepo: repo\ntasks:\n" + textwrap.indent(
        textwrap.dedent(task).strip("\n"), "  ") + "\n", encoding="utf-8")
    return path


REVIEW = """
- id: r1
  kind: review
  prompt: Negate f.
  change: change.patch
  oracle:
    findings:
      - id: negation
        path: a.py
        line: 2
        severity: high
        category: correctness
        blocking: true
    verdict: request_changes
"""


def _error(tmp_path: Path, task: str, **kwargs: str) -> TaskFileError:
    with pytest.raises(TaskFileError) as info:
        load_task_file(_suite(tmp_path, task, **kwargs))
    return info.value


def test_a_review_task_loads_with_its_labels(tmp_path: Path) -> None:
    (task,) = load_task_file(_suite(tmp_path, REVIEW)).tasks
    assert task.is_review and task.change == tmp_path / "change.patch"
    assert task.oracle.review == ReviewLabels(
        (ReviewLabel("a.py", 2, 2, "high", "correctness", True, "negation"),),
        "request_changes")
    assert (task.oracle.files, task.oracle.hidden_paths, task.oracle.expect) == (None, (), None)


def test_errors_name_file_line_task_and_field(tmp_path: Path) -> None:
    error = _error(tmp_path, REVIEW.replace("line: 2", "line: 2\n        end_line: 1"))
    assert str(error) == (f"{tmp_path / 'suite.yaml'}:13: task 'r1': field "
                          "'oracle.findings[0].end_line': end_line 1 is before line 2")
    assert (error.line, error.task, error.field) == (13, "r1", "oracle.findings[0].end_line")


def test_hints_for_keys_of_the_other_kind(tmp_path: Path) -> None:
    error = _error(tmp_path, REVIEW + "  verify: pytest\n")
    assert error.field == "verify" and "no verify command" in str(error)
    error = _error(tmp_path, REVIEW.replace("    verdict:", "    command: pytest\n    verdict:"))
    assert error.field == "oracle.command" and "its labels" in str(error)
    change_task = """
        - id: c1
          prompt: p
          verify: "true"
          change: change.patch
          oracle: {command: "true"}
        """
    error = _error(tmp_path, change_task)
    assert error.field == "change" and "only a review task (kind: review)" in str(error)


def test_duplicate_label_ids(tmp_path: Path) -> None:
    twice = REVIEW.replace("    verdict:", textwrap.indent(textwrap.dedent("""\
          - id: negation
            path: a.py
            line: 1
            severity: low
            category: tests
            blocking: false
        """), "      ") + "    verdict:")
    error = _error(tmp_path, twice)
    assert error.field == "oracle.findings[1].id" and "already used by findings[0]" in str(error)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("missing.patch", "does not exist"),
        ("../outside.patch", "escapes the task file's folder"),
        ("repo", "is not a file"),
        ("notes.txt", "is not a patch: not a unified diff"),
    ],
    ids=["missing", "outside", "folder", "not-a-patch"],
)
def test_bad_change_files(tmp_path: Path, change: str, message: str) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    (tmp_path / "outside.patch").write_text(PATCH)
    (folder / "notes.txt").write_text("no diff here\n")
    error = _error(folder, REVIEW.replace("change: change.patch", f"change: {change}"))
    assert error.field == "change" and message in str(error)
    assert error.line == 7


def test_a_malformed_change_names_the_patch_line(tmp_path: Path) -> None:
    error = _error(tmp_path, REVIEW, patch=PATCH.replace("@@ -1,2 +1,2 @@", "@@ -1,3 +1,2 @@"))
    assert error.field == "change" and "line 4: the hunk ends before" in str(error)


def test_kind_change_is_the_default_and_may_be_written(tmp_path: Path) -> None:
    task = """
        - id: c1
          kind: change
          prompt: p
          verify: "true"
          oracle: {command: "true"}
        """
    (loaded,) = load_task_file(_suite(tmp_path, task)).tasks
    assert (loaded.kind, loaded.is_review, loaded.oracle.review) == ("change", False, None)


def test_the_label_digest_ignores_formatting_and_sees_every_field(tmp_path: Path) -> None:
    (task,) = load_task_file(_suite(tmp_path, REVIEW)).tasks
    flow = """
        - id: r1
          kind: review
          change: change.patch
          prompt: Negate f.
          oracle: {verdict: request_changes, findings: [{blocking: true, category: correctness,
                   severity: high, line: 2, end_line: 2, path: a.py, id: negation}]}
        """
    (tmp_path / "other").mkdir()
    (reformatted,) = load_task_file(_suite(tmp_path / "other", flow)).tasks
    labels = task.oracle.review
    assert labels is not None and reformatted.oracle.review is not None
    assert reformatted.oracle.review.digest == labels.digest
    assert len(labels.digest) == 64 and labels.digest == labels.digest.lower()
    (label,) = labels.findings
    variants = [
        dataclasses.replace(labels, verdict="comment"),
        dataclasses.replace(labels, findings=()),
        *(dataclasses.replace(labels, findings=(changed,))
          for changed in [dataclasses.replace(label, path="b.py"),
                          dataclasses.replace(label, line=1),
                          dataclasses.replace(label, end_line=3),
                          dataclasses.replace(label, severity="low"),
                          dataclasses.replace(label, category="tests"),
                          dataclasses.replace(label, blocking=False),
                          dataclasses.replace(label, id=None)]),
    ]
    digests = {variant.digest for variant in variants}
    assert len(digests) == len(variants) and labels.digest not in digests
