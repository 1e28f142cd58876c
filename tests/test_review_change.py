"""What a change under review touches (review.change), and whether it applies."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_wfbench.review.change import (
    Change,
    ChangedFile,
    ChangeError,
    check_change_applies,
    merge_ranges,
    parse_change,
)
from pytest_wfbench.tasks import Task, load_task_file

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO = REPO_ROOT / "tasks" / "demo.yaml"
TEXTSTATS = REPO_ROOT / "tasks" / "repos" / "textstats"


def _patch(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


MODIFY = _patch("""
    diff --git a/pkg/core.py b/pkg/core.py
    index 1111111..2222222 100644
    --- a/pkg/core.py
    +++ b/pkg/core.py
    @@ -10,6 +10,7 @@ def f():
     a
     b
    -c
    +C
    +D
     e
     f
     g
    @@ -40,6 +41,5 @@ def g():
     h
     i
    -j
     k
     l
     m
    """)


def test_added_and_removed_lines_give_new_file_ranges() -> None:
    change = parse_change(MODIFY)
    (changed,) = change.files
    assert (changed.path, changed.old_path, changed.status) == ("pkg/core.py", "pkg/core.py",
                                                                "modified")
    # First hunk: C and D are new lines 12 and 13. Second hunk starts at new line
    # 41 (h, i at 41, 42); j was removed between new lines 42 and 43.
    assert changed.ranges == ((12, 13), (42, 43))
    assert change.changed_ranges == {"pkg/core.py": ((12, 13), (42, 43))}
    assert change.paths == ("pkg/core.py",)


def test_a_line_that_looks_like_a_header_inside_a_hunk_is_content() -> None:
    patch = _patch("""
        diff --git a/notes.md b/notes.md
        --- a/notes.md
        +++ b/notes.md
        @@ -1,2 +1,3 @@
         title
        --- old rule
        +++ new rule
        +@@ not a hunk @@
         end
        """)
    (changed,) = parse_change(patch).files
    assert changed.ranges == ((2, 3),)


def test_added_deleted_and_renamed_files() -> None:
    patch = _patch("""
        diff --git a/new.py b/new.py
        new file mode 100644
        index 0000000..1111111
        --- /dev/null
        +++ b/new.py
        @@ -0,0 +1,3 @@
        +one
        +two
        +three
        diff --git a/gone.py b/gone.py
        deleted file mode 100644
        index 1111111..0000000
        --- a/gone.py
        +++ /dev/null
        @@ -1,2 +0,0 @@
        -x
        -y
        diff --git a/old name.py b/new name.py
        similarity index 90%
        rename from old name.py
        rename to new name.py
        --- a/old name.py
        +++ b/new name.py
        @@ -5,3 +5,3 @@
         p
        -q
        +Q
         r
        diff --git a/moved.txt b/elsewhere/moved.txt
        similarity index 100%
        rename from moved.txt
        rename to elsewhere/moved.txt
        """)
    change = parse_change(patch)
    assert [(f.path, f.old_path, f.status, f.ranges) for f in change.files] == [
        ("new.py", None, "added", ((1, 3),)),
        ("gone.py", "gone.py", "deleted", ((1, 2),)),  # a deleted file: its old lines
        ("new name.py", "old name.py", "renamed", ((6, 6),)),
        ("elsewhere/moved.txt", "moved.txt", "renamed", ()),
    ]
    assert change.paths == ("elsewhere/moved.txt", "gone.py", "moved.txt", "new name.py",
                            "new.py", "old name.py")


def test_binary_files_and_quoted_names() -> None:
    patch = _patch("""
        diff --git a/logo.png b/logo.png
        index 1111111..2222222 100644
        Binary files a/logo.png and b/logo.png differ
        diff --git "a/caf\\303\\251.txt" "b/caf\\303\\251.txt"
        --- "a/caf\\303\\251.txt"
        +++ "b/caf\\303\\251.txt"
        @@ -1 +1 @@
        -old
        +new
        """)
    logo, cafe = parse_change(patch).files
    assert (logo.path, logo.binary, logo.ranges) == ("logo.png", True, ())
    assert (cafe.path, cafe.ranges) == ("café.txt", ((1, 1),))


def test_plain_diff_u_output_with_timestamps() -> None:
    patch = _patch("""
        --- a/x.txt\t2024-01-01 00:00:00.000000000 +0000
        +++ b/x.txt\t2024-01-02 00:00:00.000000000 +0000
        @@ -1,3 +1,3 @@
         a
        -b
        +B
         c
        --- a/y.txt\t2024-01-01 00:00:00.000000000 +0000
        +++ b/y.txt\t2024-01-02 00:00:00.000000000 +0000
        @@ -3,0 +4 @@
        +tail
        """)
    x, y = parse_change(patch).files
    assert (x.path, x.ranges) == ("x.txt", ((2, 2),))
    assert (y.path, y.ranges) == ("y.txt", ((4, 4),))


def test_no_newline_marker_and_blank_context_lines() -> None:
    patch = "".join([
        "diff --git a/t b/t\n", "--- a/t\n", "+++ b/t\n", "@@ -1,3 +1,3 @@\n",
        " first\n",
        "\n",  # a blank context line whose leading space an editor removed
        "-last\n", "\\ No newline at end of file\n", "+last\n",
        "\\ No newline at end of file\n",
    ])
    (changed,) = parse_change(patch.encode()).files
    assert changed.ranges == ((3, 3),)


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ("", "no file header"),
        ("just some text\n", "no file header"),
        ("@@ -1 +1 @@\n-a\n+b\n", "a hunk before any file header"),
        ("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n", "ends before"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n*b\n", "unexpected line"),
        ("--- a/x\n+++ b/x\n@@ -1 +1,0 @@\n a\n", "more lines than its header says"),
        ("--- a/x\n+++ b/x\n@@ nonsense @@\n", "malformed hunk header"),
        ("--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n", "no directory component"),
    ],
    ids=["empty", "text", "hunk-first", "short-hunk", "bad-line", "counts", "bad-header",
         "p0-names"],
)
def test_malformed_patches_say_why(patch: str, reason: str) -> None:
    with pytest.raises(ChangeError, match=reason):
        parse_change(patch)


def test_merge_ranges_joins_overlapping_and_adjacent() -> None:
    assert merge_ranges([(5, 6), (1, 2), (3, 3), (10, 12), (11, 11)]) == ((1, 3), (5, 6),
                                                                          (10, 12))


def test_changed_ranges_merge_blocks_of_one_path() -> None:
    change = Change((ChangedFile("a", "a", "modified", ((1, 2),)),
                     ChangedFile("a", "a", "modified", ((3, 4), (9, 9)))))
    assert change.changed_ranges == {"a": ((1, 4), (9, 9))}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def _repo(tmp_path: Path, source: Path | None = None) -> Path:
    tree = tmp_path / "tree"
    if source is not None:
        shutil.copytree(source, tree)
    else:
        tree.mkdir()
        (tree / "pkg").mkdir()
        (tree / "pkg" / "core.py").write_text("".join(f"{n}\n" for n in "abcdefghijklm"))
    _git(tree, "init", "-q")
    _git(tree, "add", "-A")
    _git(tree, "commit", "-qm", "base")
    return tree


def test_a_change_that_applies_passes_the_check_and_changes_nothing(tmp_path: Path) -> None:
    tree = _repo(tmp_path)
    patch = _patch("""
        diff --git a/pkg/core.py b/pkg/core.py
        --- a/pkg/core.py
        +++ b/pkg/core.py
        @@ -2,3 +2,3 @@
         b
        -c
        +C
         d
        """).encode()
    before = (tree / "pkg" / "core.py").read_bytes()
    check_change_applies(tree, patch)
    assert (tree / "pkg" / "core.py").read_bytes() == before


def test_a_change_that_does_not_apply_gives_gits_reason(tmp_path: Path) -> None:
    tree = _repo(tmp_path)
    patch = _patch("""
        diff --git a/pkg/core.py b/pkg/core.py
        --- a/pkg/core.py
        +++ b/pkg/core.py
        @@ -2,3 +2,3 @@
         b
        -not what the file has
        +C
         d
        """).encode()
    with pytest.raises(ChangeError, match=r"(?s)does not apply: .*patch does not apply"):
        check_change_applies(tree, patch)


def _demo_review_tasks() -> list[Task]:
    return [task for task in load_task_file(DEMO).tasks if task.is_review]


def test_demo_review_changes_parse_and_apply_to_textstats(tmp_path: Path) -> None:
    tree = _repo(tmp_path, TEXTSTATS)
    tasks = _demo_review_tasks()
    assert [task.id for task in tasks] == ["review-stop-words", "review-top-words-doc"]
    for task in tasks:
        assert task.change is not None
        check_change_applies(tree, task.change.read_bytes())
        assert set(parse_change(task.change.read_bytes()).paths) == {
            "tests/test_core.py", "textstats/core.py"}


def test_demo_planted_bug_label_points_into_its_change(tmp_path: Path) -> None:
    (task, _) = _demo_review_tasks()
    assert task.change is not None and task.oracle.review is not None
    changed = parse_change(task.change.read_bytes()).changed_ranges
    (label,) = task.oracle.review.findings
    assert any(start <= label.line and label.end_line <= end
               for start, end in changed[label.path])
    # The labelled lines are what the label says: the stop words, not lower-cased.
    tree = _repo(tmp_path, TEXTSTATS)
    _git(tree, "apply", str(task.change))
    patched = (tree / label.path).read_text().splitlines()
    assert patched[label.line - 1].strip() == "ignored = set(stop_words)"
    assert "not in ignored" in patched[label.end_line - 1]


def _zero_context_ranges(diff: str) -> tuple[tuple[int, int], ...]:
    """Changed ranges read independently from ``git diff -U0`` hunk headers: added
    lines are the header's new range; a removal-only hunk (``+c,0``) sits after
    new line c."""
    ranges = []
    for line in diff.splitlines():
        if line.startswith("@@ "):
            new = line.split(" ")[2][1:]
            start, _, count = new.partition(",")
            first, length = int(start), int(count) if count else 1
            if length:
                ranges.append((first, first + length - 1))
            else:
                ranges.append((max(first, 1), first + 1))
    return merge_ranges(ranges)


def test_ranges_agree_with_gits_zero_context_hunks(tmp_path: Path) -> None:
    import random

    generator = random.Random(20261101)
    tree = tmp_path / "tree"
    tree.mkdir()
    _git(tree, "init", "-q")
    target = tree / "f.txt"
    for case in range(25):
        old = [f"line {generator.randrange(8)}" for _ in range(generator.randrange(1, 40))]
        new = list(old)
        for _ in range(generator.randrange(1, 6)):
            position = generator.randrange(len(new) + 1)
            action = generator.choice(("insert", "delete", "replace"))
            if action == "insert" or not new:
                new[position:position] = [f"new {case}"] * generator.randrange(1, 4)
            elif action == "delete":
                del new[min(position, len(new) - 1):position + generator.randrange(1, 4)]
            else:
                new[min(position, len(new) - 1)] = f"changed {case}"
        target.write_text("".join(f"{line}\n" for line in old))
        _git(tree, "add", "-A")
        _git(tree, "commit", "-qm", f"case {case}", "--allow-empty")
        target.write_text("".join(f"{line}\n" for line in new))

        def diff(*args: str) -> str:
            return subprocess.run(["git", "diff", *args], cwd=tree, check=True,
                                  capture_output=True, text=True).stdout

        full = diff()
        if not full:
            continue
        (changed,) = parse_change(full).files
        assert changed.ranges == _zero_context_ranges(diff("-U0")), (case, full)


def _run_python(tree: Path, code: str) -> str:
    import sys

    result = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True,
                            text=True, check=True)
    return result.stdout.strip()


def test_demo_changes_pass_their_own_tests_and_the_planted_bug_is_real(tmp_path: Path) -> None:
    import sys

    bug, clean = _demo_review_tasks()
    for task in (bug, clean):
        assert task.change is not None
        tree = _repo(tmp_path / task.id, TEXTSTATS)
        _git(tree, "apply", str(task.change))
        # The change's own visible tests pass: nothing short of reviewing finds the bug.
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "tests/test_core.py"], cwd=tree, check=True, capture_output=True,
                       env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        if task is bug:
            # The docstring promises stop_words={"The"} leaves out "the"; it does not.
            assert _run_python(tree, "import textstats; print(textstats.top_words("
                               "'The the cat', n=1, stop_words={'The'}))") == "['the']"
        else:
            assert _run_python(tree, "import textstats; print(textstats.top_words("
                               "'b a b', n=5))") == "['b', 'a']"
