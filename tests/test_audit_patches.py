"""Reading a gold patch as file sections and rendering one file's change anew,
checked against real git: what git writes is read back, and what is rendered,
``git apply`` takes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_wfbench.audit.arms import arm_slug, patch_arm, unique_arm_names
from pytest_wfbench.audit.patches import (
    assemble,
    looks_like_test,
    quote,
    render_file_diff,
    split_patch,
    unquote,
)

GOLD_DIR = Path(__file__).resolve().parent.parent / "tasks" / "gold"


def git(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "core.quotePath=true", *args], input=stdin,
                          capture_output=True, check=False)


def make_repo(path: Path, files: dict[str, bytes | str]) -> Path:
    """A git repository holding ``files``, committed."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    write_files(path, files)
    git(path, "add", "-A")
    assert git(path, "commit", "-qm", "base").returncode == 0
    return path


def write_files(root: Path, files: dict[str, bytes | str]) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode())


def git_patch(tmp_path: Path, base: dict[str, bytes | str], gold: dict[str, bytes | str | None],
              ) -> str:
    """The patch git writes from ``base`` to ``gold`` (None: the file is deleted)."""
    repo = make_repo(tmp_path / "patch-source", base)
    for name, content in gold.items():
        if content is None:
            (repo / name).unlink()
    write_files(repo, {name: content for name, content in gold.items() if content is not None})
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "--binary", "-M", "HEAD").stdout.decode()


def apply_to(tmp_path: Path, base: dict[str, bytes | str], patch: str, name: str = "apply",
             ) -> Path:
    """A fresh repository of ``base`` with ``patch`` applied by ``git apply``."""
    repo = make_repo(tmp_path / name, base)
    result = git(repo, "apply", "--whitespace=nowarn", "-", stdin=patch.encode())
    assert result.returncode == 0, result.stderr.decode() + patch
    return repo


def test_the_demo_gold_patches_split_into_their_files_and_added_lines() -> None:
    patch = (GOLD_DIR / "add-median.patch").read_text()
    sections = split_patch(patch)
    assert [s.path for s in sections] == ["tests/test_core.py", "textstats/__init__.py",
                                          "textstats/core.py"]
    assert all(s.old_path == s.new_path for s in sections)
    core = sections[2]
    # "+import statistics" is new line 3; median_word_length and two blank lines, 25 to 32.
    assert core.added_lines == frozenset({3, *range(25, 33)})
    assert sections[0].added_lines == frozenset({28, 29, 30, 31})
    assert "".join(s.text for s in sections) == patch
    for gold in sorted(GOLD_DIR.glob("*.patch")):
        assert assemble(split_patch(gold.read_text()), {}, {}) == gold.read_text()


def test_sections_of_added_deleted_renamed_binary_and_odd_files(tmp_path: Path) -> None:
    base: dict[str, bytes | str] = {
        "keep.py": "a = 1\n", "gone.py": "b = 2\n", "old name.py": "c = 3\n" * 20,
        "blob.bin": b"\x00\x01" * 50, "caf\u00e9.py": "d = 4\n",
    }
    gold: dict[str, bytes | str | None] = {
        "keep.py": "a = 1\n--- not a header\n+++ nor this\n", "gone.py": None,
        "old name.py": None, "new name.py": "c = 3\n" * 20 + "e = 5\n",
        "blob.bin": b"\x00\x02" * 50, "caf\u00e9.py": "d = 44", "added.py": "f = 6\n",
    }
    patch = git_patch(tmp_path, base, gold)
    sections = {s.path: s for s in split_patch(patch)}
    assert set(sections) == {"keep.py", "gone.py", "new name.py", "blob.bin", "caf\u00e9.py",
                             "added.py"}
    assert sections["keep.py"].added_lines == frozenset({2, 3})
    assert sections["gone.py"].new_path is None and sections["gone.py"].old_path == "gone.py"
    assert sections["added.py"].old_path is None
    renamed = sections["new name.py"]
    assert renamed.old_path == "old name.py" and renamed.added_lines == frozenset({21})
    assert sections["blob.bin"].binary and not sections["keep.py"].binary
    assert sections["caf\u00e9.py"].added_lines == frozenset({1})
    # Re-rendering every text file from its texts gives a patch git applies to the same tree.
    texts = {path: content for path, content in gold.items() if isinstance(content, str)}
    bases = {path: content for path, content in base.items() if isinstance(content, str)}
    replaced = {path: text for path, text in texts.items() if path in sections}
    repo = apply_to(tmp_path, base, assemble(list(sections.values()), replaced, bases))
    for path, content in gold.items():
        if content is None:
            assert not (repo / path).exists(), path
        else:
            expected = content if isinstance(content, bytes) else content.encode()
            assert (repo / path).read_bytes() == expected, path


