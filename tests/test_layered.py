"""Layered workspaces (an overlay whose lower layer is the template): they judge
and show exactly what a copied workspace does, whatever the arm does to its
tree, and no arm can write the template or speak to the judges' overlay."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

from pytest_wfbench.sandbox.overlay import OPAQUE_XATTR, is_whiteout, make_opaque, make_whiteout
from pytest_wfbench.workspace.layers import JudgedTree, materialize
from pytest_wfbench.workspace.template import tree_digest
from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]

# What the arm does to its tree: every way an entry can change kind or vanish.
MIXED = r"""
sed -i 's/a - b/a + b/' calc.py
rm -rf docs && mkdir docs && echo new > docs/c.txt
rm data/x.txt
rm -rf pkg && echo 'now a file' > pkg
rm note && mkdir note && echo inner > note/inner.txt
ln -s calc.py link
mv old new
chmod +x run.sh
mkfifo pipe
mkdir .pytest_cache && echo cached > .pytest_cache/v
mkdir -p fresh/deep && echo deep > fresh/deep/f.txt
# Names the mount folder gives the layers, its mount point and its failure file:
# they mean nothing in the workspace (the overlay is mounted where no arm reaches)
ln -s / l0 && ln -s /tmp rw && mkdir ws && echo planted > ws/f && ln -s /etc/passwd failed
python - <<'EOF'
import os
# overlayfs's own attributes, set through the merged tree: they must speak to no overlay
for path, name in [("calc.py", "user.overlay.whiteout"), ("docs", "user.overlay.opaque"),
                   ("new", "user.overlay.redirect"), ("keep", "user.overlay.opaque")]:
    try:
        os.setxattr(path, name, b"x" if "opaque" in name else b"y")
    except OSError:
        pass
