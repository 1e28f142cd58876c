"""Red-team round 4, layered workspaces and the capture: what an arm leaves in
an overlay's upper layer must show in the patch as the oracle judges it, judge
as a copied workspace does, and cost the harness no more than it cost the arm."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Suite, script_arm, task_yaml

SuiteFactory = Callable[..., Suite]
FIX = "sed -i 's/a - b/a + b/' calc.py"
MIB = 1 << 20


def patch_of(suite: Suite, cell_id: str) -> str:
    return (suite.out / "artifacts" / f"{cell_id}.patch").read_text(errors="replace")


def remove_kept(kept: Path) -> None:
    work_dir = kept.parents[2]
    assert work_dir.name.startswith("wfbench-")
    subprocess.run(["rm", "-rf", str(work_dir)], check=True)


def test_a_sparse_file_costs_the_capture_no_more_disk_than_it_cost_the_arm(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """A file that claims hundreds of MiB but holds six bytes: the capture used
    to write every zero of it to the host (4 GiB per cell, within the disk
    limit, for an arm that used a few KiB). It keeps the holes now, and still
    digests the whole content for the evidence."""
    size, middle = 300 * MIB, 150 * MIB
    arm = script_arm(f"{FIX} && truncate -s {size} big.bin && printf middle | "
                     f"dd of=big.bin bs=1M seek={middle // MIB} conv=notrunc status=none")
    suite = suite_factory(arms=["sparse"], arm_definitions={"sparse": arm})
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-keep-workspaces"))
    result.assert_outcomes(passed=1)
    row = suite.row("fix-add-sparse-r1")
    kept = Path(row["kept_workspace"])
    try:
        captured = [p / "big.bin" for p in kept.parent.iterdir() if p.name.startswith("final-")]
        assert len(captured) == 1
        info = os.stat(captured[0])
        assert info.st_size == size and info.st_blocks * 512 < MIB
        with captured[0].open("rb") as stream:
            stream.seek(middle)
            assert stream.read(6) == b"middle"
    finally:
        remove_kept(kept)
    digest = hashlib.sha256()
    zeros = bytes(MIB)
    for _ in range(middle // MIB):
        digest.update(zeros)
    digest.update(b"middle" + bytes(MIB - 6))
    for _ in range((size - middle) // MIB - 1):
        digest.update(zeros)
    assert (f"large file added, summarized: big.bin ({size:,} bytes, sha256 "
            f"{digest.hexdigest()})") in row["evidence_notes"]


def test_large_files_show_the_same_in_the_patch_whether_the_workspace_is_layered_or_copied(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """Files over 1 MiB are summarized by the notes, not diffed. A layered patch
    used to show a large base file the arm only touched as deleted (the oracle
    judged it there); a copied patch hid the deletion of a folder's files when a
    large file took the folder's place."""
    arms = {"toucher": f"{FIX} && touch blob.bin",
            "grower": f"{FIX} && head -c {2 * MIB} /dev/zero > blob.bin",
            "flattener": f"{FIX} && rm -rf docs && head -c {2 * MIB} /dev/zero > docs"}
    suite = suite_factory(arms=list(arms),
                          arm_definitions={name: script_arm(step) for name, step in arms.items()})
    repo = suite.root / "repo"
    (repo / "blob.bin").write_bytes(os.urandom(2 * MIB))
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.txt").write_text("a guide\n")
    rows, patches = {}, {}
    for method in ("overlay", "copy"):
        suite.out = suite.root / f"out-{method}"
        result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", method))
        result.assert_outcomes(passed=3)
        for arm in arms:
            cell = f"fix-add-{arm}-r1"
            rows[method, arm] = suite.row(cell)
            patches[method, arm] = patch_of(suite, cell)
    for arm in arms:
        assert patches["overlay", arm] == patches["copy", arm], arm
        for key in ("diff_files", "diff_insertions", "diff_deletions", "evidence_notes"):
            assert rows["overlay", arm][key] == rows["copy", arm][key], (arm, key)
    assert "blob.bin" not in patches["overlay", "toucher"]
    assert rows["overlay", "toucher"]["diff_files"] == 1
    assert "deleted file" not in patches["overlay", "grower"]
    assert "large file changed, summarized: blob.bin" in patches["overlay", "grower"]
    flattened = patches["copy", "flattener"]
    assert "diff --git a/docs/guide.txt b/docs/guide.txt\ndeleted file mode 100644" in flattened
    assert "large file added, summarized: docs" in flattened


@pytest.mark.parametrize("method", ["overlay", "copy"])
def test_a_special_file_at_a_hidden_path_judges_as_in_a_copied_workspace(
    pytester: pytest.Pytester, suite_factory: SuiteFactory, method: str
) -> None:
    """The capture leaves a FIFO out, as a whiteout in a layer; the hidden path
    the oracle gets back there used to collide with that whiteout (the right fix
    then was a counted evidence-tampered in a layered workspace only)."""
    arm = script_arm(f"{FIX} && mkfifo tests/hidden")
    suite = suite_factory(arms=["fifo"], arm_definitions={"fifo": arm})
    result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", method))
    result.assert_outcomes(passed=1)
    row = suite.row("fix-add-fifo-r1")
    assert row["resolved"] is True and row["clone"] == method
    assert "special file not copied: tests/hidden" in row["evidence_notes"]