def test_a_plain_diff_u_patch_is_read_too(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "m.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b" / "m.py").write_text("x = 1\ny = 3\n")
    patch = subprocess.run(["diff", "-u", "a/m.py", "b/m.py"], cwd=tmp_path, text=True,
                           capture_output=True, check=False).stdout
    assert "\t" in patch.splitlines()[0]  # diff -u writes the date after a tab
    [section] = split_patch("notes before the patch\n" + patch)
    assert section.old_path == section.new_path == "m.py"
    assert section.added_lines == frozenset({2})


def test_rendered_diffs_apply_for_every_kind_of_change(tmp_path: Path) -> None:
    cases = [
        ("edit.py", "edit.py", "a\nb\nc\n", "a\nB\nc\n"),
        ("no-newline.py", "no-newline.py", "a\nb", "a\nc"),
        ("gains-newline.py", "gains-newline.py", "a", "a\n"),
        ("crlf.py", "crlf.py", "a\r\nb\r\n", "a\r\nbb\r\n"),
        (None, "new dir/new.py", "", "made\n"),
        ("dropped.py", None, "bye\n", ""),
        ("sp\u00e4ce \"q\".py", "sp\u00e4ce \"q\".py", "x\f = 1\n", "x\f = 2\n"),
    ]
    base = {old: before for old, _, before, _ in cases if old is not None}
    patch = "".join(render_file_diff(old, new, before, after) for old, new, before, after in cases)
    repo = apply_to(tmp_path, dict(base), patch)
    for old, new, _, after in cases:
        if new is None:
            assert old is not None and not (repo / old).exists()
        else:
            assert (repo / new).read_bytes() == after.encode(), new
    assert render_file_diff("same.py", "same.py", "x\n", "x\n") == ""


def test_quoting_round_trips_and_test_paths_are_recognized() -> None:
    for path in ("plain/path.py", "with space.py", "caf\u00e9.py", 'q"uote\\.py', "tab\t.py"):
        assert unquote(quote(path)) == path
    assert quote("plain/path.py") == "plain/path.py"
    for path in ("tests/test_x.py", "pkg/tests/helpers.py", "test_x.py", "pkg/x_test.py",
                 "conftest.py", "sub/conftest.py", "test/data.json"):
        assert looks_like_test(path), path
    for path in ("pkg/core.py", "testing_utils.py", "contest.py", "pkg/tester.py"):
        assert not looks_like_test(path), path


@pytest.mark.parametrize("gold", sorted(GOLD_DIR.glob("*.patch")), ids=lambda p: p.stem)
def test_the_demo_gold_patches_apply_as_re_rendered(tmp_path: Path, gold: Path) -> None:
    """Every Python file of a demo gold patch, rendered anew from its texts,
    applies to the demo repository and gives the gold tree."""
    repo_files = Path(__file__).resolve().parent.parent / "tasks" / "repos" / "textstats"
    base = {str(p.relative_to(repo_files)): p.read_text() for p in repo_files.rglob("*.py")}
    goldtree = apply_to(tmp_path, dict(base), gold.read_text(), "gold")
    sections = split_patch(gold.read_text())
    replaced = {s.path: (goldtree / s.path).read_text() for s in sections}
    again = apply_to(tmp_path, dict(base), assemble(sections, replaced, base), "again")
    for section in sections:
        assert (again / section.path).read_text() == replaced[section.path]


def test_a_patch_arm_applies_its_patch_with_bash(tmp_path: Path) -> None:
    base: dict[str, bytes | str] = {"m.py": "x = 1\n"}
    # Lines that would end a plain heredoc, or look like shell, are data here.
    gold: dict[str, bytes | str | None] = {"m.py": "x = 1\nWFBENCH_PATCH\n$(rm -rf /)\n'\"\n"}
    patch = git_patch(tmp_path, dict(base), gold)
    arm = patch_arm("probe-x", patch, "a probe")
    assert arm.kind == "script" and len(arm.steps) == 1 and arm.description == "a probe"
    repo = make_repo(tmp_path / "arm", dict(base))
    result = subprocess.run(["bash", "-c", arm.steps[0]], cwd=repo, capture_output=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    assert (repo / "m.py").read_text() == gold["m.py"]
    again = subprocess.run(["bash", "-c", arm.steps[0]], cwd=repo, capture_output=True,
                           check=False)
    assert again.returncode != 0  # a patch that does not apply fails the step


def test_arm_names_are_valid_bounded_and_unique() -> None:
    assert arm_slug("probe-const-none:pkg/core.py:Box.<locals>.f") == \
        "probe-const-none-pkg-core.py-box.-locals-.f"
    long_a, long_b = "m:" + "a" * 300 + "1", "m:" + "a" * 300 + "2"
    assert len(arm_slug(long_a)) <= 80 and arm_slug(long_a) != arm_slug(long_b)
    assert unique_arm_names(["A:x", "a/x", "b"]) == ["a-x", "a-x-2", "b"]