EOF
"""
# The oracle checks the merged tree as the arm left it (less what the capture
# leaves out: special files and caches) and that add() is fixed.
LAYOUT_ORACLE = r'''
import os
import stat
from pathlib import Path

from calc import add

W = Path(os.environ["WFBENCH_JUDGE_WORKSPACE"])


def test_add():
    assert add(2, 3) == 5


def test_the_tree_is_the_one_the_arm_left():
    assert sorted(p.name for p in (W / "docs").iterdir()) == ["c.txt"]
    assert not (W / "data" / "x.txt").exists() and (W / "data" / "y.txt").is_file()
    assert (W / "pkg").is_file() and (W / "pkg").read_text() == "now a file\n"
    assert (W / "note" / "inner.txt").read_text() == "inner\n"
    assert os.readlink(W / "link") == "calc.py"
    assert not (W / "old").exists()
    assert sorted(p.name for p in (W / "new").iterdir()) == ["o1.txt", "o2.txt"]
    assert (W / "run.sh").stat().st_mode & stat.S_IXUSR
    assert not (W / "pipe").exists() and not (W / ".pytest_cache").exists()
    assert (W / "fresh" / "deep" / "f.txt").read_text() == "deep\n"
    assert os.readlink(W / "l0") == "/" and os.readlink(W / "failed") == "/etc/passwd"
    assert (W / "ws" / "f").read_text() == "planted\n"
    assert sorted(p.name for p in (W / "keep").iterdir()) == ["k.txt"]
'''


def layout_suite(suite_factory: SuiteFactory) -> Suite:
    expect = ["$WFBENCH_ORACLE_DIR/test_oracle.py::test_add",
              "$WFBENCH_ORACLE_DIR/test_oracle.py::test_the_tree_is_the_one_the_arm_left"]
    task = task_yaml(verify="true", oracle={"command": "python -m pytest -q $WFBENCH_ORACLE_DIR",
                                            "files": "oracle/", "expect": expect})
    suite = suite_factory(tasks=[task], arms=["mixed"],
                          arm_definitions={"mixed": script_arm(MIXED)})
    repo = suite.root / "repo"
    for relative, text in {"docs/a.txt": "a\n", "docs/b.txt": "b\n", "data/x.txt": "x\n",
                           "data/y.txt": "y\n", "pkg/__init__.py": "", "pkg/m.py": "M = 1\n",
                           "note": "a note\n", "old/o1.txt": "1\n", "old/o2.txt": "2\n",
                           "run.sh": "echo run\n", "keep/k.txt": "k\n"}.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    (suite.root / "oracle" / "test_oracle.py").write_text(LAYOUT_ORACLE)
    return suite


def test_a_layered_workspace_judges_and_shows_what_a_copied_one_does(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = layout_suite(suite_factory)
    rows, patches = {}, {}
    for method in ("overlay", "copy"):
        suite.out = suite.root / f"out-{method}"
        result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", method))
        result.assert_outcomes(passed=1)
        rows[method] = suite.row("fix-add-mixed-r1")
        patches[method] = (suite.out / "artifacts" / "fix-add-mixed-r1.patch").read_text()
    assert rows["overlay"]["clone"] == "overlay" and rows["copy"]["clone"] == "copy"
    assert patches["overlay"] == patches["copy"]
    for key in ("diff_files", "diff_insertions", "diff_deletions", "evidence_notes",
                "oracle_passed", "suspicious"):
        assert rows["overlay"][key] == rows["copy"][key], key
    patch = patches["overlay"]
    assert "deleted file mode 100644" in patch and "docs/a.txt" in patch
    assert "special file not copied: pipe" in patch
    assert "old mode 100644\nnew mode 100755" in patch


def test_no_arm_writes_the_template_and_the_sandbox_sees_no_layer_paths(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Overlayfs writes the upper layer only and no layer is in the sandbox; the
    mount table names the layers by links relative to the cell's mount folder
    (no host path)."""
    probe = """
        cat /proc/self/mountinfo > mounts.txt
        chmod -R 000 . 2>/dev/null; chmod 755 .; chmod -R u+rwX . 2>/dev/null
        for f in $(find . -type f -not -path './.git/*'); do echo tampered >> "$f"; done
        git -c user.name=x -c user.email=x@x commit -qam tampered
    """
    suite = suite_factory(arms=["tamper"], arm_definitions={"tamper": script_arm(probe)})
    cache = Path(os.environ["WFBENCH_CACHE_DIR"]) / "templates" / "templates"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", "overlay"))
    result.assert_outcomes(failed=1)
    row = suite.row("fix-add-tamper-r1")
    assert row["clone"] == "overlay" and row["error_kind"] == "verify-failed"
    # Other tests' sweeps share the cache: only this suite's built templates count.
    own = (suite.root / "repo" / "calc.py").read_text()
    templates = [p for p in cache.iterdir() if p.is_dir() and not p.name.endswith(".building")
                 and (p.parent / f"{p.name}.json").is_file() and (p / "calc.py").is_file()
                 and (p / "calc.py").read_text() == own]
    assert templates, "the template is gone or was written"
    for template in templates:
        meta = json.loads((template.parent / f"{template.name}.json").read_text())
        assert tree_digest(template) == meta["tree_digest"]
    mounts = (suite.out / "artifacts" / "fix-add-tamper-r1.patch").read_text()
    assert "lowerdir=" in mounts and str(cache) not in mounts and "/templates/" not in mounts


def test_a_judged_layer_reads_and_changes_as_the_merged_tree(tmp_path: Path) -> None:
    lower = tmp_path / "lower"
    for relative, text in {"a/conftest.py": "base\n", "a/b/x.txt": "x\n", "c.txt": "c\n",
                           "d/e.txt": "e\n"}.items():
        (lower / relative).parent.mkdir(parents=True, exist_ok=True)
        (lower / relative).write_text(text)
    layer = tmp_path / "layer"
    (layer / "a").mkdir(parents=True)
    fd = os.open(layer, os.O_RDONLY)
    try:
        make_whiteout("c.txt", fd)  # the arm deleted c.txt
        make_whiteout("d", fd)  # and d/
    finally:
        os.close(fd)
    (layer / "a" / "conftest.py").write_text("planted\n")
    tree = JudgedTree(layer, lower)
    assert tree.read_regular(PurePosixPath("a/conftest.py"), 100) == b"planted\n"
    assert tree.read_regular(PurePosixPath("a/b/x.txt"), 100) == b"x\n"
    assert tree.locate(PurePosixPath("c.txt")) is None
    assert tree.locate(PurePosixPath("d/e.txt")) is None
    assert tree.named(frozenset({"conftest.py", "e.txt"})) == {"a/conftest.py"}
    # Putting back the base's file under a deleted folder makes it an opaque folder.
    tree.write_file(PurePosixPath("d/conftest.py"), b"base\n")
    assert os.getxattr(layer / "d", OPAQUE_XATTR) == b"y"
    assert tree.locate(PurePosixPath("d/e.txt")) is None
    # Removing a base file leaves a whiteout; removing the planted one, the base's shows.
    assert tree.remove_entry(PurePosixPath("a/b/x.txt"))
    assert is_whiteout(os.lstat(layer / "a" / "b" / "x.txt"))
    assert tree.remove_entry(PurePosixPath("a/conftest.py"))
    assert is_whiteout(os.lstat(layer / "a" / "conftest.py"))
    assert tree.locate(PurePosixPath("a/conftest.py")) is None
    out = tmp_path / "merged"
    materialize(tree, out)
    found = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert found == ["d/conftest.py"]


