"""Templates are sanitized, and the sanitizing is checked on the real object store."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_wfbench.sandbox import SandboxPolicy, make_sandbox
from pytest_wfbench.tasks import load_task_file
from pytest_wfbench.workspace.template import (
    TemplateCache,
    TemplateError,
    check_sanitized,
    snapshot_directory,
)
from tests.conftest import task_yaml, write_suite


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo),
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def test_clone_object_store_holds_no_hidden_blob_and_no_later_commit(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    repo = suite.root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    hidden_blob = git(repo, "rev-parse", "HEAD:tests/hidden/test_hidden.py")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(repo, "commit", "-qam", "later fix")
    later = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v1", "-m", "annotated")
    (repo / "wip.txt").write_text("wip\n")
    git(repo, "add", "wip.txt")
    git(repo, "stash", "-q")
    git(repo, "remote", "add", "origin", "https://example.invalid/r.git")
    text = suite.task_file.read_text().replace('"fix-add"', f'"fix-add", "ref": "{base[:10]}"')
    suite.task_file.write_text(text)
    task = load_task_file(suite.task_file).tasks[0]

    cache = TemplateCache(tmp_path / "work", make_sandbox(SandboxPolicy(), tmp_path / "sb",
                                                          unsafe_host=False))
    template = cache.get(task)
    assert template.base_sha == base
    clone = tmp_path / "clone"
    subprocess.run(["cp", "-a", str(template.path), str(clone)], check=True)

    objects = set(git(clone, "cat-file", "--batch-all-objects",
                      "--batch-check=%(objectname)").split())
    assert hidden_blob not in objects
    assert later not in objects and base not in objects
    commits = git(clone, "rev-list", "--all").split()
    assert len(commits) == 1 and commits[0] == template.sanitized_sha
    assert git(clone, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert git(clone, "tag", "-l") == "" and git(clone, "remote") == ""
    assert git(clone, "stash", "list") == ""
    assert not (clone / ".git" / "logs").exists()
    assert not (clone / "tests" / "hidden").exists()
    assert (template.hidden_store / "tests" / "hidden" / "test_hidden.py").exists()
    # the same task again is served from the cache, with the same identity
    assert cache.get(task) == template


def test_plain_directory_snapshot_is_deterministic(tmp_path: Path) -> None:
    source = tmp_path / "project"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "run.sh").write_text("#!/bin/sh\n")
    (source / "run.sh").chmod(0o755)
    first = snapshot_directory(source, tmp_path / "a.git")
    second = snapshot_directory(source, tmp_path / "b.git")
    assert first == second
    # fixed author, date and message: the commit's bytes are the same anywhere
    body = git(tmp_path / "a.git", "cat-file", "commit", first)
    assert "author wfbench <wfbench@localhost> 946684800 +0000" in body
    (source / "pkg" / "mod.py").write_text("x = 2\n")
    assert snapshot_directory(source, tmp_path / "c.git") != first


def test_check_sanitized_catches_a_leftover_object(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "f").write_text("visible\n")
    git(repo, "add", "f")
    git(repo, "commit", "-qm", "one")
    stray = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                           input="hidden content\n", capture_output=True, text=True,
                           check=True).stdout.strip()
    with pytest.raises(TemplateError, match="unreachable objects"):
        check_sanitized(repo, {stray})


def test_missing_hidden_path_is_a_template_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", tasks=[task_yaml(oracle={
        "command": "true", "hidden_paths": ["no/such/dir"]})])
    task = load_task_file(suite.task_file).tasks[0]
    cache = TemplateCache(tmp_path / "work", make_sandbox(SandboxPolicy(), tmp_path / "sb",
                                                          unsafe_host=False))
    with pytest.raises(TemplateError, match="hidden path 'no/such/dir' does not exist"):
        cache.get(task)
