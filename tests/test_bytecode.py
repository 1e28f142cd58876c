"""The judges' trusted bytecode: built once per machine by the harness, read-only
in the sandbox, never stale, never from the workspace."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_wfbench.judge import bytecode
from tests.conftest import Suite, task_yaml

SuiteFactory = Callable[..., Suite]
PROBE = ("python -c \"import json, os, sys; "
         "assert sys.pycache_prefix == '/opt/wfbench/bytecode', sys.pycache_prefix; "
         "assert json.__cached__.startswith(sys.pycache_prefix); "
         "assert os.path.isfile(json.__cached__), json.__cached__\" && "
         "python -m pytest -q -p no:cacheprovider tests")


def test_judges_load_the_trusted_bytecode_tree_which_outlives_the_sweep(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml(verify=PROBE)], arms=["gold"])
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=1)
    assert suite.row("fix-add-gold-r1")["authored_tests_passed"] is True
    trees = [p for p in (Path(os.environ["WFBENCH_CACHE_DIR"]) / "bytecode").iterdir()
             if (p / bytecode.COMPLETE).exists()]
    assert trees
    built = {tree: (tree / bytecode.COMPLETE).stat().st_ino for tree in trees}
    suite.out = suite.root / "out-2"
    pytester.runpytest_subprocess(*suite.args()).assert_outcomes(passed=1)
    # The second sweep reused the tree (a rebuild renames a new one into place).
    assert {tree: (tree / bytecode.COMPLETE).stat().st_ino for tree in built} == built


def test_without_a_cache_dir_judges_compile_privately(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    probe = ("python -c \"import sys; assert sys.pycache_prefix == '/tmp/wfbench-judge-pycache'\""
             " && python -m pytest -q -p no:cacheprovider tests")
    suite = suite_factory(tasks=[task_yaml(verify=probe)], arms=["gold"])
    pytester.runpytest_subprocess(*suite.args("--wfbench-cache-dir", "none")).assert_outcomes(
        passed=1)


def test_a_source_changed_after_caching_is_never_served_stale_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "lib"
    library.mkdir()
    module = library / "trusted_mod.py"
    module.write_text("VALUE = 'cached'\n")
    monkeypatch.setattr(bytecode, "source_roots", lambda: [library])
    tree = bytecode.ensure_bytecode(tmp_path / "cache")
    cached = list(tree.rglob("trusted_mod*.pyc"))
    assert len(cached) == 1
    assert bytecode.ensure_bytecode(tmp_path / "cache") == tree  # built once

    def load() -> str:
        return subprocess.run(
            [sys.executable, "-c", "import trusted_mod; print(trusted_mod.VALUE)"],
            env={**os.environ, "PYTHONPATH": str(library), "PYTHONPYCACHEPREFIX": str(tree),
                 "PYTHONDONTWRITEBYTECODE": "1"},
            capture_output=True, text=True, check=True).stdout.strip()

    assert load() == "cached"
    module.write_text("VALUE = 'changed after caching'\n")
    os.utime(module, (time.time() + 5, time.time() + 5))
    assert load() == "changed after caching"
    assert list(tree.rglob("trusted_mod*.pyc")) == cached  # nothing written


def test_old_trees_are_evicted_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = tmp_path / "lib"
    library.mkdir()
    (library / "m.py").write_text("X = 1\n")
    monkeypatch.setattr(bytecode, "source_roots", lambda: [library])
    trees = []
    for index in range(bytecode.KEEP + 2):
        monkeypatch.setattr(bytecode, "tree_key", lambda roots, i=index: f"key{i}")
        trees.append(bytecode.ensure_bytecode(tmp_path / "cache"))
        os.utime(trees[-1] / bytecode.COMPLETE, (1000 + index, 1000 + index))
    kept = sorted(p.name for p in (tmp_path / "cache" / "bytecode").iterdir() if p.is_dir())
    assert kept == [f"key{i}" for i in range(2, bytecode.KEEP + 2)]


def test_the_tree_key_is_of_the_installed_content_not_only_the_versions(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    info = site / "foo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n")
    (info / "RECORD").write_text("foo/__init__.py,sha256=AAAA,10\n")
    before = bytecode.tree_key([site])
    assert bytecode.tree_key([site]) == before
    (info / "RECORD").write_text("foo/__init__.py,sha256=BBBB,10\n")  # reinstalled, same version
    assert bytecode.tree_key([site]) != before


def test_a_worker_takes_the_controllers_tree_only_for_its_own_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    tree = cache / "bytecode" / "k1"
    tree.mkdir(parents=True)
    given = bytecode.handover(tree)
    assert bytecode.handed_over(cache, given) is None  # not complete: being built, or removed
    (tree / bytecode.COMPLETE).write_text("")
    assert bytecode.handed_over(cache, given) == tree
    assert bytecode.handed_over(cache, None) is None
    assert bytecode.handed_over(tmp_path / "other-cache", given) is None
    assert bytecode.handed_over(cache, {**given, "path": str(tmp_path)}) is None
    assert bytecode.handed_over(cache, {**given, "roots": [str(tmp_path)]}) is None
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert bytecode.handed_over(cache, given) is None  # --tx popen//python=...: keys its own


def test_workers_of_a_sweep_judge_with_the_tree_the_controller_found(
    pytester: pytest.Pytester, suite_factory: SuiteFactory
) -> None:
    suite = suite_factory(tasks=[task_yaml("t0", verify=PROBE), task_yaml("t1", verify=PROBE)],
                          arms=["gold"])
    pytester.runpytest_subprocess(*suite.args("-n", "2")).assert_outcomes(passed=2)
    assert all(row["authored_tests_passed"] for row in suite.rows())