def test_an_opaque_layer_folder_hides_the_lower_one(tmp_path: Path) -> None:
    lower, layer = tmp_path / "lower", tmp_path / "layer"
    (lower / "k").mkdir(parents=True)
    (lower / "k" / "old.txt").write_text("old\n")
    (layer / "k").mkdir(parents=True)
    (layer / "k" / "new.txt").write_text("new\n")
    fd = os.open(layer / "k", os.O_RDONLY | os.O_DIRECTORY)
    try:
        make_opaque(fd)
    finally:
        os.close(fd)
    tree = JudgedTree(layer, lower)
    assert tree.locate(PurePosixPath("k/old.txt")) is None
    assert tree.read_regular(PurePosixPath("k/new.txt"), 10) == b"new\n"
    out = tmp_path / "merged"
    materialize(tree, out)
    assert sorted(p.name for p in (out / "k").iterdir()) == ["new.txt"]
    assert not stat.S_ISCHR(os.lstat(out / "k" / "new.txt").st_mode)


def test_layers_are_used_only_where_asked_and_possible(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", "copy"))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["wfbench clones: copies (--wfbench-clone copy)"])
    assert suite.row("fix-add-gold-r1")["clone"] == "copy"


@pytest.mark.parametrize("method", ["overlay", "copy"])
def test_kept_workspaces_are_whole_trees_and_the_terminal_says_where(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, method: str
) -> None:
    suite = suite_factory(arms=["gold"])
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-keep-workspaces",
                                                       "--wfbench-clone", method))
    result.assert_outcomes(passed=1)
    row = suite.row("fix-add-gold-r1")
    kept = Path(row["kept_workspace"])
    result.stdout.fnmatch_lines(["wfbench: workspaces kept (work dir *):",
                                 f"  fix-add-gold-r1: {kept}"])
    try:
        assert "return a + b" in (kept / "calc.py").read_text()
        assert (kept / "tests" / "test_visible.py").is_file()
        assert not (kept / "tests" / "hidden").exists()
    finally:
        work_dir = kept.parents[2]
        assert work_dir.name.startswith("wfbench-")
        subprocess.run(["rm", "-rf", str(work_dir)], check=True)


BREAK_MOUNTS = '''
import pytest

import pytest_wfbench.sandbox.overlay as overlay


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    # After the sweep chose layered clones: every later mount fails.
    overlay.MOUNT_OPTIONS += ",bogus"
'''


def test_layers_that_do_not_mount_are_the_machines_failure_and_a_fake_is_not(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """A mount failure is written where no command of the arm reaches, so only a
    real one makes an infra error: an arm that prints the same and exits 125 is
    judged as usual."""
    fake = "echo 'wfbench: overlay: cannot bind the upper layer' >&2; exit 125"
    suite = suite_factory(arms=["faker"], arm_definitions={"faker": script_arm(fake)})
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", "overlay"))
    result.assert_outcomes(failed=1)
    row = suite.row("fix-add-faker-r1")
    assert row["error_kind"] == "oracle-failed" and row["counted"] is True
    pytester.makeconftest(BREAK_MOUNTS)
    suite.out = suite.root / "out-broken"
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", "overlay"))
    result.assert_outcomes(errors=1)
    row = suite.row("fix-add-faker-r1")
    assert row["error_kind"] == "infra-error" and row["counted"] is False
    assert "the workspace's layers did not mount" in row["error_detail"]