GIT_NAMES = r"""
mkdir .GIT && echo HIDDEN-PAYLOAD-1 > .GIT/p.txt
mkdir -p pkg/.Git && echo HIDDEN-PAYLOAD-2 > pkg/.Git/q.txt
ln -s calc.py .GITMODULES
mkdir 'git~1' && echo SHOWN-PAYLOAD-3 > 'git~1/r.txt'
mkdir '.git.' && echo SHOWN-PAYLOAD-4 > '.git./s.txt'
"""
NAMES_ORACLE = """
import os
from pathlib import Path

from calc import add

W = Path(os.environ["WFBENCH_JUDGE_WORKSPACE"])


def test_add():
    assert add(2, 3) == 5


def test_the_judged_tree_holds_what_the_patch_shows():
    assert not (W / ".GIT").exists() and not (W / "pkg" / ".Git").exists()
    assert not os.path.lexists(W / ".GITMODULES")
    assert (W / "git~1" / "r.txt").read_text() == "SHOWN-PAYLOAD-3\\n"
    assert (W / ".git." / "s.txt").read_text() == "SHOWN-PAYLOAD-4\\n"
"""


def test_names_git_refuses_are_left_out_of_the_judged_tree_and_said_in_the_patch(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    """git refuses ``.git`` in any case (and NTFS look-alikes such as ``git~1``
    by default): ``git update-index`` skipped them in silence, so a layered
    patch left out files the oracle judged; ``git add`` failed on them, so a
    copied cell was evidence-tampered (and a session error between an agent's
    phases). The capture leaves out what git refuses, the harness's git takes
    the look-alikes, and both clones judge what the patch shows."""
    expect = ["$WFBENCH_ORACLE_DIR/test_oracle.py::test_add",
              "$WFBENCH_ORACLE_DIR/test_oracle.py::test_the_judged_tree_holds_what_the_patch_shows"]
    task = task_yaml(verify="true", oracle={"command": "python -m pytest -q $WFBENCH_ORACLE_DIR",
                                            "files": "oracle/", "expect": expect})
    arm = script_arm(FIX, GIT_NAMES)
    suite = suite_factory(tasks=[task], arms=["names"], arm_definitions={"names": arm})
    (suite.root / "repo" / "pkg").mkdir()
    (suite.root / "repo" / "pkg" / "m.py").write_text("M = 1\n")
    (suite.root / "oracle" / "test_oracle.py").write_text(NAMES_ORACLE)
    rows, patches = {}, {}
    for method in ("overlay", "copy"):
        suite.out = suite.root / f"out-{method}"
        result = pytester.runpytest_subprocess(*suite.args("--wfbench-clone", method))
        result.assert_outcomes(passed=1)
        rows[method] = suite.row("fix-add-names-r1")
        patches[method] = patch_of(suite, "fix-add-names-r1")
    assert patches["overlay"] == patches["copy"]
    assert rows["overlay"]["evidence_notes"] == rows["copy"]["evidence_notes"]
    patch = patches["overlay"]
    assert "+SHOWN-PAYLOAD-3" in patch and "+SHOWN-PAYLOAD-4" in patch
    assert "HIDDEN-PAYLOAD" not in patch
    for path in (".GIT", ".GITMODULES", "pkg/.Git"):
        assert (f"not copied, a name git cannot hold (the oracle did not see it): {path}"
                in rows["overlay"]["evidence_notes"])


def test_a_sparse_capture_digests_exactly_the_bytes_a_reader_sees(tmp_path: Path) -> None:
    from pytest_wfbench.workspace.capture import TreeBounds, capture_tree

    source = tmp_path / "source"
    source.mkdir()
    sparse = source / "sparse.bin"
    with sparse.open("wb") as out:
        out.write(b"head")
        out.seek(3 * MIB)
        out.write(b"middle" * 1000)
        out.seek(9 * MIB + 17)
        out.write(b"tail")
        out.truncate(12 * MIB + 5)  # ends in a hole
    (source / "dense.bin").write_bytes(os.urandom(2 * MIB + 3))
    capture = capture_tree(source, tmp_path / "captured", TreeBounds())
    for large in capture.large_files:
        content = (source / large.path).read_bytes()
        assert (tmp_path / "captured" / large.path).read_bytes() == content
        assert large.sha256 == hashlib.sha256(content).hexdigest()
        git = subprocess.run(["git", "hash-object", str(source / large.path)], check=True,
                             capture_output=True, text=True).stdout.strip()
        assert large.git_blob == git
    assert sorted(f.path for f in capture.large_files) == ["dense.bin", "sparse.bin"]
    assert os.stat(tmp_path / "captured" / "sparse.bin").st_blocks * 512 < 2 * MIB
